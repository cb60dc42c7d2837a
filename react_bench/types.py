"""Provider-neutral conversation types.

Everything above ``react_bench.models`` speaks these types; provider SDK types never
cross that line. Blocks are frozen dataclasses with a ``type`` tag, serialisable with
``block_to_dict`` / ``block_from_dict`` (the shape is the Anthropic Messages wire shape,
which is also what ``calls.jsonl`` and trajectories store).

A thinking block's ``signature`` is opaque: it is kept verbatim and sent back unchanged,
and it never appears in an ``AgentEvent`` (see ``events.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Literal, assert_never


class StopReason(StrEnum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    TOOL_USE = "tool_use"
    PAUSE_TURN = "pause_turn"
    REFUSAL = "refusal"
    MODEL_CONTEXT_WINDOW_EXCEEDED = "model_context_window_exceeded"  # in SDK 2.10's StopReason


@dataclass(frozen=True)
class TextBlock:
    text: str
    type: Literal["text"] = field(default="text", repr=False)


@dataclass(frozen=True)
class ThinkingBlock:
    thinking: str
    signature: str
    type: Literal["thinking"] = field(default="thinking", repr=False)


@dataclass(frozen=True)
class RedactedThinkingBlock:
    data: str
    type: Literal["redacted_thinking"] = field(default="redacted_thinking", repr=False)


@dataclass(frozen=True)
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = field(default="tool_use", repr=False)
    # Why the model's input could not be used (invalid or non-finite JSON, not an object):
    # ``input`` is then {} (what goes back to the API) and the call is answered is_error.
    input_error: str | None = None


@dataclass(frozen=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = field(default="tool_result", repr=False)


ContentBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: tuple[ContentBlock, ...]

    @staticmethod
    def user(*blocks: ContentBlock | str) -> Message:
        return Message("user", _blocks(blocks))

    @staticmethod
    def assistant(*blocks: ContentBlock | str) -> Message:
        return Message("assistant", _blocks(blocks))

    @property
    def text(self) -> str:
        """The concatenated text blocks (thinking excluded)."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))


def _blocks(items: tuple[ContentBlock | str, ...]) -> tuple[ContentBlock, ...]:
    return tuple(TextBlock(b) if isinstance(b, str) else b for b in items)


@dataclass(frozen=True)
class Usage:
    """Token counts of one call, or the sum over calls. ``unknown_calls``: calls whose server
    reported no usage (an OpenAI-compatible server that ignores ``stream_options``): their
    tokens are not in the counts, and a cost over them is unknown, never a silent 0.
    ``cache_creation_1h_input_tokens``: the part of the cache writes made with the 1-hour
    lifetime (billed higher than the default 5 minutes'; the API's ``cache_creation`` breakdown)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    unknown_calls: int = 0
    cache_creation_1h_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.unknown_calls + other.unknown_calls,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        out = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }
        if self.unknown_calls:  # only then: records of known usage read as they always did
            out["unknown_calls"] = self.unknown_calls
        if self.cache_creation_1h_input_tokens:  # likewise
            out["cache_creation_1h_input_tokens"] = self.cache_creation_1h_input_tokens
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None) -> Usage:
        """Ours, or the API's usage object (its ``cache_creation`` breakdown by lifetime)."""
        data = data or {}
        usage = Usage(**{f.name: int(data.get(f.name) or 0) for f in fields(Usage)})
        breakdown = data.get("cache_creation")
        if isinstance(breakdown, Mapping) and not usage.cache_creation_1h_input_tokens:
            usage = replace(usage, cache_creation_1h_input_tokens=int(breakdown.get("ephemeral_1h_input_tokens") or 0))
        return usage


@dataclass(frozen=True)
class ModelResponse:
    """One complete model response, as assembled by ``models.collector``."""

    content: tuple[ContentBlock, ...]
    stop_reason: StopReason | None
    usage: Usage = Usage()
    model: str = ""
    id: str = ""
    stop_sequence: str | None = None
    replaced_chars: int = 0  # lone surrogates the collector replaced by U+FFFD (unencodable text)
    retries: int = 0  # transient faults the retry layer survived to get it (never stored: a cache hit had none)

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def as_message(self) -> Message:
        return Message("assistant", self.content)


def block_to_dict(block: ContentBlock) -> dict[str, Any]:
    match block:
        case TextBlock(text=text):
            return {"type": "text", "text": text}
        case ThinkingBlock(thinking=thinking, signature=signature):
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case RedactedThinkingBlock(data=data):
            return {"type": "redacted_thinking", "data": data}
        case ToolUseBlock(id=id_, name=name, input=input_, input_error=input_error):
            tool: dict[str, Any] = {"type": "tool_use", "id": id_, "name": name, "input": dict(input_)}
            return tool if input_error is None else {**tool, "input_error": input_error}  # not for the wire
        case ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=is_error):
            out: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
            if is_error:
                out["is_error"] = True
            return out
        case _:
            assert_never(block)


def block_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "thinking":
        return ThinkingBlock(str(data.get("thinking", "")), str(data.get("signature", "")))
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(str(data["data"]))
    if kind == "tool_use":
        error = data.get("input_error")
        return ToolUseBlock(str(data["id"]), str(data["name"]), dict(data.get("input") or {}), input_error=error)
    if kind == "tool_result":
        content = data.get("content", "")
        if isinstance(content, list):  # wire form: a list of text blocks
            content = "".join(str(c.get("text", "")) for c in content)
        return ToolResultBlock(str(data["tool_use_id"]), str(content), bool(data.get("is_error", False)))
    raise ValueError(f"unknown content block type {kind!r}")


def message_to_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [block_to_dict(b) for b in message.content]}


def message_from_dict(data: Mapping[str, Any]) -> Message:
    content = data["content"]
    if isinstance(content, str):
        return Message(data["role"], (TextBlock(content),))
    return Message(data["role"], tuple(block_from_dict(b) for b in content))


def response_to_dict(response: ModelResponse) -> dict[str, Any]:
    return {
        "id": response.id,
        "model": response.model,
        "content": [block_to_dict(b) for b in response.content],
        "stop_reason": response.stop_reason.value if response.stop_reason else None,
        "stop_sequence": response.stop_sequence,
        "usage": response.usage.to_dict(),
    }


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    stop = data.get("stop_reason")
    return ModelResponse(
        content=tuple(block_from_dict(b) for b in data.get("content", [])),
        stop_reason=StopReason(stop) if stop else None,
        usage=Usage.from_dict(data.get("usage")),
        model=str(data.get("model", "")),
        id=str(data.get("id", "")),
        stop_sequence=data.get("stop_sequence"),
    )
