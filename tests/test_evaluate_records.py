"""What ``evaluate`` writes per example: ``correct`` follows the task's primary metric."""

from __future__ import annotations

import io
import json

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, load_task


@pytest.mark.parametrize(("task", "metric"), [("fever", "accuracy"), ("hotpotqa", "em")])
async def test_correct_follows_the_primary_metric(tmp_path, task, metric, prepared_dir):
    first, second = load_task(task).examples(TaskConfig(n=2))
    assert first.gold != "NOT ENOUGH INFO"  # the wrong answer below must stay wrong
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f" {first.gold}", " NOT ENOUGH INFO"]))
    result = await evaluate(
        RunConfig(
            task=TaskConfig(name=task, ids=(first.id, second.id)),
            model={"provider": "scripted", "label": "scripted", "script": str(script)},
            solve=SolveSettings(mode="standard"),
            results_dir=tmp_path,
            progress=False,
        ),
        out=io.StringIO(),
    )
    records = [json.loads(line) for line in (result.run_dir / "examples.jsonl").read_text().splitlines()]
    assert [r[metric] for r in records] == [1.0, 0.0]
    assert [r["correct"] for r in records] == [True, False]
