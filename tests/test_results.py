"""Run summaries: metrics from examples.jsonl alone, CIs, counts, the printed table."""

from __future__ import annotations

import json
import re

import pytest

from react_bench.results import format_table, summarize
from react_bench.tasks import load_task, task_info


def write_run(tmp_path, task: str, records: list[dict]):
    run = {
        "run_id": "r",
        "fingerprint": "sha256:x",
        "model_name": "m",
        "n_examples": len(records),
        "not_applied": ["temperature=0.0"],
        "config": {"solve": {"mode": "react", "runner": "text"}},
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def record(i: int, reason="answered", **scores):
    return {
        "id": str(i),
        "reason": reason,
        "route": "react",
        "steps": 2,
        "bad_calls": 1,
        "usage": {"input_tokens": 10},
        "repairs": {"quotes": 1},
        "metadata": {"label": "SUPPORTS" if i % 2 else "REFUTES"},
        **scores,
    }


def test_cost_is_summed_and_unknown_is_never_zero(tmp_path):
    task = load_task("hotpotqa")
    priced = [dict(record(i, **task.score(p, "Paris")), cost_usd=0.25) for i, p in enumerate(["Paris", "Lyon"])]
    for i, r in enumerate(priced):
        r["correct"] = i == 0
    write_run(tmp_path, "hotpotqa", priced)
    cost = summarize(tmp_path, task.info)["cost_usd"]
    assert cost == {"spent": 0.5, "saved": 0.0, "total": 0.5, "per_example": 0.25, "per_correct": 0.5}
    priced[1]["saved_usd"] = 0.75  # served from the request cache: not spent, but the answer's price
    write_run(tmp_path, "hotpotqa", priced)
    cost = summarize(tmp_path, task.info)["cost_usd"]
    assert cost == {"spent": 0.5, "saved": 0.75, "total": 1.25, "per_example": 0.625, "per_correct": 1.25}
    priced[1]["cost_usd"] = None  # one example on a model without a price
    write_run(tmp_path, "hotpotqa", priced)
    metrics = summarize(tmp_path, task.info)
    assert metrics["cost_usd"]["total"] is None and metrics["cost_usd"]["spent"] is None
    assert re.search(r"cost \(USD\) +unknown", format_table(metrics, task_info("hotpotqa")))


def test_fever_summary_counts_answers_outside_the_label_set(tmp_path):
    task = load_task("fever")
    predictions = ["SUPPORTS", "maybe", "REFUTES", "NOT ENOUGH INFO"]
    golds = ["SUPPORTS", "REFUTES", "REFUTES", "SUPPORTS"]
    write_run(tmp_path, "fever", [record(i, **task.score(p, g)) for i, (p, g) in enumerate(zip(predictions, golds))])
    metrics = summarize(tmp_path, task.info)
    assert metrics["accuracy"]["mean"] == 0.5 and metrics["n"] == 4
    assert metrics["out_of_label_set"] == 1
    assert (metrics["bad_calls"], metrics["repairs"], metrics["usage"]["input_tokens"]) == (4, {"quotes": 4}, 40)
    by_label = metrics["by_group"]["label"]
    assert {k: (v["n"], v["accuracy"]) for k, v in by_label.items()} == {"REFUTES": (2, 1.0), "SUPPORTS": (2, 0.0)}
    # 2 of 2 and 0 of 2: Wilson's intervals, not the bootstrap's [100, 100] and [0, 0]
    assert by_label["REFUTES"]["ci95"] == pytest.approx([0.3424, 1.0], abs=1e-4)
    assert by_label["SUPPORTS"]["ci95"] == pytest.approx([0.0, 0.6576], abs=1e-4)
    assert "label REFUTES" not in format_table(metrics, task_info("fever"))  # FEVER shows no breakdown rows
    table = format_table(metrics, task_info("fever"))
    assert "answers not a label  1" in table and "NOT APPLIED" in table and "60.9" in table  # the paper's ReAct FEVER


def test_hotpotqa_summary_has_em_f1_with_intervals(tmp_path):
    task = load_task("hotpotqa")
    write_run(
        tmp_path,
        "hotpotqa",
        [record(i, **task.score(p, "Paris")) for i, p in enumerate(["Paris", "paris.", "Lyon", ""])],
    )
    metrics = summarize(tmp_path, task.info)
    assert metrics["em"]["mean"] == 0.5
    low, high = metrics["em"]["ci95"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert metrics["em"]["ci_method"] == "wilson"
    assert (low, high) == pytest.approx((0.1500, 0.8500), abs=1e-4)  # Wilson, 2 of 4
    assert "out_of_label_set" not in metrics
