"""What a comparison can detect (issue 59): the smallest difference two runs could tell apart at
80% power, and every paired comparison that marks a smaller one "not distinguishable"."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.metrics import detectable_paired, detectable_unpaired, paired_n
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import question_of
from tests.support import compare_py
from tests.support_oracle import gold_answers

KEY_ENV = "REACT_BENCH_TEST_DETECTABLE_KEY"


def test_the_detectable_difference_is_the_inverse_of_the_sample_size_it_needs() -> None:
    assert detectable_paired(20, 1) == pytest.approx(0.1320, abs=1e-4)  # one example of 20 apart
    assert detectable_paired(20, 0) == detectable_paired(20, 1)  # identical runs: one example is the least
    for n, discordant in ((100, 20), (500, 100), (7405, 900)):
        d = detectable_paired(n, discordant)
        assert d is not None and paired_n(d, discordant / n) == n  # Connor's formula, both ways
    assert detectable_paired(400, 80) < detectable_paired(100, 20)  # more examples, finer
    assert detectable_paired(0, 0) is None and detectable_unpaired(0, 0.5, 10, 0.5) is None
    # two independent shares: (z_a + z_b) sqrt(p(1-p)/n + q(1-q)/m)
    assert detectable_unpaired(100, 0.5, 100, 0.5) == pytest.approx(2.8016 * (0.005**0.5), abs=1e-4)


def _answers(golds: dict[str, str], wrong: set[str]) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        question = question_of(body).strip()
        return Reply.text(" a wrong answer" if question in wrong else f" {golds[question]}")

    return respond


async def test_compare_prints_what_two_runs_can_tell_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two Standard runs of 20 questions that differ by one answer: compare.py prints the pair's
    difference (5 points), what it could detect at 80% power (13.2) and "not distinguishable";
    paired.md, report.html and the frontier say the same."""
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    golds = gold_answers(20)
    dirs = []
    for run_id, wrong in (("all", set()), ("one_wrong", {sorted(golds)[3]})):
        with MessagesServer(responder=_answers(golds, wrong)) as server:
            cfg = RunConfig(
                task=TaskConfig(name="hotpotqa", n=20),
                model=claude_model_config(server.base_url, KEY_ENV, "claude-sonnet-4-6"),  # type: ignore[arg-type]
                solve=SolveSettings(mode="standard"),
                results_dir=tmp_path / "runs",
                run_id=run_id,
                progress=False,
            )
            dirs.append((await evaluate(cfg, out=io.StringIO())).run_dir)
    scores = [json.loads((d / "metrics.json").read_text())["em"]["mean"] for d in dirs]
    assert scores == [1.0, 0.95]
    out = tmp_path / "study"
    compared = compare_py(*dirs, out=out)
    assert compared.returncode == 0, compared.stderr
    assert "A - B = +5.0 points, detectable at 80% power: 13.2 points; not distinguishable" in compared.stdout
    paired = (out / "paired.md").read_text()
    assert "| 13.2 | not distinguishable |" in paired
    assert "not distinguishable" in (out / "report.html").read_text()


def test_plan_from_a_pilot_gives_examples_trials_and_price(tmp_path: Path) -> None:
    """A pilot of 10 questions, 3 attempts each (some questions flip between attempts), on a priced
    model: ``plan detect=3`` prints the examples for 1, 3 and 5 trials (fewer with more trials, as
    the flips average out; Connor's n for one trial) and the dry run's price and the pilot's."""
    import math
    import subprocess
    import sys
    from collections import Counter

    from react_bench.metrics import Z80, Z95
    from tests.support import REPO, composed

    golds = gold_answers(10)
    order = sorted(golds)
    asked: Counter[str] = Counter()

    def flaky(body: dict[str, Any]) -> Reply:
        question = question_of(body).strip()
        asked[question] += 1
        flips = order.index(question) % 2 == 0 and asked[question] % 3 == 2  # half the questions, one attempt in 3
        return Reply.text(" a wrong answer" if flips or order.index(question) == 1 else f" {golds[question]}")

    env = {"REACT_BENCH_TEST_DETECTABLE_KEY": "test-key-not-real"}
    with MessagesServer(responder=flaky) as server:
        import os

        os.environ.update(env)
        cfg = RunConfig.from_mapping(
            composed(
                "task=hotpotqa",
                "mode=standard",
                "model=claude-sonnet-4-6",
                f"model.base_url={server.base_url}",
                f"model.api_key_env={KEY_ENV}",
                "n=10",
                "epochs=3",
                f"results_dir={tmp_path / 'runs'}",
                "cache=false",
            )
        )
        import asyncio

        pilot = asyncio.run(evaluate(cfg, out=io.StringIO())).run_dir
        planned = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "plan.py"), str(pilot), "detect=3", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "plan.py"), str(pilot), "detect=3"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert planned.returncode == 0, planned.stderr
    assert json.loads((pilot / "metrics.json").read_text())["flip_share"] == pytest.approx(0.5)  # its own summary
    result = json.loads(planned.stdout)
    score = 22 / 30  # one question always wrong, five wrong in one attempt of three
    assert result["pilot_n"] == 10 and result["pilot_score"] == pytest.approx(score)
    assert result["flips_between_trials"] == pytest.approx(0.5)  # 5 of 10 questions flip
    p_d = 2 * score * (1 - score)  # two independent methods of the pilot's score
    assert result["discordance"] == pytest.approx(p_d)
    one, three, five = result["rows"]
    connor = math.ceil(((Z95 * math.sqrt(p_d) + Z80 * math.sqrt(p_d - 0.03**2)) / 0.03) ** 2)
    assert (one["trials"], one["examples"]) == (1, connor)
    assert one["examples"] > three["examples"] > five["examples"]  # trials average the flips out
    assert all(
        r["price_dry_run"] and r["price_pilot"] and r["price_pilot"] <= r["price_dry_run"] for r in result["rows"]
    )
    assert said.returncode == 0 and "trials  examples" in said.stdout and "$" in said.stdout
    bad = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "plan.py"), str(pilot)], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "detect=<points>" in bad.stderr


def test_a_step_up_the_frontier_smaller_than_its_runs_can_detect_is_marked() -> None:
    """Two runs of one task, the dearer one 5 points better on 20 examples each (detectable: about
    29 points unpaired): the step is not distinguishable; 70 points better on 100: it is."""
    import pandas as pd

    from react_bench.studies import frontier

    def run(run_id: str, mean: float, n: int, cost: float) -> dict[str, Any]:
        return {
            "task": "hotpotqa",
            "mode": "react",
            "runner": "text",
            "model": "m",
            "run_id": run_id,
            "n": n,
            "mean": mean,
            "ci_low": mean - 0.1,
            "ci_high": mean + 0.1,
            "cost_usd": cost,
            "tokens_in": 0,
            "tokens_out": 0,
            "oracle_feedback": False,
            "chosen_by_reward": False,
        }

    close = frontier(pd.DataFrame([run("cheap", 0.90, 20, 1.0), run("dear", 0.95, 20, 2.0)]))
    steps = dict(zip(close["run_id"], close["step"], strict=True))
    assert steps == {"cheap": "", "dear": "not distinguishable"}
    far = frontier(pd.DataFrame([run("cheap", 0.20, 100, 1.0), run("dear", 0.90, 100, 2.0)]))
    assert dict(zip(far["run_id"], far["step"], strict=True)) == {"cheap": "", "dear": "distinguishable"}
    assert detectable_unpaired(20, 0.95, 20, 0.90) == pytest.approx(
        2.8016 * (0.95 * 0.05 / 20 + 0.09 / 20) ** 0.5, abs=1e-3
    )
