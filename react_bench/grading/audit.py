"""The grader's own checks (``scripts/audit.py``), after the Agentic Benchmark Checklist (Zhu et
al. 2025): agents that need no model, run against the task's own scoring and the rule tier.

- **null**: an empty answer and "unknown" must score 0 under every metric, the rules and (with
  ``judge=<name>``: the agents' answers asked of it beforehand, ``judge_triples``) the judge.
- **oracle**: the gold as the answer must score 100. A gold that fails its own grader (empty,
  punctuation only, lost in normalisation: an F1 of 0 against itself) is listed as a data defect,
  with its id; the oracle's figure is then 100 less those.
- **candidates**: an answer that lists every candidate entity of the question's pages (its
  supporting pages' titles) and the gold among them must not be credited by the rules (nor the
  judge, with ``judge=``).
- **isolation**: gold answers found verbatim (normalised, whole words, 4 characters or more) in the
  prompt's instruction or exemplars.
- **duplicates**: questions that normalise to the same text within the split.
- **study** (over run folders): questions every run fails while some run's answer is a near miss
  under the rules (label-error candidates, each run's answer beside the gold), and questions every
  run passes.

A check passes (``ok``) when it finds nothing; each names what it found. The grader is a parameter
(``Grader``): a test plants a defective one and the check must find it.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.grading.rules import rules_verdict
from react_bench.metrics import normalize_answer

Grader = Callable[[str, str], Mapping[str, float]]  # (prediction, gold) -> metric -> score (1: right)
NULL_ANSWERS = ("", "unknown")
LISTED = 20  # ids shown per finding in audit.md (audit.json has them all)


@dataclass(frozen=True)
class Item:
    """One example as the audit reads it."""

    id: str
    question: str
    gold: str
    candidates: tuple[str, ...] = ()


def grader_of(task: Any, judged: Mapping[tuple[str, str], Any] | None = None) -> Grader:
    """The task's own metrics, the rule tier (``rules``: 1 when CORRECT) and, where ``judged`` is
    given ((gold, prediction) -> the judge's verdict, asked beforehand: ``judge_triples``), the judge
    (``judge``: 1 when CORRECT; an empty answer is NOT_ATTEMPTED without a call, as in a run)."""

    def grade(prediction: str, gold: str) -> dict[str, float]:
        scores = {k: float(v) for k, v in task.score(prediction, gold).items() if k in task.info.metrics}
        if task.info.grounded_answers:
            scores["rules"] = float(rules_verdict(prediction, gold) == "CORRECT")
        if judged is not None:
            verdict = "NOT_ATTEMPTED" if not normalize_answer(prediction) else judged.get((gold, prediction))
            scores["judge"] = float(verdict == "CORRECT")
        return scores

    return grade


def judge_triples(items: Sequence[Item]) -> list[tuple[str, str, str]]:
    """(question, gold, prediction) the judge is asked for the audit's agents: "unknown" (null), the
    gold itself (oracle: sent, as ``judge.all=true`` would) and the list of every candidate."""
    out = []
    for item in items:
        out += [(item.question, item.gold, "unknown"), (item.question, item.gold, item.gold)]
        if item.candidates and normalize_answer(item.gold) not in ("yes", "no", ""):
            out.append((item.question, item.gold, candidates_answer(item)))
    return out


def items_of(examples: Iterable[Any]) -> list[Item]:
    out = []
    for e in examples:
        titles = e.metadata.get("supporting_titles")
        if isinstance(titles, str):  # kept as the text of a Python list
            try:
                titles = ast.literal_eval(titles)
            except (ValueError, SyntaxError):
                titles = ()
        out.append(Item(e.id, e.question, e.gold, tuple(str(t) for t in titles or ())))
    return out


def _mean(values: Sequence[float]) -> float:
    return 100.0 * sum(values) / len(values) if values else 0.0


def null_check(items: Sequence[Item], grade: Grader) -> dict[str, Any]:
    scores: dict[str, dict[str, float]] = {}
    credited: list[str] = []
    for answer in NULL_ANSWERS:
        per: dict[str, list[float]] = defaultdict(list)
        for item in items:
            for name, value in grade(answer, item.gold).items():
                per[name].append(value)
                if value > 0 and len(credited) < 1000:
                    credited.append(f"{item.id} ({answer!r}: {name})")
        scores[answer or "<empty>"] = {name: _mean(v) for name, v in per.items()}
    ok = all(v == 0 for by in scores.values() for v in by.values())
    return {"check": "null", "ok": ok, "scores": scores, "credited": credited}


def oracle_check(items: Sequence[Item], grade: Grader) -> dict[str, Any]:
    per: dict[str, list[float]] = defaultdict(list)
    defects: list[dict[str, str]] = []
    for item in items:
        scores = grade(item.gold, item.gold)
        for name, value in scores.items():
            per[name].append(value)
        failed = sorted(n for n, v in scores.items() if v < 1)
        if failed:
            defects.append({"id": item.id, "gold": item.gold, "fails": ", ".join(failed)})
    scores = {name: _mean(v) for name, v in per.items()}
    expected = _mean([0.0] * len(defects) + [1.0] * (len(items) - len(defects)))
    return {"check": "oracle", "ok": not defects, "scores": scores, "expected": expected, "defective_golds": defects}


def candidates_answer(item: Item) -> str:
    """Every candidate of the question's pages, the gold among them."""
    names = [*item.candidates, item.gold] if item.gold not in item.candidates else list(item.candidates)
    return ", ".join(dict.fromkeys(names))


def candidates_check(items: Sequence[Item], grade: Grader) -> dict[str, Any]:
    credited: list[dict[str, str]] = []
    tried = 0
    for item in items:
        if not item.candidates or normalize_answer(item.gold) in ("yes", "no", ""):
            continue
        tried += 1
        answer = candidates_answer(item)
        scores = grade(answer, item.gold)
        hit = sorted(n for n in ("em", "rules", "judge") if scores.get(n, 0) > 0)
        if hit:
            credited.append({"id": item.id, "answer": answer, "gold": item.gold, "credited_by": ", ".join(hit)})
    return {"check": "candidates", "ok": not credited, "tried": tried, "credited": credited}


def isolation_check(items: Sequence[Item], prompt_text: str) -> dict[str, Any]:
    seen = f" {normalize_answer(prompt_text)} "
    found = []
    for item in items:
        gold = normalize_answer(item.gold)
        if len(gold) >= 4 and gold not in ("yes", "no") and f" {gold} " in seen:
            found.append({"id": item.id, "gold": item.gold})
    return {"check": "isolation", "ok": not found, "in_prompt": found}


def duplicates_check(items: Sequence[Item]) -> dict[str, Any]:
    by_text: dict[str, list[str]] = defaultdict(list)
    for item in items:
        by_text[normalize_answer(item.question)].append(item.id)
    groups = [ids for ids in by_text.values() if len(ids) > 1]
    return {"check": "duplicates", "ok": not groups, "groups": groups}


def study_check(runs: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, Any]:
    """Over the records of a study's runs (name -> records) of one task: label-error candidates and
    the questions every run passes."""
    answers: dict[str, dict[str, str]] = defaultdict(dict)
    gold: dict[str, str] = {}
    right: dict[str, list[bool]] = defaultdict(list)
    for name, records in runs.items():
        for record in records:
            key = str(record["id"])
            answers[key][name] = str(record.get("prediction") or "")
            gold[key] = str(record.get("gold") or "")
            right[key].append(bool(record.get("correct")))
    every_run = [k for k, v in right.items() if len(v) == len(runs)]
    candidates = []
    for key in every_run:
        if any(right[key]):
            continue
        if any(rules_verdict(a, gold[key]) == "CORRECT" for a in answers[key].values()):
            candidates.append({"id": key, "gold": gold[key], "answers": answers[key]})
    passed = [k for k in every_run if all(right[k])]
    return {
        "check": "study",
        "ok": True,  # what it finds is for reading, not a failure of the grader
        "runs": list(runs),
        "questions": len(every_run),
        "label_error_candidates": candidates,
        "every_run_passes": passed,
    }


def run_records(runs: Sequence[Path]) -> dict[str, Iterable[Mapping[str, Any]]]:
    """Run folders as ``study_check`` reads them, each named by its path from the runs' common folder."""
    import os

    from react_bench.results import iter_records

    common = Path(os.path.commonpath([str(r) for r in runs])) if len(runs) > 1 else runs[0].parent
    return {str(r.relative_to(common)): iter_records(r) for r in runs}


def audit(
    items: Sequence[Item],
    grade: Grader,
    prompt_text: str | None,
    runs: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    checks = [null_check(items, grade), oracle_check(items, grade), candidates_check(items, grade)]
    if prompt_text is not None:
        checks.append(isolation_check(items, prompt_text))
    checks.append(duplicates_check(items))
    if runs:
        checks.append(study_check(runs))
    return {
        "n": len(items),
        "ok": all(c["ok"] for c in checks),
        "checks": {c["check"]: c for c in checks},
    }


def markdown(report: Mapping[str, Any], title: str) -> str:
    lines = [f"# Grader audit: {title}", "", f"{report['n']} examples; every check passes: {report['ok']}", ""]
    lines += ["| check | ok | what it found |", "|---|---|---|"]
    for name, c in report["checks"].items():
        lines.append(f"| {name} | {'yes' if c['ok'] else 'NO'} | {_found(c)} |")
    for name, c in report["checks"].items():
        rows = _rows(c)
        if rows:
            lines += ["", f"## {name}", "", *[f"- {r}" for r in rows[:LISTED]]]
            if len(rows) > LISTED:
                lines.append(f"- ... {len(rows) - LISTED} more in audit.json")
    return "\n".join(lines) + "\n"


def _found(c: Mapping[str, Any]) -> str:
    name = c["check"]
    if name == "null":
        return "; ".join(f"{a}: " + ", ".join(f"{m} {v:.1f}" for m, v in s.items()) for a, s in c["scores"].items())
    if name == "oracle":
        figures = ", ".join(f"{m} {v:.1f}" for m, v in c["scores"].items())
        return f"{figures}; {len(c['defective_golds'])} defective gold(s)"
    if name == "candidates":
        return f"{len(c['credited'])} of {c['tried']} answers listing every candidate credited"
    if name == "isolation":
        return f"{len(c['in_prompt'])} gold answer(s) in the prompt"
    if name == "duplicates":
        return f"{len(c['groups'])} group(s) of duplicate questions"
    return (
        f"{c['questions']} questions every run answered: {len(c['label_error_candidates'])} label-error "
        f"candidate(s), {len(c['every_run_passes'])} every run passes"
    )


def _rows(c: Mapping[str, Any]) -> list[str]:
    name = c["check"]
    if name == "null":
        return list(c["credited"])
    if name == "oracle":
        return [f"{d['id']}: gold {d['gold']!r} fails {d['fails']}" for d in c["defective_golds"]]
    if name == "candidates":
        return [
            f"{d['id']}: {d['answer']!r} credited by {d['credited_by']} (gold {d['gold']!r})" for d in c["credited"]
        ]
    if name == "isolation":
        return [f"{d['id']}: gold {d['gold']!r}" for d in c["in_prompt"]]
    if name == "duplicates":
        return [", ".join(g) for g in c["groups"]]
    return [f"{d['id']}: gold {d['gold']!r}; answers {json.dumps(d['answers'])}" for d in c["label_error_candidates"]]
