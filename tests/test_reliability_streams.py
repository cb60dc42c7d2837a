"""Reliability, round three, model side: no response shape, stall, stop reason or cache fault
aborts a run, hangs it, or corrupts its numbers. Every case goes through the real SDK against
the project's Messages API server, for both runners: each example's first call gets the
hostile response, the oracle answers the rest."""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.results import format_table
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, task_info
from react_bench.testing import hostile
from react_bench.testing.messages_server import MessagesServer, Reply, Stalled, claude_model_config
from react_bench.types import StopReason, TextBlock, ToolUseBlock
from tests.support_oracle import Oracle, gold_answers, question_of

KEY_ENV = "REACT_BENCH_TEST_STREAMS_KEY"
RUNNERS = ("text", "tool_use")


def first_call_is(make: Callable[[str, dict[str, Any], Reply], Any], golds: dict[str, str]) -> Callable:
    """A responder: the first request of each question gets ``make(question, body, the oracle's
    reply)``; every other request the oracle's reply."""
    oracle, seen, lock = Oracle(golds), set(), threading.Lock()

    def respond(body: dict[str, Any]) -> Any:
        question = question_of(body)
        with lock:
            first = question not in seen
            seen.add(question)
        reply = oracle(body)
        return make(question, body, reply) if first else reply

    return respond


async def run(tmp_path: Path, monkeypatch, responder, runner: str, n: int, **model: Any):
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    with MessagesServer(responder=responder) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n),
            model=claude_model_config(server.base_url, KEY_ENV, retry_backoff_s=0.001, **model),
            solve=SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=4)),  # type: ignore[arg-type]
            results_dir=tmp_path / "runs",
            concurrency=4,
            progress=False,
        )
        result = await evaluate(config, out=io.StringIO())
    lines = (result.run_dir / "examples.jsonl").read_text().splitlines()
    records = {r["question"].strip(): r for r in map(json.loads, lines)}
    assert len(records) == len(lines) == n and (result.run_dir / "metrics.json").is_file()
    return result, records


@pytest.mark.parametrize("runner", RUNNERS)
async def test_every_malformed_stream_is_retried_or_used_never_an_abort(tmp_path, monkeypatch, runner):
    shapes = hostile.SHAPES
    assert len(shapes) >= 30
    golds = gold_answers(len(shapes))
    by_question = dict(zip(golds, shapes, strict=True))
    responder = first_call_is(lambda q, body, reply: hostile.stream(by_question[q], body, reply), golds)
    result, records = await run(tmp_path, monkeypatch, responder, runner, len(shapes), max_retries=1)
    wrong = []
    for question, shape in by_question.items():
        r = records[question]
        expected_retries = 1 if shape.outcome == "retried" else 0
        if (r["reason"], r["correct"], r["retries"]) != ("answered", True, expected_retries):
            wrong.append(f"{shape.name}: {r['reason']} correct={r['correct']} retries={r['retries']} {r['error']}")
    assert not wrong, "\n".join(wrong)
    # the numbers stay sane: no impossible count reached usage or cost
    usage = result.metrics["usage"]
    assert all(0 <= usage[k] < 10**7 for k in usage), usage
    assert 0 <= result.metrics["cost_usd"]["spent"] < 1.0


@pytest.mark.parametrize("runner", RUNNERS)
async def test_without_retries_a_malformed_stream_is_an_error_recorded_on_its_example(tmp_path, monkeypatch, runner):
    shapes = [s for s in hostile.SHAPES if s.outcome == "retried"]
    golds = gold_answers(len(shapes))
    by_question = dict(zip(golds, shapes, strict=True))
    responder = first_call_is(lambda q, body, reply: hostile.stream(by_question[q], body, reply), golds)
    result, records = await run(tmp_path, monkeypatch, responder, runner, len(shapes), max_retries=0)
    for question, shape in by_question.items():
        r = records[question]
        assert r["reason"] == "error" and "malformed response" in r["error"], (shape.name, r["error"])
        assert r["stop_reasons"] == {"error": 1}
    assert result.metrics["errors"] == len(shapes)


