"""Any OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, OpenAI) through the ``openai`` SDK.

The only importer of ``openai``. Decisions:

- Raw prompts (the text runner) go to the completions endpoint; messages (the tool-use
  runner) go to chat completions with the tools as functions. Tool results become ``tool``
  messages placed right after the assistant turn that called them (OpenAI's rule); an error
  result is prefixed ``ERROR:`` since the API has no ``is_error``. Thinking blocks are not
  sent (no such thing here). Prefill is not offered (``capabilities.prefill=False``).
- Stops: OpenAI takes at most 4, so the first ``max_stop_sequences`` go to the server and all
  of them are cut client-side too (``StopScanner``); a client-side hit closes the stream.
  A server-side hit is reported as ``stop_sequence`` only when the server names the stop
  (vLLM's ``stop_reason``); otherwise the turn reads ``end_turn``.
- Tool calls stream as fragments keyed by ``index``; some servers (llama.cpp's) repeat the id
  and name on every fragment, so only the first one opens the block.
- Usage comes from ``stream_options.include_usage`` where the server honours it (OpenAI,
  vLLM); llama.cpp's server sends none, and the usage then reads 0.
- The key: ``key_env`` names the environment variable (never the key itself); ``None``
  means the server needs none (a local server). CoT-SC samples send ``seed + sample_index``
  so that a server with a fixed default seed still gives different samples.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, assert_never

from react_bench.errors import ConfigError
from react_bench.events import BlockStart, BlockStop, MessageStart, MessageStop, StreamEvent, TextDelta, ToolInputDelta
from react_bench.models.base import OPERATIONAL, ModelCapabilities, ModelError, ModelRequest, ToolSpec, adapt_request
from react_bench.models.stopping import StopScanner
from react_bench.types import (
    Message,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

_FINISH = {"length": StopReason.MAX_TOKENS, "tool_calls": StopReason.TOOL_USE, "function_call": StopReason.TOOL_USE,
           "content_filter": StopReason.REFUSAL, "stop": StopReason.END_TURN}  # fmt: skip


@dataclass(frozen=True)
class OpenAIConfig:
    """Hydra group ``model``: openai.yaml. ``name`` is the model id the server expects."""

    name: str
    base_url: str | None = None  # None: the SDK's default (api.openai.com)
    key_env: str | None = "OPENAI_API_KEY"  # None: no key needed (local servers)
    raw_completion: bool = True  # the server has /v1/completions (chat-only models: False)
    tools: bool = True
    max_stop_sequences: int = 4
    stream_usage: bool = True
    seed: int = 0
    timeout_s: float = field(default=120.0, metadata=OPERATIONAL)


class OpenAICompatClient:
    """``ModelClient`` over an OpenAI-compatible HTTP server."""

    def __init__(self, config: OpenAIConfig):
        from openai import AsyncOpenAI

        if config.key_env is None:
            api_key = "not-needed"  # the SDK insists on a string
        elif not (api_key := os.environ.get(config.key_env, "")):
            raise ConfigError(f"the environment variable {config.key_env} (the API key for {config.name}) is not set")
        self.config = config
        self.name = config.name
        self.capabilities = ModelCapabilities(
            raw_completion=config.raw_completion, chat=True, tools=config.tools, prefill=False, sampling=True
        )
        self._client = AsyncOpenAI(
            # retries are models.retrying's (make_model wraps this client), not the SDK's
            api_key=api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,
        )

    @property
    def endpoint(self) -> str:
        """Where requests go, as the SDK resolved it (``base_url``, ``OPENAI_BASE_URL`` or its default)."""
        return str(self._client.base_url)

    @property
    def sdk(self) -> str:
        import openai

        return f"openai {openai.__version__}"

    def _common(self, request: ModelRequest) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.name, "max_tokens": request.max_tokens, "stream": True}
        if request.temperature is not None:
            args["temperature"] = request.temperature
        if request.top_p is not None:
            args["top_p"] = request.top_p
        if request.stop:
            args["stop"] = list(request.stop)[: self.config.max_stop_sequences]
        if request.sample_index is not None:
            args["seed"] = self.config.seed + request.sample_index
        if self.config.stream_usage:
            args["stream_options"] = {"include_usage": True}
        return args

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import openai

        request, _ = adapt_request(request, self.capabilities)
        mapper = StreamMapper(request.stop)
        try:
            if request.prompt is not None:
                chunks = await self._client.completions.create(prompt=request.prompt, **self._common(request))
            else:
                extra = {"tools": [_tool(t) for t in request.tools]} if request.tools else {}
                # plain dicts in the wire format; the SDK's TypedDict overloads cannot see that
                create: Any = self._client.chat.completions.create
                chunks = await create(messages=to_openai_messages(request), **self._common(request), **extra)
            async with chunks:
                async for chunk in chunks:
                    for event in mapper.feed(chunk):
                        yield event
                    if mapper.stopped:
                        break  # our own stop: leaving the block closes the connection
        except openai.APIStatusError as exc:
            status = exc.status_code
            raise ModelError(f"{self.name}: HTTP {status}: {exc.message}", status=status,
                             retryable=status in (408, 409, 429) or status >= 500) from exc  # fmt: skip
        except openai.APIConnectionError as exc:  # includes timeouts
            raise ModelError(f"{self.name}: cannot reach {self.config.base_url}: {exc}", retryable=True) from exc
        for event in mapper.finish():
            yield event


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function = {"name": spec.name, "description": spec.description, "parameters": spec.input_schema}
    return {"type": "function", "function": function}


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        out.extend(_convert(message))
    return out


def _convert(message: Message) -> list[dict[str, Any]]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in message.content:
        match block:
            case TextBlock(text=text):
                texts.append(text)
            case ToolUseBlock(id=id_, name=name, input=arguments):
                calls.append({"id": id_, "type": "function",
                              "function": {"name": name, "arguments": json.dumps(dict(arguments))}})  # fmt: skip
            case ToolResultBlock(tool_use_id=id_, content=content, is_error=is_error):
                results.append(
                    {"role": "tool", "tool_call_id": id_, "content": f"ERROR: {content}" if is_error else content}
                )
            case ThinkingBlock() | RedactedThinkingBlock():
                pass
            case _:
                assert_never(block)
    text = "\n".join(texts)
    if message.role == "assistant":
        turn: dict[str, Any] = {"role": "assistant", "content": text or None}
        return [turn | ({"tool_calls": calls} if calls else {})]
    return results + ([{"role": "user", "content": text}] if text or not results else [])


@dataclass
class StreamMapper:
    """Pure: OpenAI stream chunks (completion or chat) -> StreamEvents, with client-side stops."""

    stops: tuple[str, ...] = ()
    stopped: bool = False
    _started: bool = False
    _next_index: int = 0
    _text_index: int | None = None
    _tools: dict[int, int] = field(default_factory=dict)  # server's tool index -> our block index
    _open: list[int] = field(default_factory=list)
    _finish: str | None = None
    _server_stop: str | None = None
    _usage: Usage = field(default_factory=Usage)
    _scanner: StopScanner = field(init=False)

    def __post_init__(self) -> None:
        self._scanner = StopScanner(self.stops)

    def feed(self, chunk: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStart(chunk.id or "", chunk.model or ""))
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)
        for choice in chunk.choices[:1]:
            delta = getattr(choice, "delta", None)
            text = choice.text if delta is None else delta.content
            if text:
                events.extend(self._text(self._scanner.feed(text)))
                self.stopped = self._scanner.hit is not None
            for call in (delta.tool_calls or []) if delta is not None else []:
                events.extend(self._tool_fragment(call))
            if choice.finish_reason:
                self._finish = choice.finish_reason
                stop_reason = (choice.model_extra or {}).get("stop_reason")
                self._server_stop = stop_reason if isinstance(stop_reason, str) else None
        return events

    def _text(self, text: str) -> list[StreamEvent]:
        if not text:
            return []
        events: list[StreamEvent] = []
        if self._text_index is None:
            self._text_index = self._open_block(events, BlockStart(self._next_index, "text"))
        events.append(TextDelta(self._text_index, text))
        return events

    def _tool_fragment(self, call: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if call.index not in self._tools:
            if self._text_index is not None:  # text before a call is finished
                events.append(BlockStop(self._text_index))
                self._open.remove(self._text_index)
                self._text_index = None
            name = call.function.name if call.function else ""
            start = BlockStart(
                self._next_index, "tool_use", tool_id=call.id or f"call_{call.index}", tool_name=name or ""
            )
            self._tools[call.index] = self._open_block(events, start)
        if call.function is not None and call.function.arguments:
            events.append(ToolInputDelta(self._tools[call.index], call.function.arguments))
        return events

    def _open_block(self, events: list[StreamEvent], start: BlockStart) -> int:
        events.append(start)
        self._open.append(start.index)
        self._next_index += 1
        return start.index

    def finish(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if not self._started:
            events.append(MessageStart("", ""))
        if self._scanner.hit is None:
            events.extend(self._text(self._scanner.flush()))
        if self._next_index == 0:  # an empty reply is an empty text block, as elsewhere
            self._text_index = self._open_block(events, BlockStart(0, "text"))
        events.extend(BlockStop(index) for index in sorted(self._open))
        self._open.clear()
        events.append(MessageStop(self._stop_reason(), self._usage, self._scanner.hit or self._server_stop))
        return events

    def _stop_reason(self) -> StopReason:
        if self._tools:
            return StopReason.TOOL_USE
        if self._scanner.hit is not None or self._server_stop is not None:
            return StopReason.STOP_SEQUENCE
        return _FINISH.get(self._finish or "stop", StopReason.END_TURN)


def _usage(usage: Any) -> Usage:
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return Usage(
        input_tokens=(usage.prompt_tokens or 0) - cached,
        output_tokens=usage.completion_tokens or 0,
        cache_read_input_tokens=cached,
    )
