"""The response side of the Anthropic Messages wire format, for the local test server.

What the real API does and this module reproduces:
- a streamed response is the SSE sequence ``message_start``, then per block
  ``content_block_start`` / ``content_block_delta``* / ``content_block_stop`` (a ``ping``
  after the first block start), ``message_delta`` (stop reason, cumulative usage),
  ``message_stop``. Blocks start empty; text, thinking and tool input arrive as deltas; tool
  input JSON arrives as raw fragments (the first one empty) that may end anywhere, even in
  the middle of an escape such as ``\\u00e9``, because the JSON is ASCII-escaped here.
- thinking signatures are opaque strings that the API checks when a thinking block comes
  back. Here a signature is an HMAC over the text as emitted, with a nonce, so the server
  can verify a block it signed without keeping state (and a changed text fails).
- usage: input tokens are split into ``input_tokens``, ``cache_creation_input_tokens`` and
  ``cache_read_input_tokens``; ``CacheSimulator`` decides the split from ``cache_control``
  breakpoints the way the prompt cache does (prefix up to a breakpoint; a later request
  reads the longest prefix written before). Token counts are estimates (4 chars a token).
- the response specs a test scripts (``Reply``, ``Fault``, ``Dropped``, ``StreamError``,
  ``RawStream``) and ``build_message``, which turns a ``Reply`` into the response object
  (stop sequences cut the text like the API does, thinking signed, usage filled in).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from react_bench.models.stopping import cut_at_stop
from react_bench.types import ContentBlock, StopReason, TextBlock, ThinkingBlock, ToolUseBlock, Usage, block_to_dict

_SECRET = b"react-bench local messages server"

SseEvent = tuple[str, dict[str, Any]]


def sign_thinking(text: str) -> str:
    nonce = os.urandom(8)
    digest = hmac.new(_SECRET, nonce + text.encode(), hashlib.sha256).digest()
    return base64.b64encode(nonce + digest).decode()


def signature_matches(signature: str, text: str) -> bool:
    try:
        raw = base64.b64decode(signature.encode(), validate=True)
    except (ValueError, TypeError):
        return False
    nonce, digest = raw[:8], raw[8:]
    expected = hmac.new(_SECRET, nonce + text.encode(), hashlib.sha256).digest()
    return len(raw) == 40 and hmac.compare_digest(digest, expected)


def estimate_tokens(value: Any) -> int:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return max(1, len(text) // 4)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_json(usage: Usage, output_tokens: int | None = None) -> dict[str, Any]:
    data = api_usage(usage)
    if output_tokens is not None:
        data["output_tokens"] = output_tokens
    return data


def stream_events(message: Mapping[str, Any], *, chunk: int = 4, json_chunk: int = 3) -> list[SseEvent]:
    """The SSE events that stream ``message`` (a complete Messages API response object)."""
    usage = Usage.from_dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = _usage_json(usage, output_tokens=1)
    events: list[SseEvent] = [("message_start", {"type": "message_start", "message": start})]
    if not message["content"]:
        events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(message["content"]):
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": _empty(block)})
        )
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in _deltas(block, chunk, json_chunk)
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message.get("stop_sequence")}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": _usage_json(usage)}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _empty(block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    if kind == "redacted_thinking":
        return dict(block)
    raise ValueError(f"the server cannot stream a {kind!r} block")


def _deltas(block: Mapping[str, Any], chunk: int, json_chunk: int) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "text":
        return [{"type": "text_delta", "text": p} for p in _pieces(block["text"], chunk)]
    if kind == "thinking":
        out = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], chunk)]
        return out + [{"type": "signature_delta", "signature": block["signature"]}]
    if kind == "tool_use":
        # ASCII escapes make "é" six characters, so small fragments split inside escapes.
        text = json.dumps(block["input"], ensure_ascii=True)
        return [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(text, json_chunk)]]
    return []


def encode_sse(name: str, payload: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


def parse_sse(text: str) -> list[SseEvent]:
    """Parse an SSE body into (event name, JSON payload) pairs (events without data skipped)."""
    events: list[SseEvent] = []
    name, data = "", cast(list[str], [])
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                events.append((name or "message", json.loads("\n".join(data))))
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return events


LOOKBACK_BLOCKS = 20


class CacheSimulator:
    """Prompt-cache bookkeeping as Anthropic documents it: which part of a request's input is
    read from the cache, written to it, or plain input.

    - The prompt is the block sequence tools, system, messages (block by block). A breakpoint
      is a block with ``cache_control`` (or the last block, for a top-level ``cache_control``).
    - Each breakpoint's prefix is written when it is at least the model's minimum cacheable
      length (``min_tokens``; None: ``models.capabilities.min_cache_tokens`` of the request's
      model). A shorter one is simply not cached, and not billed as a write.
    - Messages are cached under the request's ``tool_choice`` and thinking settings: a change of
      either invalidates the cached messages (tools and system stay cached), as documented.
    - A request reads the longest previously written prefix that ends at a block boundary at
      most 20 blocks before one of its breakpoints; a prefix that ends inside a block never
      matches (hashes are per block boundary).
    - Usage: read tokens (the hit prefix), written tokens (from there to the last written
      breakpoint), and plain input tokens (the rest), reported separately.
    """

    def __init__(self, min_tokens: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_tokens = min_tokens
        self.clock = clock  # a test may move time on: entries live 5 minutes, or 1 hour (ttl "1h")
        self._written: dict[str, tuple[float, float]] = {}  # prefix hash -> (when it expires, its lifetime)

    def usage(self, body: Mapping[str, Any]) -> Usage:
        from react_bench.models.capabilities import min_cache_tokens

        now = self.clock()
        segments = list(_segments(body))
        tokens = [estimate_tokens(_strip_cc(s)) for s in segments]
        hashes, running = [], hashlib.sha256(str(body.get("model")).encode())
        head = len(segments) - sum(len(_blocks(m)) for m in body.get("messages") or [])
        for i, segment in enumerate(segments):
            if i == head:  # a change of tool_choice or of the thinking settings drops the cached messages
                running.update(json.dumps([body.get("tool_choice"), body.get("thinking")], sort_keys=True).encode())
            running.update(json.dumps(_strip_cc(segment), sort_keys=True).encode())
            hashes.append(running.copy().hexdigest())
        lifetimes = {i: _lifetime(s.get("cache_control")) for i, s in enumerate(segments) if isinstance(s, Mapping)}
        marks = sorted(i for i, life in lifetimes.items() if life)
        if body.get("cache_control") and segments:
            lifetimes[len(segments) - 1] = _lifetime(body["cache_control"])
            marks = sorted({*marks, len(segments) - 1})
        hit = -1
        for mark in marks:
            for end in range(mark, max(-1, mark - LOOKBACK_BLOCKS - 1), -1):
                expires, life = self._written.get(hashes[end], (-math.inf, 0.0))
                if expires > now:
                    hit = max(hit, end)
                    self._written[hashes[end]] = (now + life, life)  # a read refreshes the entry, free
                    break
        minimum = self.min_tokens if self.min_tokens is not None else min_cache_tokens(str(body.get("model")))
        prefix = [sum(tokens[: i + 1]) for i in range(len(tokens))]
        written = [m for m in marks if prefix[m] >= minimum]
        for m in written:
            self._written[hashes[m]] = (now + lifetimes[m], lifetimes[m])
        read = prefix[hit] if hit >= 0 else 0
        created = long = 0
        start = read
        for m in written:
            if m > hit and prefix[m] > start:  # each breakpoint's new segment, at its lifetime's rate
                created += prefix[m] - start
                long += prefix[m] - start if lifetimes[m] >= HOUR_S else 0
                start = prefix[m]
        return Usage(
            input_tokens=sum(tokens) - read - created,
            cache_creation_input_tokens=created,
            cache_read_input_tokens=read,
            cache_creation_1h_input_tokens=long,
        )


FIVE_MINUTES_S = 300.0
HOUR_S = 3600.0


def _lifetime(cache_control: Any) -> float:
    """Seconds a ``cache_control`` keeps its prefix (0: no breakpoint)."""
    if not isinstance(cache_control, Mapping):
        return 0.0
    return HOUR_S if cache_control.get("ttl") == "1h" else FIVE_MINUTES_S


def api_usage(usage: Usage) -> dict[str, Any]:
    """``usage`` as the API sends it: the cache writes also broken down by lifetime."""
    data: dict[str, Any] = usage.to_dict()
    data.pop("cache_creation_1h_input_tokens", None)
    long = usage.cache_creation_1h_input_tokens
    data["cache_creation"] = {
        "ephemeral_5m_input_tokens": usage.cache_creation_input_tokens - long,
        "ephemeral_1h_input_tokens": long,
    }
    return data


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """A request's whole input in tokens, as the cache simulator counts them."""
    return sum(estimate_tokens(_strip_cc(s)) for s in _segments(body))


