"""Pure assembly of ``StreamEvent`` fragments into one ``ModelResponse``.

No I/O, no provider types: tested on recorded streams. Tool input JSON is concatenated
as raw text and parsed once at the block's stop, so a fragment may end anywhere, even in
the middle of an escape sequence or a multi-byte character's ``\\u`` escape.

No model output is allowed to break a run downstream:
- tool input that is not valid JSON, holds NaN / Infinity, an integer too long to convert,
  nesting too deep to parse, or is not an object becomes ``ToolUseBlock(input={},
  input_error=...)``; the loop answers that call with an ``is_error`` result;
- lone surrogates (``"\\ud800"`` in the JSON: text no encoder can write) in text and tool
  input are replaced by U+FFFD and counted (``ModelResponse.replaced_chars``). Thinking is
  never edited: it goes back to the API verbatim with its signature.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from react_bench.events import (
    BlockStart,
    BlockStop,
    MessageStart,
    MessageStop,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
)
from react_bench.types import (
    ContentBlock,
    ModelResponse,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)


class StreamProtocolError(ValueError):
    """The stream broke the event grammar (delta before start, bad tool JSON, ...)."""


# The most text one response may carry (text, thinking and tool input together). A 64k-token
# answer is some 300k characters; past this a server is not sending a model's answer, and
# holding it would cost memory without bound (docs/security.md).
MAX_RESPONSE_CHARS = 4_000_000
TOO_LONG = f"the response passed {MAX_RESPONSE_CHARS:,} characters, more than any model's answer: cut off"


def delta_chars(event: StreamEvent) -> int:
    """The characters of text, thinking or tool input an event carries (what the cap counts)."""
    match event:
        case TextDelta(text=text) | ThinkingDelta(thinking=text) | ToolInputDelta(partial_json=text):
            return len(text)
        case _:
            return 0


@dataclass
class _OpenBlock:
    start: BlockStart
    parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)


@dataclass
class ResponseCollector:
    id: str = ""
    model: str = ""
    usage: Usage = Usage()
    stop_reason: StopReason | None = None
    stop_sequence: str | None = None
    finished: bool = False
    replaced_chars: int = 0
    chars: int = 0  # text, thinking and tool input received so far (capped at MAX_RESPONSE_CHARS)
    _open: dict[int, _OpenBlock] = field(default_factory=dict)
    _done: dict[int, ContentBlock] = field(default_factory=dict)

    def feed(self, event: StreamEvent) -> None:
        match event:
            case MessageStart(id=id_, model=model, usage=usage):
                self.id, self.model, self.usage = id_, model, usage
            case BlockStart(index=index):
                if index in self._open or index in self._done:
                    raise StreamProtocolError(f"block {index} started twice")
                self._open[index] = _OpenBlock(event)
            case TextDelta(index=index, text=text):
                self._count(text)
                self._block(index, "text").parts.append(text)
            case ThinkingDelta(index=index, thinking=thinking):
                self._count(thinking)
                self._block(index, "thinking").parts.append(thinking)
            case SignatureDelta(index=index, signature=signature):
                self._block(index, "thinking").signature.append(signature)
            case ToolInputDelta(index=index, partial_json=partial):
                self._count(partial)
                self._block(index, "tool_use").parts.append(partial)
            case BlockStop(index=index):
                if index not in self._open:
                    raise StreamProtocolError(f"stop for block {index}, which is not open")
                block, replaced = _close(self._open.pop(index))
                self._done[index] = block
                self.replaced_chars += replaced
            case MessageStop(stop_reason=reason, usage=usage, stop_sequence=stop_sequence):
                self.stop_reason, self.stop_sequence = reason, stop_sequence
                # message_delta usage is cumulative for output; input counts come from the start
                self.usage = Usage(
                    input_tokens=usage.input_tokens or self.usage.input_tokens,
                    output_tokens=usage.output_tokens or self.usage.output_tokens,
                    cache_creation_input_tokens=usage.cache_creation_input_tokens
                    or self.usage.cache_creation_input_tokens,
                    cache_read_input_tokens=usage.cache_read_input_tokens or self.usage.cache_read_input_tokens,
                    unknown_calls=usage.unknown_calls,
                    cache_creation_1h_input_tokens=usage.cache_creation_1h_input_tokens
                    or self.usage.cache_creation_1h_input_tokens,
                )
                self.finished = True
            case _:
                assert_never(event)

    def _count(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > MAX_RESPONSE_CHARS:
            raise StreamProtocolError(TOO_LONG)

    def _block(self, index: int, kind: str) -> _OpenBlock:
        block = self._open.get(index)
        if block is None:
            raise StreamProtocolError(f"delta for block {index}, which is not open")
        if block.start.kind != kind:
            raise StreamProtocolError(f"{kind} delta for a {block.start.kind} block at {index}")
        return block

    def response(self) -> ModelResponse:
        if self._open:
            raise StreamProtocolError(f"stream ended with blocks still open: {sorted(self._open)}")
        if not self.finished:
            raise StreamProtocolError("stream ended without message_stop")
        content = tuple(self._done[i] for i in sorted(self._done))
        last = content[-1] if content else None
        if self.stop_reason == StopReason.MAX_TOKENS and isinstance(last, ToolUseBlock) and not last.input:
            # cut before its input began: {} is not what the model meant to send (a cut JSON
            # object never parses, so a call with input that parsed was complete)
            cut = replace(last, input_error=last.input_error or "cut by max_tokens before its input")
            content = (*content[:-1], cut)
        return ModelResponse(
            content=content,
            stop_reason=self.stop_reason,
            usage=self.usage,
            model=self.model,
            id=self.id,
            stop_sequence=self.stop_sequence,
            replaced_chars=self.replaced_chars,
        )


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate replaced by U+FFFD, and how many there were."""
    return _LONE_SURROGATE.subn("\ufffd", text)


