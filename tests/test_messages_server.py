"""The local Messages API server over raw HTTP: the wire format and the API's rules.

The client tests talk to it through the real SDK; these check what the SDK would hide:
the SSE event order, fragment shapes, the error JSON, status codes and headers.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from react_bench.models.capabilities import known_models, model_info
from react_bench.testing.messages_server import PREFILL_REJECTED, Fault, MessagesServer, Reply
from react_bench.testing.sse import parse_sse, sign_thinking
from react_bench.types import TextBlock, ThinkingBlock, ToolUseBlock

KEY = "sk-ant-test-0123456789"


@pytest.fixture
def server() -> Iterator[MessagesServer]:
    with MessagesServer(json_chunk=3) as srv:
        yield srv
        srv.assert_complete()


def post(
    server: MessagesServer, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    url = urlparse(server.base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        sent = {"content-type": "application/json", "x-api-key": KEY, **(headers or {})}
        conn.request("POST", "/v1/messages", json.dumps(body), sent)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def body(
    model: str = "claude-sonnet-5-5", messages: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    return {"model": model, "max_tokens": 2048, "messages": messages or [user("Hi")], **extra}


def user(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]}


def assistant(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]}


def tool_use(id_: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "search", "input": {"entity": "x"}}


def result(id_: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": "obs"}


def thinking(text: str, signature: str | None = None) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": sign_thinking(text) if signature is None else signature}


def test_streamed_reply_follows_the_real_event_sequence(server: MessagesServer) -> None:
    tool_input = {"entity": 'Café "Le Procope"', "n": 3}
    server.enqueue(
        Reply((ThinkingBlock("Think first.", ""), TextBlock("Searching now."), ToolUseBlock("", "search", tool_input)))
    )
    status, headers, text = post(server, body(stream=True, thinking={"type": "adaptive", "display": "summarized"}))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert headers["transfer-encoding"] == "chunked"
    events = parse_sse(text)
    names = [n for n, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 3
    deltas = [p["delta"] for n, p in events if n == "content_block_delta"]
    kinds = [d["type"] for d in deltas]
    assert kinds.index("signature_delta") > kinds.index("thinking_delta")  # the signature ends the thinking block
    assert {"text_delta", "input_json_delta"} <= set(kinds)
    fragments = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert fragments[0] == "" and len(fragments) > 10 and json.loads("".join(fragments)) == tool_input
    starts = [p["content_block"] for n, p in events if n == "content_block_start"]
    assert starts[0] == {"type": "thinking", "thinking": "", "signature": ""}
    assert starts[2]["input"] == {} and starts[2]["id"].startswith("toolu_")
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use"
    assert set(final["usage"]) >= {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }


def test_plain_json_reply_and_stop_sequences(server: MessagesServer) -> None:
    server.enqueue(Reply.text("Thought 1: I need to search.\nAction 1: Search[x]\nObservation 1: y"))
    status, _, text = post(server, body(stop_sequences=["\nObservation 1:"]))
    message = json.loads(text)
    assert status == 200 and message["type"] == "message" and message["role"] == "assistant"
    assert message["content"] == [{"type": "text", "text": "Thought 1: I need to search.\nAction 1: Search[x]"}]
    assert (message["stop_reason"], message["stop_sequence"]) == ("stop_sequence", "\nObservation 1:")


def test_recorded_request_headers_hide_the_key(server: MessagesServer) -> None:
    server.enqueue(Reply.text("ok"))
    post(server, body(), {"anthropic-version": "2023-06-01"})
    recorded = server.requests[0]
    assert recorded.headers["x-api-key"] == "<redacted>" and KEY not in json.dumps(recorded.headers)
    assert recorded.headers["anthropic-version"] == "2023-06-01" and recorded.body["model"] == "claude-sonnet-5-5"
    assert recorded.status == 200


def test_missing_credentials_and_unknown_model_and_path(server: MessagesServer) -> None:
    status, _, text = post(server, body(), {"x-api-key": ""})
    assert status == 401 and json.loads(text)["error"]["type"] == "authentication_error"
    status, _, text = post(server, body(model="claude-nonexistent-1"))
    assert status == 404 and json.loads(text)["error"] == {
        "type": "not_found_error",
        "message": "model: claude-nonexistent-1",
    }


def _ok_pair() -> list[dict[str, Any]]:
    return [user("q"), assistant("Let me look.", tool_use("toolu_a"), tool_use("toolu_b"))]


RULES = [
    (
        "tool_use unanswered",
        body(messages=[*_ok_pair(), user(result("toolu_a"), "go on")]),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_b",
    ),
    (
        "tool_result not first",
        body(messages=[*_ok_pair(), user("note", result("toolu_a"), result("toolu_b"))]),
        "`tool_result` blocks must come first",
    ),
    (
        "unknown tool_result id",
        body(messages=[*_ok_pair(), user(result("toolu_a"), result("toolu_b"), result("toolu_zz"))]),
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_zz",
    ),
    (
        "thinking changed",
        body(messages=[user("q"), assistant({**thinking("plan A"), "thinking": "plan B"}, "a"), user("more")]),
        "Invalid `signature` in `thinking` block",
    ),
    (
        "thinking unsigned",
        body(messages=[user("q"), assistant(thinking("plan A", signature=""), "a"), user("more")]),
        "thinking.signature: Field required",
    ),
    ("empty text block", body(messages=[user("")]), "text content blocks must be non-empty"),
    ("prefill on 4.6+", body(messages=[user("q"), assistant("Thought 1:")]), PREFILL_REJECTED),
    (
        "temperature on Opus 4.7",
        body(model="claude-opus-4-7", temperature=0.0),
        "`temperature` is deprecated for this model.",
    ),
    ("top_p on Sonnet 5.5", body(top_p=0.9), "`top_p` is deprecated for this model."),
    (
        "budgeted thinking on Opus 4.7",
        body(model="claude-opus-4-7", thinking={"type": "enabled", "budget_tokens": 1024}),
        '"thinking.type.enabled" is not supported',
    ),
    (
        "adaptive thinking on Haiku 4.5",
        body(model="claude-haiku-4-5", thinking={"type": "adaptive"}),
        '"thinking.type.adaptive" is not supported',
    ),
    (
        "whitespace stop",
        body(stop_sequences=["\nObservation", "\n"]),
        "stop_sequences.1: each stop sequence must contain",
    ),
    ("empty stop", body(stop_sequences=[""]), "stop_sequences.0"),
    (
        "prefill trailing whitespace",
        body(model="claude-haiku-4-5", messages=[user("q"), assistant("Thought 1: ")]),
        "cannot end with trailing whitespace",
    ),
    (
        "prefill with thinking",
        body(
            model="claude-haiku-4-5",
            messages=[user("q"), assistant("T")],
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
        "prefill is not supported when thinking",
    ),
    (
        "temperature with thinking",
        body(model="claude-sonnet-4-6", temperature=0.0, thinking={"type": "adaptive"}),
        "may only be set to 1 when thinking",
    ),
    (
        "forced tool on Opus 5.5",
        body(
            model="claude-opus-5-5",
            tools=[{"name": "s", "input_schema": {"type": "object"}}],
            tool_choice={"type": "any"},
        ),
        "forced tool use",
    ),
    (
        "five cache breakpoints",
        body(
            messages=[
                user(*({"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)))
            ]
        ),
        "A maximum of 4 blocks with cache_control",
    ),
    (
        "a 1-hour breakpoint after a 5-minute one",
        body(
            messages=[
                user(
                    {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                )
            ]
        ),
        "must not come after one with ttl '5m'",
    ),
]


@pytest.mark.parametrize(("name", "request_body", "message"), RULES, ids=[r[0] for r in RULES])
def test_rule_violations_get_the_api_error_shape(
    server: MessagesServer, name: str, request_body: dict[str, Any], message: str
) -> None:
    asked: list[dict[str, Any]] = []
    server.responder = lambda request: asked.append(request) or Reply.text("never sent")
    status, headers, text = post(server, request_body)
    error = json.loads(text)
    assert status == 400, name
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert message in error["error"]["message"]
    assert error["request_id"] == headers["request-id"]
    assert asked == []  # rejected before any reply is taken, like the real API


ACCEPTED = [
    ("answered tool calls", body(messages=[*_ok_pair(), user(result("toolu_b"), result("toolu_a"), "go on")])),
    (
        "thinking sent back unchanged",
        body(messages=[user("q"), assistant(thinking("plan A"), tool_use("toolu_t")), user(result("toolu_t"))]),
    ),
    ("prefill on Haiku 4.5", body(model="claude-haiku-4-5", messages=[user("q"), assistant("Thought 1:")])),
    ("temperature on Sonnet 4.6", body(model="claude-sonnet-4-6", temperature=0.0, top_p=0.5)),
    (
        "budgeted thinking on Sonnet 4.6",
        body(model="claude-sonnet-4-6", thinking={"type": "enabled", "budget_tokens": 1024}),
    ),
    ("non-whitespace stops", body(stop_sequences=["\nObservation 1:", " x"])),
]


@pytest.mark.parametrize(("name", "request_body"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_valid_requests_are_accepted(server: MessagesServer, name: str, request_body: dict[str, Any]) -> None:
    server.enqueue(Reply.text("fine"))
    status, _, text = post(server, request_body)
    assert status == 200, f"{name}: {text}"


@pytest.mark.parametrize("model", known_models())
def test_model_rules_come_from_the_capability_table(server: MessagesServer, model: str) -> None:
    info = model_info(model)
    server.responder = lambda _: Reply.text("ok")
    prefill = post(server, body(model=model, messages=[user("q"), assistant("A:")]))[0]
    sampling = post(server, body(model=model, temperature=0.5))[0]
    assert (prefill == 200) == info.prefill
    assert (sampling == 200) == info.sampling


def test_omitted_thinking_is_empty_but_signed_and_can_come_back(server: MessagesServer) -> None:
    server.enqueue(Reply((ThinkingBlock("secret plan", ""), ToolUseBlock("toolu_1", "search", {"entity": "x"}))))
    server.enqueue(Reply.text("done"))
    think = {"type": "adaptive", "display": "omitted"}
    status, _, text = post(server, body(thinking=think))
    content = json.loads(text)["content"]
    assert status == 200 and content[0]["thinking"] == "" and content[0]["signature"]
    again = body(
        messages=[user("Hi"), {"role": "assistant", "content": content}, user(result("toolu_1"))], thinking=think
    )
    assert post(server, again)[0] == 200


@pytest.mark.parametrize(
    ("fault", "status", "error_type", "header"),
    [
        (Fault.rate_limited(0.5), 429, "rate_limit_error", "retry-after"),
        (Fault.overloaded(), 529, "overloaded_error", "retry-after-ms"),
        (Fault.server_error(), 500, "api_error", None),
    ],
)
def test_faults(server: MessagesServer, fault: Fault, status: int, error_type: str, header: str | None) -> None:
    server.enqueue(fault)
    got, headers, text = post(server, body())
    assert got == status and json.loads(text)["error"]["type"] == error_type
    if header:
        assert header in headers


def test_script_exhausted_and_unused_are_loud() -> None:
    with MessagesServer([Reply.text("a"), Reply.text("b")]) as srv:
        post(srv, body())
        with pytest.raises(AssertionError, match="1 scripted response"):
            srv.assert_complete()
        post(srv, body())
        status, _, text = post(srv, body())
        assert status == 400 and "no response left" in text


def test_responder_sees_the_request(server: MessagesServer) -> None:
    server.responder = lambda request: Reply.text(f"you said {request['messages'][-1]['content'][0]['text']}")
    _, _, text = post(server, body(messages=[user("ping")]))
    assert json.loads(text)["content"][0]["text"] == "you said ping"


def test_prompt_cache_simulation(server: MessagesServer) -> None:
    server.cache.min_tokens = 0  # the mechanics; the documented minimum is tested below
    server.responder = lambda _: Reply.text("ok")
    cached = {"type": "text", "text": "A long few-shot prompt. " * 40, "cache_control": {"type": "ephemeral"}}
    first = json.loads(post(server, body(system=[cached]))[2])["usage"]
    second = json.loads(post(server, body(system=[cached], messages=[user("Another question")]))[2])["usage"]
    uncached = json.loads(post(server, body(messages=[user("Hi")]))[2])["usage"]
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0 and second["input_tokens"] > 0
    assert uncached["cache_read_input_tokens"] == uncached["cache_creation_input_tokens"] == 0


def test_the_cache_lifetimes_expire_and_bill_as_documented(server: MessagesServer) -> None:
    """An entry lives 5 minutes (ttl "1h": an hour), a read renews it; the usage breaks the writes
    down by lifetime (``cache_creation``), as the API's does."""
    server.cache.min_tokens = 0
    now = [0.0]
    server.cache.clock = lambda: now[0]
    server.responder = lambda _: Reply.text("ok")
    text = "A long few-shot prompt. " * 40

    def usage(ttl: str | None) -> dict:
        control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        return json.loads(
            post(server, body(system=[{"type": "text", "text": text + str(ttl), "cache_control": control}]))[2]
        )["usage"]

    for ttl, lives in ((None, 300), ("1h", 3600)):
        written = usage(ttl)
        long = written["cache_creation"]["ephemeral_1h_input_tokens"]
        assert long == (written["cache_creation_input_tokens"] if ttl else 0) and written["cache_creation"][
            "ephemeral_5m_input_tokens"
        ] == (0 if ttl else written["cache_creation_input_tokens"])
        now[0] += lives - 1
        assert usage(ttl)["cache_read_input_tokens"] == written["cache_creation_input_tokens"]  # renewed now
        now[0] += lives - 1
        assert usage(ttl)["cache_read_input_tokens"] > 0
        now[0] += lives + 1
        assert usage(ttl)["cache_read_input_tokens"] == 0  # expired: written again