def _segments(body: Mapping[str, Any]) -> Iterable[Any]:
    yield from body.get("tools") or []
    system = body.get("system")
    if isinstance(system, str):
        yield system
    elif system:
        yield from system
    for message in body.get("messages") or []:
        yield from ({"role": message.get("role"), **block} for block in _blocks(message))  # the role is in the prefix


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _strip_cc(segment: Any) -> Any:
    if isinstance(segment, Mapping):
        return {k: v for k, v in segment.items() if k != "cache_control"}
    return segment


# ------------------------------------------- response specs (what a test scripts the server to answer)


@dataclass(frozen=True)
class Reply:
    """A model response. Thinking signatures are made by the server; tool ids may be empty."""

    content: tuple[ContentBlock, ...]
    stop_reason: StopReason | None = None  # None: tool_use if a tool is called, else end_turn
    usage: Usage | None = None  # None: estimated, with the prompt-cache simulation
    model: str | None = None  # the model id the response reports (the API's snapshot); None: the request's

    @staticmethod
    def text(text: str) -> Reply:
        return Reply((TextBlock(text),))


@dataclass(frozen=True)
class Fault:
    """An HTTP error answer (429 / 529 / 500 ...), in the API's error shape."""

    status: int
    error_type: str
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def rate_limited(retry_after_s: float = 0.01) -> Fault:
        return Fault(429, "rate_limit_error", "Rate limited", {"retry-after": str(retry_after_s)})

    @staticmethod
    def overloaded(retry_after_ms: int | None = 5) -> Fault:
        headers = {} if retry_after_ms is None else {"retry-after-ms": str(retry_after_ms)}
        return Fault(529, "overloaded_error", "Overloaded", headers)

    @staticmethod
    def server_error() -> Fault:
        return Fault(500, "api_error", "Internal server error", {"retry-after-ms": "5"})


