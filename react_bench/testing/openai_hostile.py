"""What a misbehaving OpenAI-compatible server (llama.cpp, vLLM, Ollama, a proxy) sends, for tests.

Each shape is built from the oracle's good stream for the request (``openai_server.oracle_chunks``),
so what comes before and after the fault is a real answer, and says what the client must make of it
(``Shape.outcome``):

- ``retried``: the response cannot be read, breaks the protocol's shapes, carries nothing a server
  meant, or reports a failure (a data line that is not JSON or not UTF-8, an ``{"error": ...}``
  object, ``choices`` null, a usage that is not token counts, an empty 200, a page, a plain JSON
  completion, a stream cut before its finish reason, keep-alives past the deadline, a 500): retried,
  so the example's answer is right and ``retries`` counts it;
- ``answered``: valid, used as it is (a second choice is dropped; a stream without usage leaves the
  call's usage unknown; a count the SDK read as a number, the string ``"30"``, is taken as read;
  ``eos_token`` is a natural end);
- ``refused``: ``content_filter``, on a tool call or mid-answer: the example ends ``refused``;
- ``error``: a finish reason nobody defined: the example ends ``error``, not retried;
- ``cut``: ``length`` in the middle of an action: the call's stop reason is ``max_tokens`` (a cut
  tool call is not run as if it were whole) and the episode goes on.

``SHAPES`` has them all, each for the completions and the chat stream alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from react_bench.testing.openai_server import Chunks, KeepAlive, Raw, Spec

Outcome = Literal["retried", "answered", "refused", "error", "cut"]
Build = Callable[[list[dict[str, Any]]], Spec]  # the oracle's chunks -> what is sent


@dataclass(frozen=True)
class Shape:
    name: str
    build: Build
    outcome: Outcome = "retried"


def _insert(at: int, item: Any) -> Build:
    return lambda chunks: Chunks((*chunks[:at], item, *chunks[at:]))


def _finish_at(chunks: list[dict[str, Any]]) -> int:
    return next(k for k, c in enumerate(chunks) if c["choices"] and c["choices"][0].get("finish_reason"))


def _edit_choice(where: Callable[[list[dict[str, Any]]], int], **values: Any) -> Build:
    def build(chunks: list[dict[str, Any]]) -> Spec:
        k = where(chunks)
        chunk = json.loads(json.dumps(chunks[k]))
        chunk["choices"][0].update(values)
        return Chunks((*chunks[:k], chunk, *chunks[k + 1 :]))

    return build


def _set_usage(**usage: Any) -> Build:
    def build(chunks: list[dict[str, Any]]) -> Spec:
        last = {**chunks[-1], "usage": usage.get("usage", {**chunks[-1]["usage"], **usage})}
        return Chunks((*chunks[:-1], last))

    return build


def _second_choice(chunks: list[dict[str, Any]]) -> Spec:
    """Every chunk also carries choice 1 with other text (n=2, or a proxy fanning out)."""
    out = []
    for chunk in chunks:
        other = []
        for choice in chunk["choices"]:
            twin = json.loads(json.dumps(choice)) | {"index": 1}
            if "text" in twin:
                twin["text"] = "ZZZ wrong ZZZ" if twin["text"] else ""
            elif (twin.get("delta") or {}).get("content"):
                twin["delta"]["content"] = "ZZZ wrong ZZZ"
            other.append(twin)
        out.append({**chunk, "choices": chunk["choices"] + other})
    return Chunks(tuple(out))


def _cut_mid_action(chunks: list[dict[str, Any]]) -> Spec:
    """Half the content, then ``finish_reason: length`` (and the usage)."""
    k = _finish_at(chunks)
    content = chunks[1:k]
    ended = json.loads(json.dumps(chunks[k]))
    ended["choices"][0]["finish_reason"] = "length"
    return Chunks((chunks[0], *content[: max(1, len(content) // 2)], ended, chunks[-1]))


_ERROR = {"error": {"message": "the generation failed", "type": "server_error", "code": 500}}
_HTML = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"
_PLAIN = {
    "id": "cmpl-1",
    "object": "text_completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "text": "Paris", "finish_reason": "stop"}],
}

SHAPES: tuple[Shape, ...] = (
    Shape("a data line that is not JSON", _insert(1, "not json {")),
    Shape("an HTML line in the stream", _insert(2, "<html><body>upstream error</body></html>")),
    Shape("bytes that are not UTF-8", _insert(1, b"\xff\xfe\x80 \xc3")),
    Shape("JSON nested past the parser's depth", _insert(1, "[" * 100_000 + "]" * 100_000)),
    Shape("a data line that is JSON null", _insert(1, "null")),
    Shape("an error object mid-stream", _insert(2, _ERROR)),
    Shape("an error object first", _insert(0, _ERROR)),
    Shape("choices null", _insert(1, {"id": "x", "object": "chunk", "created": 1, "model": "m", "choices": None})),
    Shape("choices a string", _insert(1, {"id": "x", "object": "chunk", "created": 1, "model": "m", "choices": "no"})),
    Shape("a choice's text a number", _edit_choice(lambda c: 1, text=12, delta={"content": 12})),
    Shape("finish_reason a number", _edit_choice(_finish_at, finish_reason=7)),
    Shape("usage a string", _set_usage(usage="lots")),
    Shape("usage negative", _set_usage(prompt_tokens=-5)),
    Shape("usage huge", _set_usage(completion_tokens=10**15)),
    Shape("usage fractional", _set_usage(prompt_tokens=12.5)),
    Shape("usage null counts", _set_usage(prompt_tokens=None)),
    Shape("cached above prompt", _set_usage(prompt_tokens_details={"cached_tokens": 5000})),
    Shape("an empty 200", lambda chunks: Raw(b"")),
    Shape("an HTML page", lambda chunks: Raw(_HTML, content_type="text/html")),
    Shape("a plain JSON completion", lambda chunks: Raw(json.dumps(_PLAIN).encode(), content_type="application/json")),
    Shape("a stream cut before its finish", lambda chunks: Chunks(tuple(chunks[:2]), done=False)),
    Shape("keep-alives past the deadline", lambda chunks: KeepAlive(for_s=30)),
    Shape("a 500", lambda chunks: Raw(json.dumps(_ERROR).encode(), status=500, content_type="application/json")),
    Shape(
        "a 429 with retry-after",
        lambda chunks: Raw(
            json.dumps(_ERROR).encode(), status=429, content_type="application/json", headers=(("retry-after", "0.01"),)
        ),
    ),
    Shape("finish_reason abort", _edit_choice(_finish_at, finish_reason="abort")),
    Shape("a second choice", _second_choice, "answered"),
    # the SDK reads the string "30" as 30, as the Anthropic SDK does: taken as it read it
    Shape("usage a string count", _set_usage(completion_tokens="30"), "answered"),
    Shape("no usage", lambda chunks: Chunks(tuple(chunks[:-1])), "answered"),
    Shape("finish_reason eos_token", _edit_choice(_finish_at, finish_reason="eos_token"), "answered"),
    Shape("content_filter", _edit_choice(_finish_at, finish_reason="content_filter"), "refused"),
    Shape("an unknown finish_reason", _edit_choice(_finish_at, finish_reason="banana"), "error"),
    Shape("length mid-action", _cut_mid_action, "cut"),
)