@pytest.mark.parametrize("runner", RUNNERS)
async def test_a_stream_of_pings_for_ever_ends_at_the_attempts_deadline(tmp_path, monkeypatch, runner):
    golds = gold_answers(2)
    responder = first_call_is(lambda q, body, reply: Stalled(reply, after_events=1, interval_s=0.02), golds)
    _, records = await run(tmp_path, monkeypatch, responder, runner, 2, max_retries=0, deadline_s=1.0)
    for r in records.values():
        assert r["reason"] == "error" and "timed out: the attempt passed its deadline of 1 s" in r["error"]
    # with a retry the example is answered
    stalled = first_call_is(lambda q, body, reply: Stalled(reply, interval_s=0.02), golds)
    _, records = await run(tmp_path / "again", monkeypatch, stalled, runner, 2, max_retries=2, deadline_s=1.0)
    assert all(r["reason"] == "answered" and r["correct"] and r["retries"] >= 1 for r in records.values())


async def test_a_silent_stream_says_it_timed_out_waiting_for_a_byte(tmp_path, monkeypatch):
    golds = gold_answers(1)
    responder = first_call_is(lambda q, body, reply: Stalled(reply, after_events=1, interval_s=30), golds)
    _, records = await run(tmp_path, monkeypatch, responder, "tool_use", 1, max_retries=0, timeout_s=0.3)
    (r,) = records.values()
    assert r["reason"] == "error" and "timed out: no byte from the API for 0.3 s (model.timeout_s)" in r["error"]


def test_the_default_clocks_are_what_the_api_needs_not_fifty_minutes() -> None:
    from react_bench.models.anthropic import AnthropicClient, AnthropicConfig

    config = AnthropicConfig(name="claude-sonnet-4-6", api_key_env="REACT_BENCH_UNUSED")
    assert config.timeout_s == 60.0
    client = AnthropicClient.__new__(AnthropicClient)
    client.config = config
    assert client.deadline_s(100) == 65.0  # the paper's 100-token step: about a minute, whole
    assert client.deadline_s(16_000) == 860.0  # a long thinking budget gets the time it needs


def _stopping(reason: StopReason) -> Callable[[str, dict[str, Any], Reply], Reply]:
    return lambda q, body, reply: Reply((TextBlock("I will not."),), stop_reason=reason)


@pytest.mark.parametrize("runner", RUNNERS)
async def test_a_refusal_is_its_own_finish_reason_and_a_context_overflow_an_error(tmp_path, monkeypatch, runner):
    golds = gold_answers(2)
    result, records = await run(
        tmp_path, monkeypatch, first_call_is(_stopping(StopReason.REFUSAL), golds), runner, 2, max_retries=2
    )
    assert all(r["reason"] == "refused" and r["retries"] == 0 for r in records.values())
    assert all(r["stop_reasons"] == {"refusal": 1} and "refused" in r["error"] for r in records.values())
    assert result.metrics["refused"] == 2 and result.metrics["errors"] == 0
    assert result.metrics["cost_usd"]["spent"] > 0  # a refusal is billed: its tokens are counted
    table = format_table(result.summary, task_info("hotpotqa"))
    assert "finish reasons       refused=2" in table and "REFUSED" in table
    cassette = [json.loads(line) for line in (result.run_dir / "calls.jsonl").read_text().splitlines()]
    assert all(c["stop_reasons"] == ["refusal"] for c in cassette)

    _, records = await run(
        tmp_path / "ctx",
        monkeypatch,
        first_call_is(_stopping(StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED), golds),
        runner,
        2,
        max_retries=2,
    )
    for r in records.values():
        assert r["reason"] == "error" and r["retries"] == 0 and "context window" in r["error"]


def _paused(question: str, body: dict[str, Any], reply: Reply) -> Reply:
    """The oracle's first reply in two parts: its first block (or half its text) with pause_turn."""
    blocks = reply.content
    if len(blocks) > 1:
        first, rest = blocks[:1], blocks[1:]
    else:
        (block,) = blocks
        assert isinstance(block, TextBlock)
        half = len(block.text) // 2
        first, rest = (TextBlock(block.text[:half]),), (TextBlock(block.text[half:]),)
    _REST[question] = Reply(rest)
    return Reply(first, stop_reason=StopReason.PAUSE_TURN)


_REST: dict[str, Reply] = {}


