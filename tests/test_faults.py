"""Transient faults never become wrong answers: the Messages API server injects 30% faults
(429, 529, 500, dropped connections, truncated 200 streams, error events mid-stream) and a
100-question run through the real SDK gives exactly what the fault-free run gives."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import FAULT_KINDS, MessagesServer, claude_model_config
from tests.support_oracle import Oracle, gold_answers

KEY_ENV = "REACT_BENCH_TEST_FAULTS_KEY"
N = 100
MAX_RETRIES = 12


def run_config(server: MessagesServer, results: Path, runner: str, **extra: object) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=N),
        model=claude_model_config(
            server.base_url, KEY_ENV, max_retries=MAX_RETRIES, retry_backoff_s=0.001, timeout_s=30
        ),
        solve=SolveSettings(mode="react", runner=runner),  # type: ignore[arg-type]
        results_dir=results,
        concurrency=8,
        progress=False,
        request_cache="off",  # the faulty run must really call the server
        **extra,  # type: ignore[arg-type]
    )


def lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def golds() -> dict[str, str]:
    return gold_answers(N)


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_thirty_percent_faults_lose_nothing(tmp_path, monkeypatch, golds, runner):
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=Oracle(golds)) as clean:
        baseline = await evaluate(run_config(clean, tmp_path / "clean", runner), out=io.StringIO())
    with MessagesServer(responder=Oracle(golds), fault_rate=0.3, fault_seed=7) as faulty:
        result = await evaluate(run_config(faulty, tmp_path / "faulty", runner), out=io.StringIO())
    injected = sum(faulty.faults.values())
    assert set(faulty.faults) == set(FAULT_KINDS), faulty.faults  # every kind was injected
    assert injected >= 0.2 * len(faulty.requests)

    clean_records, records = lines(baseline.run_dir), lines(result.run_dir)
    assert len(records) == N and len({r["id"] for r in records}) == N  # every example exactly once
    assert [r["reason"] for r in records].count("error") == 0  # none lost to a transient fault
    assert {r["id"]: r["prediction"] for r in records} == {r["id"]: r["prediction"] for r in clean_records}
    assert baseline.metrics["em"]["mean"] == result.metrics["em"]["mean"] == 1.0
    # retries: counted per example, bounded, and they add up to the faults the server injected
    assert all(0 <= r["retries"] <= MAX_RETRIES for r in records)
    assert result.metrics["retries"] == sum(r["retries"] for r in records) == injected
    assert sum(r["retries"] for r in clean_records) == 0
