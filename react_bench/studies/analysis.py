"""The paper's error analysis (Table 2): why ReAct and CoT succeed and fail on HotpotQA, by hand
and where it is decidable by rule.

Six labels, the paper's: of the successes, ``true_positive`` (correct reasoning and facts) and
``false_positive`` (a right answer from hallucinated reasoning or facts); of the failures,
``reasoning_error`` (a wrong step, repeating steps, or the answer not drawn from what was read),
``search_result_error`` (the searches never reached the pages that hold the answer),
``hallucination`` (facts from nowhere) and ``label_ambiguity`` (right, but not as the label
words it).

Automatic labels (``auto_label``), where a rule decides, in this order; each comes with its reason:
- a success is ``true_positive`` when its answer was read in some observation, else (an answer
  that no page the agent read says) ``false_positive``: a yes/no answer, which no page says,
  counts as read;
- a failure is ``label_ambiguity`` when the answer and the gold share words after the official
  normalisation (F1 > 0) or the words of one are all in the other; ``reasoning_error`` when an action repeats
  three times (a loop) or the gold was in an observation and the answer differs;
  ``search_result_error`` when no search reached a supporting page (HotpotQA names them:
  ``supporting_titles``; a search reached one when its entity is that title and it did not answer
  "Could not find"); ``hallucination`` when the answer occurs in no observation (a CoT run read
  none: every wrong CoT answer lands here, as in the paper); else ``reasoning_error``.

The workflow (``Annotation``): sample ``n`` successes and ``n`` failures of a run (seeded), show
each (question, gold, prediction, every thought, action and observation), take one label and a
note per example, keep them in ``annotations.jsonl`` (beside the run unless told otherwise) as
they come, so an unfinished annotation resumes where it stopped; then ``table2`` writes the
shares beside the paper's column, and ``agreement`` compares the human labels with the
automatic or a model judge's (``judge_label``: any model; its labels are recorded as the judge's).
``python scripts/annotate.py RUN_DIR`` is the terminal front end.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.methods.registry import find_method
from react_bench.metrics import f1_score, normalize_answer
from react_bench.record import ExampleRecord, RunHeader
from react_bench.results import iter_example_records

SUCCESS = ("true_positive", "false_positive")
FAILURE = ("reasoning_error", "search_result_error", "hallucination", "label_ambiguity")
LABELS = SUCCESS + FAILURE
# The paper's Table 2 (PaLM-540B, HotpotQA, 50 trajectories per cell, % of successes / failures)
PAPER_TABLE2: dict[str, dict[str, float | None]] = {
    "react": {
        "true_positive": 94,
        "false_positive": 6,
        "reasoning_error": 47,
        "search_result_error": 23,
        "hallucination": 0,
        "label_ambiguity": 29,
    },
    "cot": {
        "true_positive": 86,
        "false_positive": 14,
        "reasoning_error": 16,
        "search_result_error": None,
        "hallucination": 56,
        "label_ambiguity": 28,
    },
}
ANNOTATIONS = "annotations.jsonl"


def _observations(record: ExampleRecord) -> list[tuple[str, str, str]]:
    """(action name, its argument, observation) of every executed action, in order."""
    out = []
    for action in record.executed():
        argument = next(iter(action.arguments.values()), "") if action.arguments else ""
        name = action.name
        if action.text is not None and "[" in action.text:  # the text runner: search[Ed Wood]
            name, _, rest = action.text.strip().partition("[")
            argument = rest.rstrip("]")
        out.append((name.strip().lower(), str(argument), action.observation or ""))
    return out


def _read(answer: str, observations: Iterable[str]) -> bool:
    norm = normalize_answer(answer)
    return bool(norm) and any(f" {norm} " in f" {normalize_answer(o)} " for o in observations)


def auto_label(record: ExampleRecord) -> tuple[str, str]:
    """The record's label by rule, and why (the module docstring)."""
    seen = _observations(record)
    texts = [o for _, _, o in seen]
    answer, gold = record.prediction, record.gold
    if record.correct:
        if normalize_answer(answer) in ("yes", "no") or _read(answer, texts):
            return "true_positive", "the answer was read in an observation"
        return "false_positive", "right, but no observation says it"
    norm_a, norm_g = normalize_answer(answer), normalize_answer(gold)
    words_a, words_g = set(norm_a.split()), set(norm_g.split())
    if words_a and (f1_score(answer, gold) > 0 or words_a <= words_g or words_g <= words_a):
        return "label_ambiguity", "the answer and the gold share words"
    calls = [f"{n}[{a}]" for n, a, _ in seen]
    if any(calls.count(c) >= 3 for c in set(calls)):
        return "reasoning_error", "an action repeated three times (a loop)"
    if _read(gold, texts):
        return "reasoning_error", "the gold was in an observation; the answer differs"
    titles = {normalize_answer(t) for t in record.metadata.get("supporting_titles") or ()}
    searches = [(a, o) for n, a, o in seen if n == "search"]
    if (
        titles
        and searches
        and not any(normalize_answer(a) in titles and not o.startswith("Could not find") for a, o in searches)
    ):
        return "search_result_error", "no search reached a supporting page"
    if not _read(answer, texts):
        return "hallucination", "the answer occurs in no observation"
    return "reasoning_error", "the answer was read, but it is not the gold"


@dataclass(frozen=True)
class Label:
    id: str
    label: str
    note: str = ""
    by: str = "human"  # human | auto | judge:<model>

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "note": self.note, "by": self.by}


def sample(records: Sequence[ExampleRecord], n: int, seed: int = 0) -> list[ExampleRecord]:
    """``n`` successes and ``n`` failures (fewer where the run has fewer), drawn with ``seed``, in that order."""
    rng = random.Random(seed)
    right = [r for r in records if r.correct and r.epoch == 1]
    wrong = [r for r in records if not r.correct and r.epoch == 1 and r.reason != "error"]
    return rng.sample(right, min(n, len(right))) + rng.sample(wrong, min(n, len(wrong)))


