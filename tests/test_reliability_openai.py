"""The OpenAI-compatible path held to the Anthropic path's standard: no response a misbehaving
server sends aborts a run, hangs it, or leaves a wrong record. Every case goes through the real
``openai`` SDK against a local server that sends the bytes (``testing.openai_server``), for both
runners (the text runner on ``/v1/completions``, the tool-use runner on ``/v1/chat/completions``):
each example's first call gets the hostile response, the oracle answers the rest."""

from __future__ import annotations

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
from react_bench.testing import openai_hostile
from react_bench.testing.openai_server import Chunks, OpenAIServer, Spec, model_config, oracle_chunks, question_of
from react_bench.testing.walker import Walk, after_label
from tests.support_oracle import gold_answers

RUNNERS = ("text", "tool_use")


def asked(path: str, body: dict[str, Any]) -> str:
    if "prompt" in body:
        return after_label(str(body["prompt"])) or ""
    return question_of(body["messages"])[0]


def first_call_is(make: Callable[[str, list[dict[str, Any]]], Spec], golds: dict[str, str]) -> Callable:
    """A responder: the first request of each question gets ``make(question, the oracle's chunks)``;
    every other request the oracle's stream."""
    walk, seen, lock = Walk(steps=2, answers=golds), set(), threading.Lock()

    def respond(path: str, body: dict[str, Any]) -> Spec:
        question = asked(path, body)
        with lock:
            first = question not in seen
            seen.add(question)
        chunks = oracle_chunks(walk, path, body)
        return make(question, chunks) if first else Chunks(tuple(chunks))

    return respond


async def run(tmp_path: Path, monkeypatch, responder, runner: str, n: int, **model: Any):
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    with OpenAIServer(responder) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n),
            model=model_config(server.base_url, **model),
            solve=SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=4)),  # type: ignore[arg-type]
            results_dir=tmp_path / "runs",
            concurrency=4,
            progress=False,
        )
        out = io.StringIO()
        result = await evaluate(config, out=out)
    lines = (result.run_dir / "examples.jsonl").read_text().splitlines()
    records = {r["question"].strip(): r for r in map(json.loads, lines)}
    assert len(records) == len(lines) == n and (result.run_dir / "metrics.json").is_file()
    return result, records, out.getvalue()


def by_shape(shapes) -> tuple[dict[str, str], dict[str, openai_hostile.Shape]]:
    golds = gold_answers(len(shapes))
    return golds, dict(zip(golds, shapes, strict=True))


@pytest.mark.parametrize("runner", RUNNERS)
async def test_every_hostile_response_is_retried_used_or_recorded_never_an_abort(tmp_path, monkeypatch, capsys, runner):
    shapes = openai_hostile.SHAPES
    assert len(shapes) >= 25
    golds, shape_of = by_shape(shapes)
    responder = first_call_is(lambda q, chunks: shape_of[q].build(chunks), golds)
    result, records, _ = await run(tmp_path, monkeypatch, responder, runner, len(shapes), deadline_s=1.0)
    wrong = []
    for question, shape in shape_of.items():
        r = records[question]
        got = (r["reason"], r["correct"])
        match shape.outcome:
            case "retried":
                ok = got == ("answered", True) and r["retries"] == 1
            case "answered":
                ok = got == ("answered", True) and r["retries"] == 0
            case "refused":
                ok = r["reason"] == "refused" and r["stop_reasons"] == {"refusal": 1} and not r["correct"]
            case "error":
                ok = r["reason"] == "error" and "unknown finish_reason 'banana'" in r["error"] and r["retries"] == 0
            case "cut":
                ok = got == ("answered", True) and r["stop_reasons"].get("max_tokens") == 1
        if not ok:
            wrong.append(
                f"{shape.name}: {r['reason']} correct={r['correct']} retries={r['retries']} "
                f"stops={r['stop_reasons']} {r['error']}"
            )
    assert not wrong, "\n".join(wrong)
    # the numbers stay sane: no impossible count reached usage
    usage = result.metrics["usage"]
    assert all(0 <= usage[k] < 10**7 for k in usage), usage
    # the stream without usage is said to be unknown, not 0/0
    no_usage = records[next(q for q, s in shape_of.items() if s.name == "no usage")]
    assert no_usage["usage"]["unknown_calls"] == 1
    assert usage["unknown_calls"] == 1
    # the second choice never reached the answer, and was said once
    assert "more than one choice" in capsys.readouterr().err