def _clean_value(value: Any) -> tuple[Any, int]:
    match value:
        case str():
            return replace_surrogates(value)
        case dict():
            out, total = {}, 0
            for key, item in value.items():
                clean_key, n_key = replace_surrogates(key)
                out[clean_key], n_item = _clean_value(item)
                total += n_key + n_item
            return out, total
        case list():
            cleaned = [_clean_value(item) for item in value]
            return [c for c, _ in cleaned], sum(n for _, n in cleaned)
        case _:
            return value, 0


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_tool_input(text: str) -> tuple[dict[str, Any], str | None]:
    """The tool input object, or ({}, why not). Strict JSON: NaN and Infinity are refused."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digit limit, deep nesting
        return {}, f"not valid JSON ({type(exc).__name__}: {str(exc)[:200]})"
    if not isinstance(value, dict):
        return {}, f"not a JSON object (got {type(value).__name__})"
    return value, None


def _close(block: _OpenBlock) -> tuple[ContentBlock, int]:
    start, text = block.start, "".join(block.parts)
    match start.kind:
        case "text":
            clean, replaced = replace_surrogates(text)
            return TextBlock(clean), replaced
        case "thinking":
            return ThinkingBlock(text, "".join(block.signature)), 0
        case "redacted_thinking":
            return RedactedThinkingBlock(start.data), 0
        case "tool_use":
            arguments, problem = parse_tool_input(text)
            arguments, replaced = _clean_value(arguments)
            return ToolUseBlock(start.tool_id, start.tool_name, arguments, input_error=problem), replaced
        case _:
            assert_never(start.kind)


def collect(events: Iterable[StreamEvent]) -> ModelResponse:
    collector = ResponseCollector()
    for event in events:
        collector.feed(event)
    return collector.response()


def response_to_events(response: ModelResponse, chunk: int = 7) -> list[StreamEvent]:
    """The inverse of ``collect``: a response as a fragment stream (pieces of ``chunk`` chars).

    Used by the scripted and replay models, so that every model in the project streams.
    """
    events: list[StreamEvent] = [
        MessageStart(response.id, response.model, Usage(input_tokens=response.usage.input_tokens))
    ]

    def pieces(text: str) -> list[str]:
        return [text[i : i + chunk] for i in range(0, len(text), chunk)] or [""]

    for index, block in enumerate(response.content):
        match block:
            case TextBlock(text=text):
                events.append(BlockStart(index, "text"))
                events.extend(TextDelta(index, p) for p in pieces(text))
            case ThinkingBlock(thinking=thinking, signature=signature):
                events.append(BlockStart(index, "thinking"))
                events.extend(ThinkingDelta(index, p) for p in pieces(thinking))
                events.append(SignatureDelta(index, signature))
            case RedactedThinkingBlock(data=data):
                events.append(BlockStart(index, "redacted_thinking", data=data))
            case ToolUseBlock(id=id_, name=name, input=input_):
                events.append(BlockStart(index, "tool_use", tool_id=id_, tool_name=name))
                events.extend(ToolInputDelta(index, p) for p in pieces(json.dumps(dict(input_))))
            case _:
                raise StreamProtocolError(f"a response cannot contain {block.type} blocks")
        events.append(BlockStop(index))
    events.append(MessageStop(response.stop_reason, response.usage, response.stop_sequence))
    return events