def show(record: ExampleRecord) -> str:
    """What an annotator reads: the question, the gold, the answer, every step."""
    lines = [
        f"id: {record.id}",
        f"question: {record.question}",
        f"gold: {record.gold}",
        f"answer: {record.prediction} ({'right' if record.correct else 'wrong'})",
    ]
    for episode in record.trajectory:
        lines.append(f"-- {episode.route}")
        for step in episode.steps():
            lines.append(f"[{step.number}] {step.text}")
            lines += [f"    -> {(a.observation or '')[:400]}" for a in step.actions]
    return "\n".join(lines)


@dataclass
class Annotation:
    """One annotator's labels of a run's sample, kept in ``path`` line by line (resumable)."""

    run_dir: Path
    n: int = 50
    seed: int = 0
    path: Path | None = None
    labels: dict[str, Label] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        self.path = Path(self.path) if self.path is not None else self.run_dir / ANNOTATIONS
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    data = json.loads(line)
                    if data.get("by", "human") == "human":
                        self.labels[data["id"]] = Label(data["id"], data["label"], data.get("note", ""))

    @property
    def chosen(self) -> list[ExampleRecord]:
        return sample(list(iter_example_records(self.run_dir)), self.n, self.seed)

    def todo(self) -> list[ExampleRecord]:
        return [r for r in self.chosen if r.id not in self.labels]

    def record(self, example_id: str, label: str, note: str = "") -> Label:
        if label not in LABELS:
            raise ValueError(f"label {label!r}: one of {', '.join(LABELS)}")
        done = self.labels[example_id] = Label(example_id, label, note)
        assert self.path is not None
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(done.to_dict(), ensure_ascii=False) + "\n")
            f.flush()
        return done

    def run(self, ask: Callable[[ExampleRecord, str], tuple[str, str] | None]) -> int:
        """Ask for each unlabelled example (``ask(record, shown)`` gives (label, note), or None to
        stop); the answers are kept as they come. Returns how many were labelled."""
        count = 0
        for record in self.todo():
            answer = ask(record, show(record))
            if answer is None:
                break
            self.record(record.id, *answer)
            count += 1
        return count


def judge_label(record: ExampleRecord, model: Any) -> Label:
    """A model's label of the record (any ``ModelClient``): asked once, at temperature 0."""
    import asyncio

    from react_bench.models.base import ModelRequest, generate
    from react_bench.types import Message, TextBlock

    question = (
        "You label why a question-answering agent succeeded or failed, as in the ReAct paper's error "
        f"analysis. Labels: {', '.join(LABELS)}. Reply with the label alone.\n\n{show(record)}"
    )
    request = ModelRequest(messages=(Message("user", (TextBlock(question),)),), max_tokens=20, temperature=0.0)
    response = asyncio.run(generate(model, request))
    said = response.text.strip().lower()
    label = next((x for x in LABELS if x in said), "reasoning_error" if not record.correct else "true_positive")
    return Label(record.id, label, f"the judge said {response.text.strip()[:80]!r}", f"judge:{model.name}")


def agreement(a: Iterable[Label], b: Iterable[Label]) -> tuple[float | None, int]:
    """The share of examples both label alike, over those both labelled (None: none in common)."""
    left, right = {x.id: x.label for x in a}, {x.id: x.label for x in b}
    common = sorted(set(left) & set(right))
    if not common:
        return None, 0
    return sum(left[i] == right[i] for i in common) / len(common), len(common)


def shares(labels: Iterable[Label]) -> dict[str, float | None]:
    """Each label's share of its group (successes or failures), in %."""
    counts = Counter(x.label for x in labels)
    out: dict[str, float | None] = {}
    for group in (SUCCESS, FAILURE):
        total = sum(counts[x] for x in group)
        out.update({x: (100 * counts[x] / total if total else None) for x in group})
    return out


def table2(run_dir: Path, labels: Sequence[Label], auto: Sequence[Label] | None = None) -> str:
    """Table 2 of one run's labels (human, or automatic where none), the paper's column beside."""
    header = RunHeader.read(run_dir)
    method = find_method(header.mode)  # the paper's column: CoT's for a run whose first part reasons alone
    reasons = method is not None and method.spec.first in ("cot", "cot_sc")
    paper = PAPER_TABLE2.get("cot" if reasons else "react", {})
    ours = shares(labels)
    by = sorted({x.by for x in labels}) or ["none"]
    lines = [
        f"# Table 2: {header.mode}/{header.runner} {header.model_name} ({header.run_id})",
        "",
        f"Labels by {', '.join(by)}: {len(labels)} examples "
        f"({sum(x.label in SUCCESS for x in labels)} successes, {sum(x.label in FAILURE for x in labels)} failures).",
        "",
        f"| | label | this run (%) | paper, PaLM-540B {'CoT' if paper is PAPER_TABLE2['cot'] else 'ReAct'} (%) |",
        "|---|---|---|---|",
    ]
    for group, names in (("success", SUCCESS), ("failure", FAILURE)):
        for name in names:
            mine, theirs = ours[name], paper.get(name)
            lines.append(
                f"| {group} | {name} | {'-' if mine is None else f'{mine:.0f}'} | "
                f"{'-' if theirs is None else f'{theirs:.0f}'} |"
            )
    if auto is not None:
        share, n = agreement(labels, auto)
        if share is not None:
            lines += ["", f"Agreement with the automatic labels: {100 * share:.0f}% of {n} examples labelled by both."]
    return "\n".join(lines) + "\n"
