"""The per-step path made cheap without changing what is written: the group-committed run
writer, one response assembly per call, event dicts, the streaming summary, the on-disk
task records, and the walker stand-in that the benchmarks drive."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import time
from pathlib import Path

import httpx2
import numpy as np
import pytest

from react_bench import rundir
from react_bench.evaluate import evaluate
from react_bench.events import (
    EpisodeFinished,
    MessageStart,
    MessageStop,
    StepFinished,
    ToolCalled,
    event_to_dict,
)
from react_bench.methods.core import SolveSettings
from react_bench.metrics import _bootstrap_means
from react_bench.models.base import generate
from react_bench.models.replay import RecordingModel, example_scope
from react_bench.models.retrying import RetryingModel
from react_bench.results import read_records, summarize
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import MessagesServer, RequestLimiter, claude_model_config
from react_bench.testing.walker import Walk, WalkingModel, WalkResponder
from react_bench.types import StopReason, Usage

# ------------------------------------------------------------------------------ RunWriter


async def test_the_writer_commits_concurrent_examples_in_groups_in_order(tmp_path):
    writer = rundir.RunWriter(tmp_path)
    lines = [(rundir.json_line({"id": str(i)}), rundir.json_line({"id": str(i), "calls": []})) for i in range(50)]
    await asyncio.gather(*(writer.write(*pair) for pair in lines))
    await writer.aclose()
    for name, column in ((rundir.EXAMPLES, 0), (rundir.CALLS, 1)):
        assert (tmp_path / name).read_bytes() == b"".join(pair[column] for pair in lines)
    assert 1 <= writer.batches < 50  # the examples that finished together went out together


async def test_an_example_counts_only_once_its_lines_are_fsynced(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = rundir.RunWriter(tmp_path)
    line = rundir.json_line({"id": "a"})
    await writer.write(line, line)
    assert synced == [len(line), len(line)]  # both files, on disk before write() returned
    await writer.aclose()


async def test_a_failed_write_fails_every_example_of_its_batch(tmp_path, monkeypatch):
    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken)
    writer = rundir.RunWriter(tmp_path)
    results = await asyncio.gather(
        *(writer.write(b'{"id": "%d"}\n' % i, b'{"id": "%d"}\n' % i) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, OSError) and "No space" in str(r) for r in results)
    await writer.aclose()


def walker_config(tmp_path: Path, runner: str, n: int, concurrency: int = 1) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model={"provider": "scripted", "label": "walker"},
        solve=SolveSettings(mode="react", runner=runner),  # type: ignore[arg-type]
        results_dir=tmp_path,
        concurrency=concurrency,
        progress=False,
        request_cache="off",
    )


def plans(n: int) -> dict[str, tuple[tuple[str, ...], str]]:
    examples = load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=n))
    return {e.question: (tuple(e.metadata["supporting_titles"]), e.gold) for e in examples}


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_walker_takes_seven_real_steps_through_either_runner(tmp_path, runner):
    n = 6
    model = WalkingModel(Walk(7, plans(n)))
    result = await evaluate(walker_config(tmp_path, runner, n, concurrency=3), out=io.StringIO(), model=model)
    assert result.metrics["n"] == n and result.metrics["em"]["mean"] == 1.0
    assert result.metrics["mean_steps"] == 7 and model.calls == 7 * n
    record = read_records(result.run_dir)[0]
    observations = [
        e["observation"]
        for e in record["trajectory"][0]["events"]
        if e["type"].endswith("finished") and "observation" in e
    ]
    assert not observations[0].startswith("Could not find")  # step 1 found a supporting page
    assert len(observations) == 7


async def test_the_summary_is_the_same_read_one_record_at_a_time(tmp_path):
    n = 20
    model = WalkingModel(Walk(7, plans(n)))
    result = await evaluate(walker_config(tmp_path, "text", n), out=io.StringIO(), model=model)
    again = summarize(result.run_dir, load_task("hotpotqa").info)
    stored = json.loads((result.run_dir / "metrics.json").read_text())
    assert again.to_dict() == stored and again == result.summary
    assert again.failure_labels == {"correct": n} and again.grounded is not None and again.grounded > 0


# ------------------------------------------------------------------- one assembly per call


async def test_the_response_is_assembled_once_and_recorded_as_the_caller_sees_it(tmp_path):
    with MessagesServer(responder=WalkResponder(Walk(steps=2)), latency_s=0.0) as server:
        os.environ["REACT_BENCH_TEST_WRITE_KEY"] = "not-a-key"
        from react_bench.models.anthropic import AnthropicClient, AnthropicConfig
        from react_bench.models.base import ModelRequest
        from react_bench.types import Message

        client = AnthropicClient(AnthropicConfig("claude-sonnet-4-6", "REACT_BENCH_TEST_WRITE_KEY", server.base_url))
        model = RecordingModel(RetryingModel(client, max_retries=0))
        with example_scope("q1") as calls:
            response = await generate(model, ModelRequest(messages=(Message.user("Question: who?"),), max_tokens=50))
        await client.aclose()
    assert calls == [response] and calls[0] is response  # one ModelResponse object, not two equal ones


async def test_a_run_keeps_its_http_connections_alive(tmp_path, monkeypatch):
    monkeypatch.setenv("REACT_BENCH_TEST_WRITE_KEY", "not-a-key")
    n = 6
    with MessagesServer(responder=WalkResponder(Walk(steps=3))) as server:
        cfg = walker_config(tmp_path, "tool_use", n, concurrency=2)
        model = claude_model_config(server.base_url, "REACT_BENCH_TEST_WRITE_KEY", max_retries=4)
        result = await evaluate(dataclasses.replace(cfg, model=model), out=io.StringIO())
    assert result.metrics["n"] == n and len(server.requests) == 3 * n
    assert 1 <= server.connections <= 2  # one per example in flight, reused call after call


# -------------------------------------------------------------------------- event dicts


def test_event_dicts_equal_what_asdict_gave():
    events = [
        ToolCalled(1, "c1", "search", {"entity": "Ed Wood", "nested": {"a": [1, 2]}}),
        StepFinished(2, Usage(1, 2, 3, 4)),
        EpisodeFinished("x", "answered", 3, Usage(5, 6)),
        MessageStart("m", "claude", Usage(7)),
        MessageStop(StopReason.STOP_SEQUENCE, Usage(1, 1), "\nObservation"),
    ]
    for event in events:
        expected = dataclasses.asdict(event)
        if isinstance(expected.get("stop_reason"), StopReason):
            expected["stop_reason"] = expected["stop_reason"].value
        for rare in ("unknown_calls", "cache_creation_1h_input_tokens"):  # on disk only where not 0
            if not (expected.get("usage") or {}).get(rare, 1):
                del expected["usage"][rare]
        got = event_to_dict(event)
        assert got == expected and list(got) == list(expected)
        json.dumps(got)
    copied = event_to_dict(events[0])
    copied["arguments"]["nested"]["a"].append(3)  # the record is its own: the event is unchanged
    assert events[0].arguments["nested"]["a"] == [1, 2]


@pytest.mark.parametrize("n", [7, 999, 5001])
def test_bootstrap_draws_do_not_depend_on_the_chunk_size(n, monkeypatch):
    values = np.random.default_rng(1).integers(0, 2, n).astype(float)
    small = _bootstrap_means(values, 3000, 0)
    monkeypatch.setattr("react_bench.metrics._CHUNK_ELEMENTS", 10**12)
    assert np.array_equal(small, _bootstrap_means(values, 3000, 0))


# --------------------------------------------------------------------- on-disk task records


def test_task_records_are_read_from_disk_on_the_next_run(tmp_path, monkeypatch):
    from react_bench.tasks import data

    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "records.jsonl"
    source.write_text('{"question": "a", "answer": "1"}\n{"question": "b", "answer": "2"}\n')
    check = lambda r: None if r.get("question") else "no question"  # noqa: E731
    first = data.read_records(source, ("question", "answer"), check, "toy")
    data._CACHE.clear()
    monkeypatch.setattr(data, "_load_checked", lambda *a: pytest.fail("read the source again"))
    assert data.read_records(source, ("question", "answer"), check, "toy") == first
    # a changed source is read again, and a damaged stored file is a miss
    data._CACHE.clear()
    monkeypatch.undo()
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    time.sleep(0.01)
    source.write_text('{"question": "c", "answer": "3"}\n')
    assert [r["question"] for r in data.read_records(source, ("question", "answer"), check, "toy")] == ["c"]
    for stored in (tmp_path / "cache" / "records").glob("*.json"):
        stored.write_text("{damaged")
    data._CACHE.clear()
    assert [r["question"] for r in data.read_records(source, ("question", "answer"), check, "toy")] == ["c"]


# ------------------------------------------------------------------ server latency and limit


def test_the_server_holds_each_reply_for_its_latency():
    with MessagesServer(responder=WalkResponder(Walk(steps=1)), latency_s=0.3) as server:
        started = time.monotonic()
        reply = httpx2.post(
            f"{server.base_url}/v1/messages",
            headers={"x-api-key": "k"},
            json={
                "model": "claude-sonnet-4-6",
                "max_tokens": 20,
                "messages": [{"role": "user", "content": "Question: q\nBegin your reply with `Thought 1:`"}],
            },
        )
        elapsed = time.monotonic() - started
    assert reply.status_code == 200 and "Finish[unknown]" in reply.json()["content"][0]["text"]
    assert 0.3 <= elapsed < 2.0
    assert server.requests[0].answered - server.requests[0].received >= 0.3


def test_the_rate_limit_answers_429_as_the_api_does_and_refills():
    body = {"model": "claude-sonnet-4-6", "max_tokens": 20, "messages": [{"role": "user", "content": "Question: q"}]}
    now = [1000.0]  # the bucket's own clock: however slow the machine, no time passes unless the test says so
    with MessagesServer(responder=WalkResponder(Walk(steps=1))) as server:
        server.limiter = RequestLimiter(120, clock=lambda: now[0])  # 2 per second
        statuses = [
            httpx2.post(f"{server.base_url}/v1/messages", headers={"x-api-key": "k"}, json=body) for _ in range(3)
        ]
        now[0] += 0.6  # half a second refills one request
        after = httpx2.post(f"{server.base_url}/v1/messages", headers={"x-api-key": "k"}, json=body)
    assert [r.status_code for r in statuses] == [200, 200, 429]
    refused = statuses[2]
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["anthropic-ratelimit-requests-limit"] == "120"
    assert after.status_code == 200
    assert server.limiter is not None and server.limiter.rejected == 1


def test_the_limiter_bucket_holds_one_seconds_worth():
    limiter = RequestLimiter(600)  # 10 per second
    admitted = sum(limiter.admit() is None for _ in range(25))
    assert admitted == 10 and limiter.rejected == 15


async def test_runs_started_within_one_second_get_their_own_folders(tmp_path, monkeypatch):
    import datetime as real_dt

    from react_bench import evaluate as evaluate_module

    class FrozenDatetime(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return real_dt.datetime(2026, 12, 3, 9, 30, 0, tzinfo=tz)

    monkeypatch.setattr(evaluate_module.dt, "datetime", FrozenDatetime)
    cfg = walker_config(tmp_path, "text", 2)
    dirs = []
    for _ in range(3):
        result = await evaluate(cfg, out=io.StringIO(), model=WalkingModel(Walk(2, plans(2))))
        dirs.append(result.run_dir.name)
    assert dirs == ["20261203-093000", "20261203-093000-2", "20261203-093000-3"]
