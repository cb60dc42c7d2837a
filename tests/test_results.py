"""Run summaries: metrics from examples.jsonl alone, CIs, counts, the printed table."""

from __future__ import annotations

import json
import re

import pytest

from react_bench.record import Cost, RunMetrics
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
    cost = summarize(tmp_path, task.info).cost
    assert cost == Cost(spent=0.5, saved=0.0, total=0.5, per_example=0.25, per_correct=0.5)
    priced[1]["saved_usd"] = 0.75  # served from the request cache: not spent, but the answer's price
    write_run(tmp_path, "hotpotqa", priced)
    cost = summarize(tmp_path, task.info).cost
    assert cost == Cost(spent=0.5, saved=0.75, total=1.25, per_example=0.625, per_correct=1.25)
    priced[1]["cost_usd"] = None  # one example on a model without a price
    write_run(tmp_path, "hotpotqa", priced)
    metrics = summarize(tmp_path, task.info)
    assert metrics.cost.total is None and metrics.cost.spent is None
    assert re.search(r"cost \(USD\) +unknown", format_table(metrics, task_info("hotpotqa")))


def test_fever_summary_counts_answers_outside_the_label_set(tmp_path):
    task = load_task("fever")
    predictions = ["SUPPORTS", "maybe", "REFUTES", "NOT ENOUGH INFO"]
    golds = ["SUPPORTS", "REFUTES", "REFUTES", "SUPPORTS"]
    write_run(tmp_path, "fever", [record(i, **task.score(p, g)) for i, (p, g) in enumerate(zip(predictions, golds))])
    metrics = summarize(tmp_path, task.info)
    assert metrics.scores["accuracy"].mean == 0.5 and metrics.n == 4
    assert metrics.out_of_label_set == 1
    assert (metrics.bad_calls, metrics.repairs, metrics.usage.input_tokens) == (4, {"quotes": 4}, 40)
    by_label = metrics.by_group["label"]
    assert {k: (v.n, v.mean) for k, v in by_label.items()} == {"REFUTES": (2, 1.0), "SUPPORTS": (2, 0.0)}
    # 2 of 2 and 0 of 2: Wilson's intervals, not the bootstrap's [100, 100] and [0, 0]
    assert by_label["REFUTES"].ci95 == pytest.approx((0.3424, 1.0), abs=1e-4)
    assert by_label["SUPPORTS"].ci95 == pytest.approx((0.0, 0.6576), abs=1e-4)
    # metrics.json holds the group's figure under the metric's name, and reads back the same
    written = metrics.to_dict()
    assert written["by_group"]["label"]["REFUTES"]["accuracy"] == 1.0 and written["out_of_label_set"] == 1
    assert RunMetrics.from_dict(json.loads(json.dumps(written))) == metrics
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
    assert metrics.scores["em"].mean == 0.5
    low, high = metrics.scores["em"].ci95
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert metrics.scores["em"].ci_method == "wilson"
    assert (low, high) == pytest.approx((0.1500, 0.8500), abs=1e-4)  # Wilson, 2 of 4
    assert metrics.out_of_label_set is None and "out_of_label_set" not in metrics.to_dict()
    assert metrics.to_dict()["em"] == {"mean": 0.5, "ci95": [low, high], "ci_method": "wilson"}
    assert RunMetrics.from_dict(json.loads(json.dumps(metrics.to_dict()))) == metrics


def test_a_custom_protocol_run_marks_the_papers_figure_beside_it(tmp_path):
    task = load_task("fever")
    write_run(tmp_path, "fever", [record(i, **task.score("SUPPORTS", "SUPPORTS")) for i in range(2)])
    run = json.loads((tmp_path / "run.json").read_text())
    assert "NOT LIKE FOR LIKE" not in format_table(summarize(tmp_path, task.info), task.info)
    run["config"]["protocol"] = "custom"
    (tmp_path / "run.json").write_text(json.dumps(run))
    table = format_table(summarize(tmp_path, task.info), task.info)
    assert re.search(r"paper \(.*\) +60\.9 +NOT LIKE FOR LIKE: this run is protocol=custom", table)


def _episode(*observations: str) -> list[dict]:
    events = []
    for i, observation in enumerate(observations):
        events.append({"type": "tool_called", "call_id": str(i), "name": "search", "arguments": {"entity": "x"}})
        events.append(
            {
                "type": "tool_execution_finished",
                "call_id": str(i),
                "name": "search",
                "observation": observation,
                "is_error": False,
            }
        )
    return [{"events": events}]


