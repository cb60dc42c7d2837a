"""The verdict files of a run folder and the judge's settings: what the run settings, the results
and the studies read of ``judge=`` without the judge itself (``grading.judge`` asks it). A floor
below ``results``: it knows the standard library and the provider-neutral types only."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError

JUDGE_FILE = "judged.jsonl"
RULES_FILE = "rules.jsonl"


@dataclass(frozen=True)
class JudgeSettings:
    """``judge.*`` of eval.yaml (``judge=<name>`` is ``judge.model=<name>``)."""

    model: str | None = None  # a configs/model/<name> | rules | None: no judge
    all: bool = False  # send exact-match hits too
    base_url: str | None = None  # the judge model's endpoint, where not its file's
    api_key_env: str | None = None  # the NAME of the variable holding its key, where not its file's

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> JudgeSettings:
        values = dict(values or {})
        model = values.get("model")
        return cls(
            model=None if model in (None, "", "none", "null") else str(model),
            all=bool(values.get("all") or False),
            base_url=None if values.get("base_url") is None else str(values["base_url"]),
            api_key_env=None if values.get("api_key_env") is None else str(values["api_key_env"]),
        )

    @property
    def kind(self) -> str | None:
        """``rules`` (the heuristic), ``judge`` (a model), or None."""
        if self.model is None:
            return None
        return "rules" if self.model == "rules" else "judge"

    @property
    def file(self) -> str:
        return RULES_FILE if self.kind == "rules" else JUDGE_FILE

    @property
    def metric(self) -> str:
        """Its score's name in metrics.json: ``rules`` (a heuristic) or ``judged``."""
        return "rules" if self.kind == "rules" else "judged"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "all": self.all, "base_url": self.base_url, "api_key_env": self.api_key_env}


def check_task(settings: JudgeSettings, info: Any) -> None:
    """A judge reads free-text answers (HotpotQA, synthwiki): one line for any other task."""
    if settings.kind is not None and not info.grounded_answers:
        raise ConfigError(
            f"judge={settings.model}: task={info.name} is scored by labels or rewards, not free text; "
            "a judge applies to hotpotqa and synthwiki"
        )


def verdict_lines(run_dir: Path, file: str = JUDGE_FILE) -> Iterator[dict[str, Any]]:
    path = Path(run_dir) / file
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:  # a line cut by a crash: that example is judged again
                continue
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                yield row


def verdicts(run_dir: Path, file: str = JUDGE_FILE) -> dict[tuple[str, int], dict[str, Any]]:
    """(id, epoch) -> its verdict line (the last, where a line was written twice)."""
    return {(row["id"], int(row.get("epoch") or 1)): row for row in verdict_lines(run_dir, file)}


def summary(records: Sequence[Mapping[str, Any]], lines: Mapping[tuple[str, int], Mapping[str, Any]]) -> dict[str, Any]:
    """The ``judge`` block of metrics.json over a run's records and their verdict lines."""
    counts = {"correct": 0, "accepted_misses": 0, "rejected_hits": 0, "unreadable": 0, "not_attempted": 0}
    unjudged, calls, spent = 0, 0, 0.0
    priced = True
    judge = model = prompt = None
    for record in records:
        row = lines.get((str(record["id"]), int(record.get("epoch") or 1)))
        if row is None:
            unjudged += 1
            continue
        verdict, em = row.get("verdict"), bool(row.get("em"))
        counts["correct"] += verdict == "CORRECT"
        counts["accepted_misses"] += verdict == "CORRECT" and not em
        counts["rejected_hits"] += em and verdict != "CORRECT"
        counts["unreadable"] += verdict is None
        counts["not_attempted"] += verdict == "NOT_ATTEMPTED"
        if row.get("by") == "judge":
            judge, model, prompt = row.get("judge"), row.get("model") or model, row.get("prompt_sha256")
            calls += not row.get("cached")
            if row.get("cost_usd") is None and not row.get("cached"):
                priced = False
            spent += float(row.get("cost_usd") or 0.0)
    return {
        **counts,
        "unjudged": unjudged,
        "judge": judge,
        "model": model,
        "prompt_sha256": prompt,
        "calls": calls,
        "cost_usd": spent if priced else None,
    }
