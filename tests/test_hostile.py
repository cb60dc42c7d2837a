"""No model output aborts a run: over 200 hostile first turns through both runners, the real
SDK and the Messages API server. Each example gets one hostile case as its first response;
a plain answer follows. The run must finish with every example written once, and each
case's outcome is asserted (a re-ask, an is_error observation, a replaced character, an
example-level error), never a crash."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, RawStream, Reply, claude_model_config
from react_bench.testing.sse import CacheSimulator, build_message, encode_sse, stream_events
from react_bench.types import TextBlock, ToolUseBlock
from tests.support_oracle import gold_answers, question_of, turns_after_question

KEY_ENV = "REACT_BENCH_TEST_HOSTILE_KEY"
CONTROL = [chr(c) for c in range(32) if chr(c) not in "\n"] + ["\x7f"]  # \n would end the step line


@dataclass(frozen=True)
class Case:
    name: str
    first: Callable[[dict[str, Any]], Reply | RawStream]  # the hostile first response
    check: Callable[[dict[str, Any]], None]  # asserts the example's record


def expect_fail(message: str) -> None:
    raise AssertionError(message)


def answered_ok(record: dict[str, Any]) -> None:
    assert (record["reason"], record["prediction"]) == ("answered", "ok"), record["error"]


def observed(record: dict[str, Any], needle: str, is_error: bool = True) -> None:
    answered_ok(record)
    finished = [e for e in record["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"]
    assert any(needle in e["observation"] and e["is_error"] == is_error for e in finished), finished


def raw_tool_stream(body: dict[str, Any], name: str, partial_json: str) -> RawStream:
    """A tool_use block whose input JSON is exactly ``partial_json`` (whatever it is)."""
    message = build_message(Reply((TextBlock("x"),)), body, number=1, cache=CacheSimulator(0))
    start, *_ = stream_events(message)
    block = {"type": "tool_use", "id": "toolu_raw_1", "name": name, "input": {}}
    events = [
        start,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": partial_json},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return RawStream(b"".join(encode_sse(n, p) for n, p in events))


def with_unknown_events(body: dict[str, Any], reply: Reply, where: int) -> RawStream:
    events = stream_events(build_message(reply, body, number=1, cache=CacheSimulator(0)))
    novel = [
        ("future_event", {"type": "future_event", "payload": {"x": 1}}),
        ("content_block_start", {"type": "content_block_start", "index": 9, "content_block": {"type": "hologram"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 9, "delta": {"type": "hologram_delta"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 9}),
        ("ping", {"type": "ping"}),
    ]
    where = min(max(1, where), len(events) - 1)
    return RawStream(b"".join(encode_sse(n, p) for n, p in [*events[:where], *novel, *events[where:]]))


def text(reply: str) -> Callable[[dict[str, Any]], Reply]:
    return lambda body: Reply.text(reply)


def text_cases() -> list[Case]:
    reask = lambda r: (answered_ok(r), r["bad_calls"] == 1 or expect_fail(f"no re-ask: {r}"))  # noqa: E731
    invalid = lambda r: observed(r, "Invalid action")  # noqa: E731
    cases = [
        Case("empty completion", text(""), reask),
        Case("whitespace only", text("   \n  "), reask),
        Case("thought without action", text("Thought 1: I wonder."), reask),
        Case("action on the same line", text("Thought 1: hmm Action 1: Search[x]"), reask),
        Case("two actions", text("Thought 1: a\nAction 1: Search[x]\nAction 1: Search[y]"), reask),
        Case("unknown action", text("Thought 1: a\nAction 1: Click[the button]"), invalid),
        Case("lower-case unknown", text("Thought 1: a\nAction 1: dance[]"), invalid),
        Case("unbalanced open", text("Thought 1: a\nAction 1: Search[Ed Wood"), invalid),
        Case("unbalanced close", text("Thought 1: a\nAction 1: Search]Ed Wood["), invalid),
        Case("nested brackets", text("Thought 1: a\nAction 1: Search[[[x]]"), lambda r: observed(r, "", False)),
        Case(
            "100k argument",
            text("Thought 1: a\nAction 1: Search[" + "a" * 100_000 + "]"),
            lambda r: observed(r, "Could not find", False),
        ),
        Case(
            "100k lookup",
            text("Thought 1: a\nAction 1: Lookup[" + "b " * 50_000 + "]"),
            lambda r: observed(r, "There is no page", False),
        ),
        Case(
            "lone surrogate",
            text("Thought 1: a\nAction 1: Search[\ud800 x]"),
            lambda r: (observed(r, "", False), r["replaced_chars"] == 1 or expect_fail(str(r))),
        ),
        Case(
            "only surrogates",
            text("\udfff\ud800"),
            lambda r: (reask(r), r["replaced_chars"] == 2 or expect_fail(str(r))),
        ),
        Case(
            "huge finish",
            text("Thought 1: a\nAction 1: Finish[" + "z" * 100_000 + "]"),
            lambda r: r["prediction"] == "z" * 100_000 or expect_fail("finish lost"),
        ),
    ]
    for k, ch in enumerate(CONTROL):
        cases.append(
            Case(
                f"control {k} in argument",
                text(f"Thought 1: a\nAction 1: Search[x{ch}y]"),
                lambda r: observed(r, "", False),
            )
        )
        cases.append(
            Case(
                f"control {k} in thought",
                text(f"Thought 1: a{ch}b\nAction 1: Lookup[q]"),
                lambda r: observed(r, "There is no page", False),
            )
        )
    for k in range(1, 31):
        cases.append(Case(f"label noise {k}", text(f"Thought 1: a\nAction {k + 1}: Search[x]"), reask))
    return cases


def tool(*blocks: Any) -> Callable[[dict[str, Any]], Reply]:
    return lambda body: Reply(tuple(blocks))


def tool_cases() -> list[Case]:
    search = lambda entity: ToolUseBlock("", "search", {"entity": entity})  # noqa: E731
    garbled = lambda r: observed(r, "Error: the input of search is not valid JSON")  # noqa: E731

    def error_with(needle: str) -> Callable[[dict[str, Any]], None]:
        def check(record: dict[str, Any]) -> None:
            assert record["reason"] == "error" and needle in record["error"], record

        return check

    cases = [
        Case("empty turn", tool(), lambda r: (r["reason"], r["prediction"]) == ("answered", "") or expect_fail(str(r))),
        Case("unknown tool", tool(ToolUseBlock("", "teleport", {"to": "x"})), lambda r: observed(r, "Invalid action")),
        Case("missing field", tool(ToolUseBlock("", "search", {})), lambda r: observed(r, "Invalid arguments")),
        Case("wrong type", tool(ToolUseBlock("", "search", {"entity": 7})), lambda r: observed(r, "Invalid arguments")),
        Case(
            "duplicate ids",
            tool(
                ToolUseBlock("toolu_same", "search", {"entity": "a"}),
                ToolUseBlock("toolu_same", "search", {"entity": "b"}),
            ),
            error_with("duplicate tool_use ids"),
        ),
        Case(
            "300 parallel calls",
            tool(*[search(f"q{i}") for i in range(300)]),
            lambda r: (
                answered_ok(r),
                len([e for e in r["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"]) == 300
                or expect_fail("not 300 results"),
            ),
        ),
        Case("100k argument", tool(search("w" * 100_000)), lambda r: observed(r, "Could not find", False)),
        Case(
            "surrogate argument",
            tool(search("Ed \ud800 Wood")),
            lambda r: (observed(r, "", False), r["replaced_chars"] == 1 or expect_fail(str(r))),
        ),
        Case(
            "surrogate text",
            tool(TextBlock("I think \udc00"), search("x")),
            lambda r: (observed(r, "", False), r["replaced_chars"] == 1 or expect_fail(str(r))),
        ),
    ]
    raw = {
        "invalid json": '{"entity": ',
        "trailing garbage": '{"entity": "x"} extra',
        "NaN": '{"entity": NaN}',
        "Infinity": '{"entity": Infinity}',
        "-Infinity": '{"entity": -Infinity}',
        "5000 digits": '{"entity": ' + "7" * 5000 + "}",
        "deep nesting": '{"entity": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "array": '["entity"]',
        "string": '"entity"',
        "null": "null",
    }
    for name, partial in raw.items():
        cases.append(
            Case(
                f"raw {name}",
                lambda body, p=partial: raw_tool_stream(body, "search", p),
                garbled if name not in ("array", "string", "null") else lambda r: observed(r, "is not a JSON object"),
            )
        )
    for k, ch in enumerate(CONTROL):
        cases.append(Case(f"control {k}", tool(search(f"x{ch}y")), lambda r: observed(r, "", False)))
    for k in range(50):
        reply = Reply((TextBlock("Looking."), search(f"probe {k}")))
        cases.append(
            Case(
                f"unknown SSE events at {k}",
                lambda body, r=reply, w=k: with_unknown_events(body, r, w + 1),
                lambda r: observed(r, "", False),
            )
        )
    return cases


def responder(cases_by_question: dict[str, Case]) -> Callable[[dict[str, Any]], Reply | RawStream]:
    def respond(body: dict[str, Any]) -> Reply | RawStream:
        case = cases_by_question[question_of(body)]
        first_turn = turns_after_question(body) == 0
        if body.get("tools"):
            return case.first(body) if first_turn else Reply((TextBlock("Answer: ok"),))
        tail = "".join(b["text"] for b in body["messages"][0]["content"]).rsplit("Question: ", 1)[1]
        suffix = re.search(r"Begin your reply with `(.*?)` and follow", tail, re.DOTALL)
        assert suffix is not None
        if "Action" in suffix.group(1):  # the paper's re-ask, after a failed split
            return Reply.text("Finish[ok]")
        step = int(suffix.group(1).split()[1].rstrip(":"))
        return case.first(body) if step == 1 else Reply.text(f"Thought {step}: done.\nAction {step}: Finish[ok]")

    return respond


@pytest.mark.parametrize(("runner", "make_cases"), [("text", text_cases), ("tool_use", tool_cases)])
async def test_hostile_outputs_never_abort_a_run(tmp_path: Path, monkeypatch, runner, make_cases, prepared_dir):
    cases = make_cases()
    assert len(cases) >= 100
    questions = list(gold_answers(len(cases)))
    by_question = dict(zip(questions, cases, strict=True))
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=responder(by_question)) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=len(cases)),
            model=claude_model_config(server.base_url, KEY_ENV),
            solve=SolveSettings(mode="react", runner=runner, loop=_loop()),  # type: ignore[arg-type]
            results_dir=tmp_path,
            concurrency=4,
            progress=False,
        )
        result = await evaluate(config, out=io.StringIO())
    records = [json.loads(line) for line in (result.run_dir / "examples.jsonl").read_text().splitlines()]
    assert len(records) == len(cases) and len({r["id"] for r in records}) == len(cases)
    assert (result.run_dir / "metrics.json").is_file()
    failures = []
    for record in records:
        case = by_question[record["question"].strip()]
        try:
            case.check(record)
        except AssertionError as exc:
            failures.append(f"{case.name}: {exc}")
    assert not failures, "\n".join(failures[:10])
    assert not math.isnan(result.metrics["em"]["mean"])


def _loop():
    from react_bench.loop import LoopConfig

    return LoopConfig(max_steps=3)
