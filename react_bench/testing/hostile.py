"""Malformed Messages API streams, for tests: what a faulty server or a proxy before it can send.

Each shape is built from a good ``Reply`` to the request (so what comes before and after the
fault is a real answer) and says what the client must make of it (``Shape.outcome``):

- ``retried``: the response cannot be read or breaks the protocol (a data line that is not
  JSON, bytes that are not UTF-8, ``null`` where an object or a string belongs, no usage, an
  impossible token count, a ``Content-Encoding`` the body does not have): a retryable error,
  then an error recorded on the example once the retries are spent; never an abort;
- ``answered``: the message is complete and valid, and what follows its ``message_stop`` is
  not part of it (the API's stream ends there): used as it is.

``SHAPES`` has them all; ``stream(shape, body, reply)`` gives the server's spec.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from react_bench.testing.sse import CacheSimulator, RawStream, Reply, build_message, encode_sse, stream_events

Outcome = Literal["retried", "answered"]
Item = tuple[str, dict[str, Any]] | bytes  # an SSE event, or raw bytes sent as they are
Transform = Callable[[list[Item]], list[Item]]


@dataclass(frozen=True)
class Shape:
    name: str
    transform: Transform
    outcome: Outcome = "retried"
    headers: Mapping[str, str] = field(default_factory=dict)


def stream(shape: Shape, body: Mapping[str, Any], reply: Reply) -> RawStream:
    message = build_message(reply, body, number=1, cache=CacheSimulator(0))
    items: list[Item] = list(stream_events(message))
    data = b"".join(i if isinstance(i, bytes) else encode_sse(*i) for i in shape.transform(items))
    return RawStream(data, dict(shape.headers))


def _index(items: list[Item], name: str, *, delta: str | None = None) -> int:
    for k, item in enumerate(items):
        if isinstance(item, tuple) and item[0] == name:
            if delta is None or item[1].get("delta", {}).get("type") == delta:
                return k
    raise ValueError(f"no {name} event")


def _insert_after(name: str, raw: bytes) -> Transform:
    def transform(items: list[Item]) -> list[Item]:
        k = _index(items, name)
        return [*items[: k + 1], raw, *items[k + 1 :]]

    return transform


def _edit(name: str, edit: Callable[[dict[str, Any]], None], *, delta: str | None = None) -> Transform:
    """Change the payload of the first ``name`` event in place (a deep copy of it)."""

    def transform(items: list[Item]) -> list[Item]:
        k = _index(items, name, delta=delta)
        item = items[k]
        assert isinstance(item, tuple)
        payload = json.loads(json.dumps(item[1]))
        edit(payload)
        return [*items[:k], (item[0], payload), *items[k + 1 :]]

    return transform


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(payload: dict[str, Any]) -> None:
        node = payload
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _drop(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def edit(payload: dict[str, Any]) -> None:
        node = payload
        for key in path[:-1]:
            node = node[key]
        node.pop(path[-1], None)

    return edit


def _both(*transforms: Transform) -> Transform:
    def transform(items: list[Item]) -> list[Item]:
        for t in transforms:
            items = t(items)
        return items

    return transform


def _twice(items: list[Item]) -> list[Item]:
    return [*items, *items]


def _non_utf8_delta(items: list[Item]) -> list[Item]:
    k = _index(items, "content_block_delta")
    item = items[k]
    assert isinstance(item, tuple)
    raw = json.dumps(item[1]).encode().replace(b'"delta": {', b'"delta": {"x": "\xff\xfe", ', 1)
    return [*items[:k], b"event: content_block_delta\ndata: " + raw + b"\n\n", *items[k + 1 :]]


_NOT_JSON = b"event: content_block_delta\ndata: {not json\n\n"
_TOO_DEEP = b"event: content_block_delta\ndata: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
_COUNTS: dict[str, Any] = {
    "negative": -5,
    "10^15": 10**15,
    "41 digits": 10**40,
    "fractional": 1.5,
    "null": None,
    "a word": "twelve",
    "the string 1e40": "1e40",
    "an object": {"n": 1},
}

SHAPES: tuple[Shape, ...] = (
    Shape("a data line that is not JSON, before message_stop", _insert_after("message_start", _NOT_JSON)),
    Shape("a data line nested past the parser's depth", _insert_after("message_start", _TOO_DEEP)),
    Shape("a data line that is not JSON, after message_stop", _insert_after("message_stop", _NOT_JSON), "answered"),
    Shape("bytes that are not UTF-8 inside a delta", _non_utf8_delta),
    Shape(
        "raw bytes that are not UTF-8 after message_stop",
        _insert_after("message_stop", b"\xff\xfe\xfd\n\n"),
        "answered",
    ),
    Shape("message null", _edit("message_start", _set(("message",), None))),
    Shape("message.usage null", _edit("message_start", _set(("message", "usage"), None))),
    Shape("message.id null", _edit("message_start", _set(("message", "id"), None))),
    Shape("content_block null", _edit("content_block_start", _set(("content_block",), None))),
    Shape("delta null", _edit("content_block_delta", _set(("delta",), None))),
    Shape("a delta's text null", _edit("content_block_delta", _set(("delta", "text"), None), delta="text_delta")),
    Shape("a delta's index a word", _edit("content_block_delta", _set(("index",), "first"))),
    # the SDK's own validation reads a count sent as the string "12" as 12: it is used as it read it
    Shape("output_tokens the string 12", _edit("message_delta", _set(("usage", "output_tokens"), "12")), "answered"),
    Shape("message_delta's delta null", _edit("message_delta", _set(("delta",), None))),
    Shape("message_delta's usage null", _edit("message_delta", _set(("usage",), None))),
    Shape(
        "no usage at all",
        _both(_edit("message_start", _drop(("message", "usage"))), _edit("message_delta", _drop(("usage",)))),
    ),
    *(
        Shape(f"output_tokens {label}", _edit("message_delta", _set(("usage", "output_tokens"), value)))
        for label, value in _COUNTS.items()
    ),
    *(
        Shape(f"input_tokens {label}", _edit("message_start", _set(("message", "usage", "input_tokens"), value)))
        for label, value in _COUNTS.items()
    ),
    Shape(
        "cache_read_input_tokens negative",
        _edit("message_start", _set(("message", "usage", "cache_read_input_tokens"), -1)),
    ),
    Shape("Content-Encoding: gzip on a plain body", lambda items: items, headers={"content-encoding": "gzip"}),
    Shape("Content-Encoding: deflate on a plain body", lambda items: items, headers={"content-encoding": "deflate"}),
    Shape("a second complete message after message_stop", _twice, "answered"),
)
