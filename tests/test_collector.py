"""The collector on a recorded SSE stream, through the same SDK-event mapping the client uses.

The fixture ``anthropic_stream_tool_use.sse`` is written by hand in the real wire format:
a thinking block with a signature, a text block, and a tool_use whose input JSON arrives in
22 fragments, some ending inside a ``\\u00e9`` escape or between a backslash and a quote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from react_bench.events import (
    STREAM_EVENT_TYPES,
    BlockStart,
    BlockStop,
    MessageStart,
    MessageStop,
    SignatureDelta,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
)
from react_bench.models.anthropic import stream_events_from_payloads
from react_bench.models.base import ModelError
from react_bench.models.collector import ResponseCollector, StreamProtocolError, collect, response_to_events
from react_bench.models.stopping import StreamStops
from react_bench.testing.sse import parse_sse
from react_bench.types import (
    ModelResponse,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

FIXTURE = Path(__file__).parent / "fixtures" / "anthropic_stream_tool_use.sse"
TOOL_INPUT = {"entity": 'Café "Le Procope"', "note": "naïve — ok\\path"}


def recorded() -> list[tuple[str, dict[str, Any]]]:
    return parse_sse(FIXTURE.read_text(encoding="utf-8"))


def deltas(kind: str) -> list[dict[str, Any]]:
    return [p["delta"] for name, p in recorded() if name == "content_block_delta" and p["delta"]["type"] == kind]


def test_recorded_stream_is_assembled_exactly() -> None:
    response = collect(stream_events_from_payloads(recorded()))

    signature = deltas("signature_delta")[0]["signature"]
    assert response.content == (
        ThinkingBlock(
            'The user asks where the café "Le Procope" is. I should search for it before answering.', signature
        ),
        TextBlock("I'll look up Le Procope first."),
        ToolUseBlock("toolu_01D7FLrfh4GYq7yT1ULFeyMV", "search", TOOL_INPUT),
    )
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.id == "msg_01Kq7fR3wXz8nLpT2vY9cBdE" and response.model == "claude-sonnet-4-6"
    # input and cache counts from the stream; output is message_delta's cumulative count
    assert response.usage == Usage(
        input_tokens=412, output_tokens=131, cache_creation_input_tokens=1536, cache_read_input_tokens=2048
    )


def test_fixture_tool_input_really_is_fragmented_mid_escape() -> None:
    fragments = [d["partial_json"] for d in deltas("input_json_delta")]
    assert len(fragments) >= 20
    assert "\\u00" in fragments and "\\" in fragments  # ends inside \u00e9 and before an escaped quote
    joined = "".join(fragments)
    assert json.loads(joined) == TOOL_INPUT
    # no proper prefix is valid JSON: a collector that parsed early would fail or be wrong
    for end in range(1, len(joined)):
        with pytest.raises(json.JSONDecodeError):
            json.loads(joined[:end])


def test_tool_input_split_at_every_position_assembles_the_same() -> None:
    text = json.dumps(TOOL_INPUT)  # ASCII escapes: splits land inside \u escapes too
    for cut in range(len(text) + 1):
        events = [
            MessageStart("m", "x"),
            BlockStart(0, "tool_use", tool_id="t1", tool_name="search"),
            ToolInputDelta(0, text[:cut]),
            ToolInputDelta(0, text[cut:]),
            BlockStop(0),
            MessageStop(StopReason.TOOL_USE),
        ]
        assert collect(events).tool_uses[0].input == TOOL_INPUT


def test_every_stream_event_kind_appears_and_is_handled() -> None:
    events = stream_events_from_payloads(recorded())
    assert {type(e) for e in events} == set(STREAM_EVENT_TYPES)
    assert [type(e) for e in events][:2] == [MessageStart, BlockStart]
    assert isinstance(events[-1], MessageStop)
    kinds = {e.kind for e in events if isinstance(e, BlockStart)}
    assert kinds == {"thinking", "text", "tool_use"}
    assert sum(isinstance(e, ToolInputDelta) for e in events) == len(deltas("input_json_delta"))


def test_collector_match_is_closed() -> None:
    with pytest.raises(AssertionError):  # assert_never: a new event type must be handled
        ResponseCollector().feed(object())  # type: ignore[arg-type]


def test_redacted_thinking_and_block_start_content_are_mapped() -> None:
    payloads = [
        ("message_start", {"type": "message_start", "message": _message()}),
        ("content_block_start", _start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", _start(1, {"type": "text", "text": "Already "})),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "here"}},
        ),
        ("content_block_delta", _citations(1)),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    response = collect(stream_events_from_payloads(payloads))
    assert response.content == (RedactedThinkingBlock("EmwKAhgBEgy3va3pzix"), TextBlock("Already here"))
    assert response.usage == Usage(input_tokens=10, output_tokens=9)  # input kept from message_start


def test_server_tool_blocks_and_stream_errors_are_model_errors() -> None:
    start = ("message_start", {"type": "message_start", "message": _message()})
    server_tool = _start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})
    with pytest.raises(ModelError, match="server_tool_use"):
        stream_events_from_payloads([start, ("content_block_start", server_tool)])
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ModelError, match="overloaded_error"):
        stream_events_from_payloads([start, ("error", error)])


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([TextDelta(0, "x")], "not open"),
        ([BlockStart(0, "text"), ThinkingDelta(0, "x")], "thinking delta for a text block"),
        ([BlockStart(0, "thinking"), SignatureDelta(1, "s")], "not open"),
        ([BlockStart(0, "text"), BlockStop(0), BlockStart(0, "text")], "started twice"),
        ([BlockStop(3)], "not open"),
    ],
)
def test_broken_streams_are_protocol_errors(events: list[Any], message: str) -> None:
    collector = ResponseCollector()
    with pytest.raises(StreamProtocolError, match=message):
        for event in events:
            collector.feed(event)


@pytest.mark.parametrize(
    ("partial_json", "error"),
    [
        ('{"a": ', "not valid JSON (JSONDecodeError"),
        ("[1]", "not a JSON object (got list)"),
        ('{"a": NaN}', "not valid JSON (ValueError: NaN is not a JSON number)"),
        ('{"a": -Infinity}', "not valid JSON (ValueError: -Infinity is not a JSON number)"),
        ('{"a": ' + "9" * 5000 + "}", "not valid JSON (ValueError: Exceeds the limit"),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON (RecursionError"),
    ],
)
def test_unusable_tool_input_is_marked_not_raised(partial_json: str, error: str) -> None:
    events = [BlockStart(0, "tool_use", "t", "f"), ToolInputDelta(0, partial_json), BlockStop(0)]
    response = collect([MessageStart("m", "x"), *events, MessageStop(StopReason.TOOL_USE)])
    (block,) = response.tool_uses
    assert block.input == {} and block.input_error is not None and block.input_error.startswith(error)


def test_lone_surrogates_are_replaced_and_counted_but_thinking_is_kept() -> None:
    events = [
        MessageStart("m", "x"),
        BlockStart(0, "thinking"),
        ThinkingDelta(0, "odd \ud800 thought"),
        SignatureDelta(0, "sig"),
        BlockStop(0),
        BlockStart(1, "text"),
        TextDelta(1, "answer \udc80 here"),
        BlockStop(1),
        BlockStart(2, "tool_use", "t", "search"),
        ToolInputDelta(2, json.dumps({"entity": "Plains \ud800", "\udfff": ["\ud801"]})),
        BlockStop(2),
        MessageStop(StopReason.TOOL_USE),
    ]
    response = collect(events)
    assert response.content[0] == ThinkingBlock("odd \ud800 thought", "sig")  # signed: never edited
    assert response.text == "answer \ufffd here"
    assert response.tool_uses[0].input == {"entity": "Plains \ufffd", "\ufffd": ["\ufffd"]}
    assert response.replaced_chars == 4
    json.dumps(response.text, ensure_ascii=False).encode("utf-8")  # writable now


def test_incomplete_streams_are_protocol_errors() -> None:
    with pytest.raises(StreamProtocolError, match="still open"):
        collect([MessageStart("m", "x"), BlockStart(0, "text"), MessageStop(StopReason.END_TURN)])
    with pytest.raises(StreamProtocolError, match="without message_stop"):
        collect([MessageStart("m", "x"), BlockStart(0, "text"), BlockStop(0)])


def test_response_to_events_is_the_inverse_of_collect() -> None:
    response = collect(stream_events_from_payloads(recorded()))
    assert collect(response_to_events(response, chunk=3)) == response
    empty_tool = ModelResponse((ToolUseBlock("t", "finish", {}),), StopReason.TOOL_USE, Usage(3, 4))
    assert collect(response_to_events(empty_tool)).content == empty_tool.content


def _message() -> dict[str, Any]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _citations(index: int) -> dict[str, Any]:
    citation = {
        "type": "char_location",
        "cited_text": "x",
        "document_index": 0,
        "document_title": None,
        "start_char_index": 0,
        "end_char_index": 1,
    }
    return {"type": "content_block_delta", "index": index, "delta": {"type": "citations_delta", "citation": citation}}


@pytest.mark.parametrize("split_at", [1, 3, 5, 9])
def test_stream_stops_cut_a_stop_split_across_deltas(split_at: int) -> None:
    text = "Search[Alpha]\nmore text after the stop"
    events = [
        MessageStart("m", "x", Usage()),
        BlockStart(0, "text"),
        TextDelta(0, text[:split_at]),
        TextDelta(0, text[split_at:]),
        BlockStop(0),
        MessageStop(StopReason.END_TURN, Usage(output_tokens=9)),
    ]
    stops = StreamStops(["\n"])
    out = [o for e in events for o in stops.feed(e)]
    response = collect(out)
    assert response.text == "Search[Alpha]"
    assert (response.stop_reason, response.stop_sequence) == (StopReason.STOP_SEQUENCE, "\n")
    assert response.usage.output_tokens == 9  # usage stays the API's


def test_stream_stops_release_held_text_at_the_block_end() -> None:
    stops = StreamStops(["\nObservation 1:"])
    events = [
        MessageStart("m", "x", Usage()),
        BlockStart(0, "text"),
        TextDelta(0, "answer\nObs"),  # might be the start of the stop: held back
        BlockStop(0),
        MessageStop(StopReason.END_TURN),
    ]
    response = collect([o for e in events for o in stops.feed(e)])
    assert (response.text, response.stop_reason) == ("answer\nObs", StopReason.END_TURN)
