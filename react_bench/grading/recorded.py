"""The rule tier on recorded public runs this project did not make, read through their pinned files
(``upstream.json``; fetched on first use): Reflexion's text-davinci-003 HotpotQA log (its first
trial: the ReAct run, EM 34 of 100) and FireAct's two fine-tuned runs (GPT-3.5, Llama-2-13B). For
each: exact match as this project scores it, the rules' figure, and the answers they disagree on.
``python scripts/audit.py recorded=all`` writes it (docs/guide.md shows the figures).

Parsing is linear: the log is split once at its question blocks, each read with one search.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.grading.rules import rules_verdict
from react_bench.metrics import exact_match


@dataclass(frozen=True)
class Answered:
    id: str
    gold: str
    prediction: str


def read_reflexion_first_trial(path: Path) -> Iterator[Answered]:
    """Trial 1 of Reflexion's log: each episode ends at its ``Correct answer:`` line; its answer is
    the last ``Finish[...]`` before it (none: halted, ""). (An observation may hold a line that
    starts "Question: ", so episodes are cut at their gold lines, not at questions.)"""
    text = path.read_text(encoding="utf-8")
    first = text.split("BEGIN TRIAL 2", 1)[0]
    start, seen = 0, set[str]()
    for gold in re.finditer(r"^Correct answer: (.*)$", first, flags=re.MULTILINE):
        episode = first[start : gold.start()]
        start = gold.end()
        question = re.search(r"^Question: (.*)$", episode, flags=re.MULTILINE)
        key = question[1].strip() if question else f"#{len(seen)}"
        if key in seen:  # the log repeats 3 halted episodes of trial 1 (103 blocks, 100 questions)
            continue
        seen.add(key)
        finishes = re.findall(r"^Action \d+: Finish\[(.*)\]\s*$", episode, flags=re.MULTILINE)
        yield Answered(f"q{len(seen) - 1}", gold[1], finishes[-1] if finishes else "")


def read_fireact(path: Path) -> Iterator[Answered]:
    """FireAct's run files: ``{id: {"gt": gold, "pred": prediction, ...}}``."""
    for key, row in json.loads(path.read_text(encoding="utf-8")).items():
        yield Answered(str(key), str(row.get("gt") or ""), str(row.get("pred") or ""))


RECORDED: dict[str, tuple[str, Callable[[Path], Iterator[Answered]], str]] = {
    "reflexion-davinci003": (
        "reflexion/react_100x5.txt",
        read_reflexion_first_trial,
        "Reflexion's ReAct run (trial 1)",
    ),
    "fireact-gpt35ft": ("fireact/gpt35ft_500.json", read_fireact, "FireAct, fine-tuned GPT-3.5"),
    "fireact-llama2-13b": ("fireact/llama2_13b_500.json", read_fireact, "FireAct, fine-tuned Llama-2-13B"),
}


def rules_on(name: str) -> dict[str, Any]:
    from react_bench import upstream

    pinned, reader, title = RECORDED[name]
    rows = list(reader(upstream.fetch(pinned)))
    em = [bool(exact_match(r.prediction, r.gold)) for r in rows]
    verdicts = [rules_verdict(r.prediction, r.gold) for r in rows]
    accepted = [
        {"id": r.id, "prediction": r.prediction, "gold": r.gold}
        for r, hit, v in zip(rows, em, verdicts, strict=True)
        if v == "CORRECT" and not hit
    ]
    n = len(rows)
    return {
        "run": name,
        "title": title,
        "file": upstream.pinned(pinned).label,
        "n": n,
        "em": 100.0 * sum(em) / n if n else 0.0,
        "rules": 100.0 * sum(v == "CORRECT" for v in verdicts) / n if n else 0.0,
        "answered_misses": sum(1 for r, hit in zip(rows, em, strict=True) if not hit and r.prediction.strip()),
        "accepted_misses": accepted,
        "rejected_hits": sum(1 for hit, v in zip(em, verdicts, strict=True) if hit and v != "CORRECT"),
    }


def markdown(results: list[dict[str, Any]], shown: int = 8) -> str:
    lines = [
        "# The rule tier (a heuristic) on recorded public runs",
        "",
        "| run | file | n | EM | rules | answered misses | misses the rules accept | hits they reject |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['title']} | {r['file']} | {r['n']} | {r['em']:.1f} | {r['rules']:.1f} | {r['answered_misses']} | "
            f"{len(r['accepted_misses'])} | {r['rejected_hits']} |"
        )
    for r in results:
        lines += ["", f"## {r['title']}: misses the rules accept (first {shown})", ""]
        lines += [f"- {a['prediction']!r} for gold {a['gold']!r}" for a in r["accepted_misses"][:shown]]
    return "\n".join(lines) + "\n"