def _usage_of(server: MessagesServer, blocks: list[dict], model: str = "claude-sonnet-4-6") -> dict:
    request = {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": blocks}]}
    return json.loads(post(server, request)[2])["usage"]


def _block(text: str, cached: bool = False) -> dict:
    block = {"type": "text", "text": text}
    return {**block, "cache_control": {"type": "ephemeral"}} if cached else block


def test_cache_follows_the_documented_rules(server: MessagesServer) -> None:
    from react_bench.models.capabilities import min_cache_tokens

    server.responder = lambda _: Reply.text("ok")
    small = [_block("word " * 100, cached=True)]  # far below Sonnet 4.6's 2,048-token minimum
    assert min_cache_tokens("claude-sonnet-4-6") == 2048
    first, again = _usage_of(server, small), _usage_of(server, small)
    assert first["cache_creation_input_tokens"] == again["cache_read_input_tokens"] == 0  # never cached
    big = "A long stable instruction with exemplars. " * 400  # well above the minimum
    steps = [_block(f"step {i} " * 30) for i in range(25)]
    first = _usage_of(server, [_block(big), *steps[:2], _block("tail", cached=True)])
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
    # the next request extends the prefix by one block: its breakpoint finds the last write one block back
    second = _usage_of(server, [_block(big), *steps[:2], _block("tail"), steps[2], _block("end", cached=True)])
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    # more than 20 blocks after the last write: the lookback does not reach it, nothing is read
    far = _usage_of(server, [_block(big), *steps[:2], _block("tail"), *steps[3:25], _block("x", cached=True)])
    assert far["cache_read_input_tokens"] == 0
    # a prefix that ends inside a block never matches: the same text cut differently
    merged = _usage_of(server, [_block(big + "step 0 " * 30), steps[1], _block("tail", cached=True)])
    assert merged["cache_read_input_tokens"] == 0
