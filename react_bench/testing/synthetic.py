"""A study of any size in the project's record format, for the study benchmark and the tests of
studies at scale: a real run's records copied round to ``n`` lines (``grow_run``), each with its
own id (``syn-000000`` ...) and the outcome it is given; run.json says ``n`` examples; no
metrics.json (every figure must come from the records, as for a run read while it is killed)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def synthetic_id(i: int) -> str:
    return f"syn-{i:06d}"


def grow_run(template: Path, out: Path, outcomes: Sequence[bool], run_id: str) -> int:
    """Write a run of ``len(outcomes)`` records at ``out`` from ``template``'s records; example i is
    right where ``outcomes[i]`` (its prediction the gold, or "not <gold>"). Returns the bytes written."""
    lines = [json.loads(line) for line in (template / "examples.jsonl").read_text(encoding="utf-8").splitlines()]
    if not lines:
        raise ValueError(f"{template}: no records to copy")
    n = len(outcomes)
    out.mkdir(parents=True)
    header = json.loads((template / "run.json").read_text(encoding="utf-8"))
    ids = [synthetic_id(i) for i in range(n)]
    header.update(run_id=run_id, n_examples=n, example_ids=ids)
    header["config"]["task"]["n"] = n
    (out / "run.json").write_text(json.dumps(header), encoding="utf-8")
    with (out / "examples.jsonl").open("w", encoding="utf-8") as f:
        for i, (example_id, correct) in enumerate(zip(ids, outcomes, strict=True)):
            record = dict(lines[i % len(lines)])
            record.update(
                id=example_id,
                epoch=1,
                question=f"{record['question']} (#{i})",
                prediction=record["gold"] if correct else f"not {record['gold']}",
                correct=bool(correct),
                em=float(correct),
                f1=float(correct),
            )
            f.write(json.dumps(record) + "\n")
    return (out / "examples.jsonl").stat().st_size