def test_grounded_counts_only_answers_a_page_can_say_and_actions_are_counted_apart_from_steps(tmp_path):
    task = load_task("hotpotqa")
    rows = [
        # one model turn that ran two searches at once (the tool-use runner's parallel calls)
        dict(
            record(0, **task.score("Paris", "Paris")),
            gold="Paris",
            prediction="Paris",
            correct=True,
            steps=1,
            trajectory=_episode("Paris is the capital of France.", "Lyon is a city."),
        ),
        # right, but the answer is a judgement no page says: not in grounded's denominator
        dict(
            record(1, **task.score("yes", "yes")),
            gold="yes",
            prediction="yes",
            correct=True,
            steps=1,
            trajectory=_episode("Both are films."),
        ),
        # right, from memory: the page it read does not say it
        dict(
            record(2, **task.score("Rome", "Rome")),
            gold="Rome",
            prediction="Rome",
            correct=True,
            steps=1,
            trajectory=_episode("Milan is a city."),
        ),
    ]
    write_run(tmp_path, "hotpotqa", rows)
    metrics = summarize(tmp_path, task.info)
    assert metrics.grounded_n == 2 and metrics.grounded == 0.5 and metrics.grounded_accuracy == 0.5
    assert metrics.mean_steps == 1.0 and metrics.mean_actions == pytest.approx(4 / 3)
    table = format_table(metrics, task.info)
    assert re.search(r"mean steps +1\.00 +model turns; 1\.33 actions executed per example", table)
    assert re.search(r"grounded accuracy +50\.0 +right and read in an observation, of 2 answers", table)
    fever = load_task("fever")
    write_run(tmp_path, "fever", [dict(record(0, **fever.score("SUPPORTS", "SUPPORTS")), trajectory=_episode("x"))])
    metrics = summarize(tmp_path, fever.info)  # a label is never on a page: no grounded figure, not 0
    assert metrics.grounded is None and metrics.grounded_accuracy is None and metrics.grounded_n == 0
    assert "grounded accuracy" not in format_table(metrics, fever.info)


def test_metrics_json_layout_comes_from_the_fields_and_reads_back_whole() -> None:
    """Every figure set, written and read back equal; the file's places for them as runs have
    always had them; a file that lacks them all reads with each field's default."""
    from react_bench.record import GroupScore, Score
    from react_bench.types import Usage

    s = Score(0.5, (0.25, 0.75), "wilson")
    metrics = RunMetrics(
        run_id="r", task="alfworld", model="m", mode="reflexion", runner="text", n=3, n_planned=4,
        primary_metric="success", metrics=("success",), scores={"success": s}, fingerprint="sha256:0",
        usage=Usage(1, 2, 3, 4), request_cache={"hits": 3, "misses": 4}, out_of_label_set=2,
        cost=Cost(1.0, 0.5, 1.5, 0.5, None), wall_per_example_s=1.5, wall_per_call_s=0.1, actions=7,
        invalid_rate=0.1, think_share=0.3, by_group={"task_type": {"pick": GroupScore(2, 0.5, (0.1, 0.9))}},
        epochs=3, pass_at={1: s, 3: s}, pass_hat={1: s}, method={"evaluator": "oracle", "oracle_feedback": True},
    )  # fmt: skip
    written = json.loads(json.dumps(metrics.to_dict()))
    assert RunMetrics.from_dict(written) == metrics
    assert written["success"] == {"mean": 0.5, "ci95": [0.25, 0.75], "ci_method": "wilson"}
    assert written["wall"] == {"per_example_s": 1.5, "per_call_s": 0.1}
    assert written["actions"] == {"n": 7, "invalid_rate": 0.1, "think_share": 0.3}
    assert written["cost_usd"]["total"] == 1.5 and written["method"]["oracle_feedback"] is True
    assert written["by_group"] == {"task_type": {"pick": {"n": 2, "success": 0.5, "ci95": [0.1, 0.9]}}}
    assert set(written["pass_at_k"]) == {"1", "3"} and written["epochs"] == 3
    assert not {"scores", "pass_at", "wall_per_example_s", "cost"} & set(written) and metrics.oracle_feedback
    # a file written before version 3 kept the method's summary under the mode's own name: read as ``method``
    older = {k: v for k, v in written.items() if k != "method"} | {"reflexion": written["method"]}
    assert RunMetrics.from_dict(older) == metrics
    one_attempt = RunMetrics.from_dict({k: v for k, v in written.items() if k not in ("epochs", "pass_at_k")})
    assert one_attempt.epochs == 1 and not one_attempt.pass_at and "pass_hat_k" not in one_attempt.to_dict()
    bare = RunMetrics.from_dict({"run_id": "old"})
    assert (bare.run_id, bare.n, bare.metrics, bare.usage, bare.cost) == ("old", 0, (), Usage(), Cost())
    assert (bare.request_cache, bare.method, bare.out_of_label_set, bare.epochs) == (
        {"hits": 0, "misses": 0},
        None,
        None,
        1,
    )
