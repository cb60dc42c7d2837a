"""Cost under control: the request cache, the rate limiter, dry runs and budgets."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.results import format_table
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, task_info
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from tests.support_oracle import Oracle, gold_answers

KEY_ENV = "REACT_BENCH_TEST_COST_KEY"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def claude(server: MessagesServer, tmp_path: Path, run_id: str, n: int = 3, **extra: object) -> RunConfig:
    solve = extra.pop("solve", SolveSettings(mode="react"))
    model = claude_model_config(server.base_url, KEY_ENV, **extra.pop("model", {}))  # type: ignore[arg-type]
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model=model,
        solve=solve,  # type: ignore[arg-type]
        results_dir=tmp_path,
        run_id=run_id,
        progress=False,
        **extra,
    )  # type: ignore[arg-type]


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]


async def test_a_cached_rerun_makes_no_request_and_costs_nothing(tmp_path, key):
    with MessagesServer(responder=Oracle(gold_answers(3))) as server:
        first = await evaluate(claude(server, tmp_path, "a"), out=io.StringIO())
        sent = len(server.requests)
        again = await evaluate(claude(server, tmp_path, "b"), out=io.StringIO())
        assert len(server.requests) == sent == 6  # two calls per question, none on the rerun
        refreshed = await evaluate(claude(server, tmp_path, "c", request_cache="refresh"), out=io.StringIO())
        assert len(server.requests) == 2 * sent  # refresh asks again
    assert [r["prediction"] for r in records(again.run_dir)] == [r["prediction"] for r in records(first.run_dir)]
    assert again.metrics["request_cache"] == {"hits": 6, "misses": 0}
    assert first.metrics["request_cache"] == {"hits": 0, "misses": 6}
    spent_first, spent_again = first.metrics["cost_usd"]["spent"], again.metrics["cost_usd"]["spent"]
    assert spent_again == 0.0 < spent_first  # nothing paid again ...
    assert again.metrics["cost_usd"]["saved"] == pytest.approx(spent_first)  # ... and what it would have cost
    # the same answers at the same price
    assert again.metrics["cost_usd"]["total"] == pytest.approx(first.metrics["cost_usd"]["total"])
    assert refreshed.metrics["request_cache"]["misses"] == 6
    table = format_table(again.summary, task_info("hotpotqa"))
    assert "6 of 6 calls served from the request cache" in table and "saved (USD)" in table


async def test_the_cache_is_keyed_by_the_endpoint_and_run_json_records_it(tmp_path, key):
    """Another server is another model, whatever its name: its answers never come from this one's."""
    golds = gold_answers(2)
    with MessagesServer(responder=Oracle(golds)) as one, MessagesServer(responder=Oracle(golds)) as other:
        first = await evaluate(claude(one, tmp_path, "a", n=2), out=io.StringIO())
        second = await evaluate(claude(other, tmp_path, "b", n=2), out=io.StringIO())
        assert len(one.requests) == len(other.requests) == 4  # the second server was asked everything
        hosts = [(first, one.base_url.removeprefix("http://")), (second, other.base_url.removeprefix("http://"))]
    assert second.metrics["request_cache"] == {"hits": 0, "misses": 4}
    for result, host in hosts:
        run = json.loads((result.run_dir / "run.json").read_text())
        assert run["endpoint"] == host  # host:port, never a key
        assert run["sdk"].startswith("anthropic ") and result.metrics["endpoint"] == run["endpoint"]
        assert "test-key-not-real" not in (result.run_dir / "run.json").read_text()


async def test_cot_sc_samples_are_distinct_requests_and_a_damaged_entry_is_a_miss(tmp_path, key):
    from react_bench.models.cache import default_request_cache_dir

    answers = iter(f"Thought: reasoning {i}.\nAnswer: {'yes' if i % 3 else 'no'}" for i in range(100))
    with MessagesServer(responder=lambda body: Reply.text(next(answers))) as server:
        first = await evaluate(
            claude(server, tmp_path, "a", n=1, solve=SolveSettings(mode="cot_sc")), out=io.StringIO()
        )
        assert len(server.requests) == 21  # 21 samples at 0.7: 21 calls, whatever their bodies
        (record,) = records(first.run_dir)
        assert len(record["samples"]) == 21
        entries = sorted(default_request_cache_dir().rglob("*.json"))
        assert len(entries) == 21
        entries[0].write_text("{ not json")  # a damaged entry
        again = await evaluate(
            claude(server, tmp_path, "b", n=1, solve=SolveSettings(mode="cot_sc")), out=io.StringIO()
        )
        assert len(server.requests) == 22  # only the damaged one was asked again
    (rerun,) = records(again.run_dir)
    assert rerun["request_cache"] == {"hits": 20, "misses": 1}


async def test_the_limiter_holds_requests_per_minute_against_the_server(tmp_path, key):
    with MessagesServer(responder=Oracle(gold_answers(6))) as server:
        config = claude(
            server, tmp_path, "r", n=6, concurrency=6, request_cache="off", model={"requests_per_minute": 600}
        )
        await evaluate(config, out=io.StringIO())
        times = sorted(r.received for r in server.requests)
    assert len(times) == 12
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.1 - 0.02  # evenly paced: 600 a minute is one every 0.1 s, even at concurrency 6
    assert times[-1] - times[0] >= 11 * 0.1 - 0.05