@dataclass(frozen=True)
class Dropped:
    """Stream ``after_events`` SSE events of ``reply``, then drop the connection."""

    reply: Reply
    after_events: int = 3


@dataclass(frozen=True)
class Truncated:
    """Stream ``after_events`` SSE events of ``reply``, then end the 200 response cleanly,
    without ``message_stop`` (a proxy or load balancer cutting the body short)."""

    reply: Reply
    after_events: int = 3


@dataclass(frozen=True)
class StreamError:
    """Stream ``after_events`` SSE events of ``reply``, then an ``error`` event."""

    reply: Reply
    after_events: int = 3
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class RawStream:
    """SSE bytes replayed verbatim (a recorded stream, or a malformed one: ``testing.hostile``),
    with any extra response headers (a ``Content-Encoding`` that lies about the body)."""

    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stalled:
    """Stream ``after_events`` SSE events of ``reply``, then a ``ping`` every ``interval_s``
    for ever (until the client hangs up or the server stops): bytes keep coming, a message never."""

    reply: Reply
    after_events: int = 1
    interval_s: float = 0.05


Spec = Reply | Fault | Dropped | Truncated | StreamError | RawStream | Stalled


def build_message(reply: Reply, body: Mapping[str, Any], *, number: int, cache: CacheSimulator) -> dict[str, Any]:
    """The complete response object for ``reply`` to ``body`` (stop sequences applied, thinking signed)."""
    omitted = (body.get("thinking") or {}).get("display") == "omitted"
    stops = [s for s in body.get("stop_sequences") or [] if isinstance(s, str) and s]
    content: list[dict[str, Any]] = []
    stop_reason, stop_sequence = reply.stop_reason, None
    for k, block in enumerate(reply.content):
        if isinstance(block, TextBlock):
            text, hit = cut_at_stop(block.text, stops)
            if text:
                content.append({"type": "text", "text": text})
            if hit is not None:
                stop_reason, stop_sequence = StopReason.STOP_SEQUENCE, hit
                break  # the model stops here: later blocks are never generated
        elif isinstance(block, ThinkingBlock):
            shown = "" if omitted else block.thinking  # display "omitted": empty text, still signed
            content.append({"type": "thinking", "thinking": shown, "signature": sign_thinking(shown)})
        elif isinstance(block, ToolUseBlock):
            tool_id = block.id or f"toolu_local_{number:04d}_{k}"
            content.append({"type": "tool_use", "id": tool_id, "name": block.name, "input": dict(block.input)})
        else:
            content.append(block_to_dict(block))
    if stop_reason is None:
        has_tool = any(b["type"] == "tool_use" for b in content)
        stop_reason = StopReason.TOOL_USE if has_tool else StopReason.END_TURN
    usage = reply.usage
    if usage is None:
        output = sum(estimate_tokens(b) for b in content) if content else 1
        usage = Usage(**{**cache.usage(body).to_dict(), "output_tokens": output})
    return {
        "id": f"msg_local_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": reply.model or body["model"],
        "content": content,
        "stop_reason": stop_reason.value,
        "stop_sequence": stop_sequence,
        "usage": api_usage(usage),
    }