@pytest.mark.parametrize("runner", RUNNERS)
async def test_without_retries_each_fault_is_an_error_on_its_example_with_its_reason(tmp_path, monkeypatch, runner):
    shapes = [s for s in openai_hostile.SHAPES if s.outcome == "retried"]
    golds, shape_of = by_shape(shapes)
    responder = first_call_is(lambda q, chunks: shape_of[q].build(chunks), golds)
    result, records, out = await run(
        tmp_path, monkeypatch, responder, runner, len(shapes), max_retries=0, deadline_s=1.0
    )
    for question, shape in shape_of.items():
        r = records[question]
        assert r["reason"] == "error" and r["error"], (shape.name, r)
        assert "\n" not in r["error"] and "Traceback" not in r["error"], (shape.name, r["error"])
    assert result.metrics["errors"] == len(shapes)
    assert f"error={len(shapes)}" in format_table(result.summary, task_info("hotpotqa"))  # the summary counts them


def test_a_run_without_usage_says_unknown_in_its_summary(tmp_path, monkeypatch) -> None:
    import asyncio

    golds = gold_answers(2)
    walk = Walk(steps=2, answers=golds)
    responder = lambda path, body: Chunks(tuple(oracle_chunks(walk, path, body)[:-1]))  # noqa: E731
    result, records, out = asyncio.run(run(tmp_path, monkeypatch, responder, "text", 2))
    assert all(r["correct"] and r["usage"]["unknown_calls"] == 2 for r in records.values())
    assert result.metrics["usage"]["unknown_calls"] == 4
    assert "usage unknown for 4 of 4 calls" in format_table(result.summary, task_info("hotpotqa"))


def test_the_stream_mapper_reads_only_choice_zero() -> None:
    from openai.types.completion import Completion

    from react_bench.models.collector import collect
    from react_bench.models.openai_compat import StreamMapper

    mapper = StreamMapper(chat=False)
    head = {"id": "c", "object": "text_completion", "created": 1, "model": "m"}
    events = []
    for zero, one in (("Par", "Lon"), ("is", "don")):
        choices = [{"index": 1, "text": one, "finish_reason": None}, {"index": 0, "text": zero, "finish_reason": None}]
        events += mapper.feed(Completion.construct(**head, choices=choices))
    events += mapper.feed(Completion.construct(**head, choices=[{"index": 0, "text": "", "finish_reason": "stop"}]))
    events += mapper.finish()
    response = collect(events)
    assert response.text == "Paris" and mapper.extra_choices == 2
    assert response.usage.unknown_calls == 1


async def test_the_wait_a_server_asks_for_is_kept_on_the_error() -> None:
    from react_bench.models.base import ModelError, ModelRequest
    from react_bench.models.openai_compat import OpenAICompatClient, OpenAIConfig
    from react_bench.testing.openai_server import Raw

    limited = Raw(b'{"error": {"message": "slow down"}}', 429, "application/json", (("retry-after", "7"),))
    with OpenAIServer(lambda path, body: limited) as server:
        client = OpenAICompatClient(OpenAIConfig(name="m", base_url=server.base_url, key_env=None))
        with pytest.raises(ModelError) as caught:
            async for _ in client.stream(ModelRequest(prompt="Question: x\nThought 1:")):
                pass
    assert (caught.value.status, caught.value.retryable, caught.value.retry_after) == (429, True, 7.0)