@pytest.mark.parametrize("runner", RUNNERS)
async def test_a_paused_turn_is_continued_as_the_api_documents(tmp_path, monkeypatch, runner):
    golds = gold_answers(3)
    inner = first_call_is(_paused, golds)
    continuations: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> Any:
        question = question_of(body)
        if question in _REST and body["messages"][-1]["role"] == "assistant" and continuations.count(question) == 0:
            continuations.append(question)
            return _REST[question]
        return inner(body)

    _REST.clear()
    result, records = await run(tmp_path, monkeypatch, responder, runner, 3, max_retries=0)
    assert sorted(continuations) == sorted(golds)  # each paused turn was sent back once
    for r in records.values():
        assert r["reason"] == "answered" and r["correct"], r["error"]
        assert r["stop_reasons"]["pause_turn"] == 1
    assert any(isinstance(b, ToolUseBlock) for b in _REST[next(iter(golds))].content) == (runner == "tool_use")
    # the replay of the cassette takes the same turns (the pause recorded with its stop reason)
    replay = RunConfig(
        task=TaskConfig(name="hotpotqa", n=3),
        model={"provider": "replay", "cassette": str(result.run_dir / "calls.jsonl")},
        solve=SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=4)),  # type: ignore[arg-type]
        results_dir=tmp_path / "replay",
        progress=False,
    )
    again = await evaluate(replay, out=io.StringIO())
    assert again.metrics["em"]["mean"] == 1.0 and again.metrics["errors"] == 0


@pytest.mark.parametrize("runner", RUNNERS)
async def test_a_cache_that_cannot_be_written_costs_no_answer(tmp_path, monkeypatch, runner, capsys):
    golds = gold_answers(3)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a regular file where the cache folder should be")
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(blocked / "requests"))
    with MessagesServer(responder=Oracle(golds)) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=3),
            model=claude_model_config(server.base_url, KEY_ENV),
            solve=SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=4)),  # type: ignore[arg-type]
            results_dir=tmp_path / "runs",
            progress=False,
        )
        result = await evaluate(config, out=io.StringIO())
    assert result.metrics["em"]["mean"] == 1.0 and result.metrics["errors"] == 0
    calls = sum(r["calls"] for r in map(json.loads, (result.run_dir / "examples.jsonl").read_text().splitlines()))
    assert result.metrics["cache_write_failures"] == calls == len(server.requests)
    err = capsys.readouterr().err
    assert err.count("warning: the request cache could not be written") == 1
    assert "cache writes failed" in format_table(result.summary, task_info("hotpotqa"))


async def test_the_deadline_passing_in_the_consumers_time_ends_the_next_wait_not_the_consumer() -> None:
    """One timer per attempt: it cancels only this client's own wait. Passed while the consumer
    holds an event, the consumer's own awaits run on; the next wait is a TimeoutError at once."""
    from react_bench.models.deadline import Deadline as _Deadline

    loop = asyncio.get_running_loop()
    deadline = _Deadline(loop.time() + 0.05)
    assert await deadline.wait(asyncio.sleep(0, "first event")) == "first event"
    await asyncio.sleep(0.15)  # the consumer's time: past the deadline, and not cancelled
    pending = asyncio.sleep(0, "never")
    with pytest.raises(TimeoutError):
        await deadline.wait(pending)
    assert pending.cr_frame is None  # closed, not left unawaited
    deadline.cancel()
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0


async def test_the_deadline_cancels_a_wait_that_never_ends_and_leaves_an_outside_cancel_alone() -> None:
    from react_bench.models.deadline import Deadline as _Deadline

    loop = asyncio.get_running_loop()
    deadline = _Deadline(loop.time() + 0.05)
    with pytest.raises(TimeoutError):
        await deadline.wait(loop.create_future())  # no byte, no event, ever
    current = asyncio.current_task()
    assert current is not None and current.cancelling() == 0  # the task goes on, uncancelled
    deadline.cancel()

    async def waiting() -> None:
        await _Deadline(loop.time() + 60).wait(loop.create_future())

    task = asyncio.create_task(waiting())
    await asyncio.sleep(0.01)
    task.cancel()  # Ctrl-C, or a TaskGroup unwinding: a cancellation, not a timeout
    with pytest.raises(asyncio.CancelledError):
        await task