async def test_dry_run_sends_nothing_and_writes_the_first_request_the_run_sends(tmp_path, key):
    with MessagesServer(responder=Oracle(gold_answers(2))) as server:
        dry = await evaluate(claude(server, tmp_path, "d", n=2, dry_run=True), out=(out := io.StringIO()))
        assert server.requests == []  # no model call
        assert "dry run (no model call): 2 examples, at most 14 calls" in out.getvalue()
        estimate = json.loads((dry.run_dir / "dry_run.json").read_text())
        assert estimate["cost_usd"] > 0 and estimate["usage"]["output_tokens"] == 14 * 100
        written = json.loads((dry.run_dir / "dry_run_request.json").read_text())
        real = await evaluate(claude(server, tmp_path, "d", n=2), out=io.StringIO())  # same folder: allowed
        assert server.requests[0].body == written  # byte for byte what the API received first
    assert real.metrics["n"] == 2


async def test_the_budget_stops_a_run_and_resume_finishes_it(tmp_path, key):
    n = 12
    with MessagesServer(responder=Oracle(gold_answers(n))) as server:
        single = await evaluate(claude(server, tmp_path, "one", n=1, dry_run=True), out=io.StringIO())
        budget = json.loads((single.run_dir / "dry_run.json").read_text())["cost_usd"]  # one example's upper bound
        stopped = await evaluate(
            claude(server, tmp_path, "b", n=n, request_cache="off", max_cost_usd=budget), out=io.StringIO()
        )
        done = records(stopped.run_dir)
        assert 1 <= len(done) < n and stopped.n_over_budget == n - len(done)
        assert sum(r["cost_usd"] for r in done) <= budget  # never passed
        resumed = await evaluate(
            claude(server, tmp_path, "b", n=n, request_cache="off", max_cost_usd=10.0, resume=True), out=io.StringIO()
        )
    final = records(resumed.run_dir)
    assert len(final) == n and len({r["id"] for r in final}) == n and resumed.n_over_budget == 0
    assert resumed.metrics["em"]["mean"] == 1.0


async def test_the_budget_runs_close_to_its_limit_with_examples_in_flight(tmp_path, key):
    """With four examples in flight, one that only fits once they have finished waits for them
    (their cost measured) instead of being given up: the run stops close to the budget."""
    n = 20
    with MessagesServer(responder=Oracle(gold_answers(n))) as server:
        probe = await evaluate(claude(server, tmp_path, "p", n=1, request_cache="off"), out=io.StringIO())
        limit = 6.5 * probe.metrics["cost_usd"]["spent"]
        stopped = await evaluate(
            claude(server, tmp_path, "b", n=n, request_cache="off", concurrency=4, max_cost_usd=limit),
            out=io.StringIO(),
        )
    done = records(stopped.run_dir)
    spent = stopped.metrics["cost_usd"]["spent"]
    assert spent == pytest.approx(sum(r["cost_usd"] for r in done)) and spent <= limit  # never passed
    assert len(done) >= 5 and stopped.n_over_budget == n - len(done)  # close to it: about six fit


def standard_oracle(golds: dict[str, str]):
    from tests.support_oracle import question_of

    # the extra line checks that the client-side stop (the re-ask's and Standard's "\n") is applied
    return lambda body: Reply.text(f"{golds[question_of(body)]}\nQuestion: something else")


def batch_config(server: MessagesServer, tmp_path: Path, run_id: str, **extra: object) -> RunConfig:
    return claude(
        server, tmp_path, run_id, n=4, solve=SolveSettings(mode="standard"), batch=True, batch_poll_s=0.01, **extra
    )


async def test_batch_submits_the_single_calls_and_the_run_is_served_from_it(tmp_path, key):
    golds = gold_answers(4)
    with MessagesServer(responder=standard_oracle(golds)) as server:
        result = await evaluate(batch_config(server, tmp_path, "b"), out=io.StringIO())
        live = [r for r in server.requests if r.path == "/v1/messages"]
        assert len(server.batches) == 1 and live == []  # every answer came from the batch
        (batch,) = server.batches.values()
        assert len(batch.results) == 4 and batch.polls >= 2
        direct = await evaluate(
            claude(server, tmp_path, "d", n=4, solve=SolveSettings(mode="standard"), request_cache="off"),
            out=io.StringIO(),
        )
    assert [r["prediction"] for r in records(result.run_dir)] == [r["prediction"] for r in records(direct.run_dir)]
    assert result.metrics["em"]["mean"] == 1.0
    assert result.metrics["cost_usd"]["total"] == pytest.approx(direct.metrics["cost_usd"]["total"] / 2)
    state = json.loads((result.run_dir / "batches.json").read_text())
    assert state["batches"][0]["collected"] and len(state["batches"][0]["responses"]) == 4
