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
  vLLM). A server that sends none (some llama.cpp builds, Ollama's older ones) leaves the call's
  usage *unknown* (``Usage.unknown_calls``): never 0/0, and its cost is unknown; the summary
  says how many calls. No tokenizer guess: the server's own is the only exact count.
- Held to the Anthropic path's contract (docs/reliability.md): a stream that cannot be read
  (a data line that is not JSON, bytes that are not UTF-8), that breaks the protocol's shapes
  (``choices`` not a list, text not a string, a tool call without an integer index, a usage
  whose counts are not token counts or whose ``cached_tokens`` pass ``prompt_tokens``), that
  carries no chunk at all (an empty 200, an HTML page, a plain JSON completion) or ends without
  a ``finish_reason`` is a ``MalformedResponse``; an ``{"error": ...}`` object inside a 200
  stream is a ``ModelError``. Both are retried (``models.retrying``), then an error on that
  example; nothing escapes as a traceback. Two clocks per attempt, as on the Anthropic path:
  ``timeout_s`` for the next byte, ``deadline_s`` for the whole attempt (keep-alive comments
  for ever end too).
- Only choice 0 is read: a server that streams several choices (``n>1``, a proxy fanning out)
  would otherwise interleave them into one answer; the others are dropped and said once.
- ``finish_reason``: ``content_filter`` is a refusal (the example ends ``refused``), even on a
  tool call; ``length`` is ``max_tokens`` (a cut tool call is marked so, not run as complete);
  ``abort`` / ``error`` (vLLM) are retried; any other unknown value is an error on the example.
- The key: ``key_env`` names the environment variable (never the key itself); ``None``
  means the server needs none (a local server). CoT-SC samples send ``seed + sample_index``
  so that a server with a fixed default seed still gives different samples.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, assert_never

from react_bench.errors import ConfigError
from react_bench.events import BlockStart, BlockStop, MessageStart, MessageStop, StreamEvent, TextDelta, ToolInputDelta
from react_bench.models.base import (
    OPERATIONAL,
    MalformedResponse,
    ModelCapabilities,
    ModelError,
    ModelRequest,
    ToolSpec,
    adapt_request,
    call_seed,
    retry_after_s,
    token_count,
)
from react_bench.models.collector import collect
from react_bench.models.deadline import FIRST_TOKEN_S, Deadline, attempt_s
from react_bench.models.stopping import StopScanner
from react_bench.redact import without_userinfo
from react_bench.types import (
    Message,
    ModelResponse,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

_FINISH = {
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.REFUSAL,
    "stop": StopReason.END_TURN,
    # other servers' names for a natural end (TGI, older vLLM)
    "eos": StopReason.END_TURN,
    "eos_token": StopReason.END_TURN,
    "stop_sequence": StopReason.STOP_SEQUENCE,
}
_FAILED = frozenset({"abort", "error"})  # vLLM's finish reasons for a generation that failed: retried
# What the SDK raises on bytes it cannot read (json, utf-8, nesting too deep) and a wrongly typed field.
_PARSE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError)


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
    timeout_s: float = field(default=120.0, metadata=OPERATIONAL)  # the longest wait for the next byte
    deadline_s: float | None = field(default=None, metadata=OPERATIONAL)  # one attempt, whole; None: by max_tokens


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
        self._warned_choices = False
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
        return without_userinfo(str(self._client.base_url))  # never a user or password into a log

    @property
    def sdk(self) -> str:
        import openai

        return f"openai {openai.__version__}"

    async def aclose(self) -> None:
        await self._client.close()  # the SDK's HTTP connection pool

    def _common(self, request: ModelRequest) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.name, "max_tokens": request.max_tokens, "stream": True}
        if request.temperature is not None:
            args["temperature"] = request.temperature
        if request.top_p is not None:
            args["top_p"] = request.top_p
        if request.stop:
            args["stop"] = list(request.stop)[: self.config.max_stop_sequences]
        if request.sample_index is not None or request.epoch is not None:
            args["seed"] = call_seed(self.config.seed, request)
        if self.config.stream_usage:
            args["stream_options"] = {"include_usage": True}
        return args

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[1]

    def deadline_s(self, max_tokens: int) -> float:
        """How long one attempt may take, whole (``deadline_s``, or by ``max_tokens``)."""
        return attempt_s(self.config.deadline_s, max_tokens, max(FIRST_TOKEN_S, self.config.timeout_s))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        import httpx2
        import openai

        request, _ = adapt_request(request, self.capabilities)
        mapper = StreamMapper(request.stop, chat=request.prompt is None)
        allowed = self.deadline_s(request.max_tokens)
        deadline = Deadline(asyncio.get_running_loop().time() + allowed)
        try:
            if request.prompt is not None:
                opened = self._client.completions.create(prompt=request.prompt, **self._common(request))
            else:
                extra = {"tools": [_tool(t) for t in request.tools]} if request.tools else {}
                # plain dicts in the wire format; the SDK's TypedDict overloads cannot see that
                create: Any = self._client.chat.completions.create
                opened = create(messages=to_openai_messages(request), **self._common(request), **extra)
            chunks = await deadline.wait(opened)
            async with chunks:
                reader = aiter(chunks)
                while not mapper.stopped:  # our own stop: leaving the block closes the connection
                    try:
                        chunk = await deadline.wait(anext(reader))
                        events = mapper.feed(chunk)
                    except StopAsyncIteration:
                        break
                    except _PARSE_ERRORS as exc:
                        raise MalformedResponse(f"{type(exc).__name__}: {exc}") from exc
                    for event in events:
                        yield event
        except TimeoutError as exc:
            raise ModelError(
                f"{self.name}: timed out: the attempt passed its deadline of {allowed:g} s (model.deadline_s)",
                retryable=True,
            ) from exc
        except openai.APITimeoutError as exc:
            raise ModelError(
                f"{self.name}: timed out: no byte for {self.config.timeout_s:g} s (model.timeout_s)", retryable=True
            ) from exc
        except openai.APIStatusError as exc:
            raise self._error(exc) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{self.name}: cannot reach {self.endpoint}: {exc}", retryable=True) from exc
        except openai.APIError as exc:  # an {"error": ...} object inside a 200 stream (vLLM, llama.cpp)
            said = f"{self.name}: the server sent an error mid-stream: {exc.message}"
            raise ModelError(said, retryable=True) from exc
        except httpx2.HTTPError as exc:  # what the SDK does not wrap: a transport fault mid-stream
            raise ModelError(f"{self.name}: the connection failed mid-stream: {exc!r}", retryable=True) from exc
        finally:
            deadline.cancel()
        if mapper.extra_choices and not self._warned_choices:
            self._warned_choices = True
            print(
                f"warning: {self.endpoint} streamed more than one choice (n>1, or a proxy that fans out): "
                "only choice 0 is read",
                file=sys.stderr,
            )
        for event in mapper.finish():
            yield event

    # --- the Batch API (/v1/batches: OpenAI's; half price; react_bench/executors/rounds.py drives it) -------

    batch_limits = (50_000, 200 * 1024 * 1024)  # requests and bytes of one batch's input file (OpenAI's)

    def batch_group(self, request: ModelRequest) -> str:
        """The endpoint a request goes to: a batch holds one endpoint's requests."""
        return (
            "/v1/completions"
            if adapt_request(request, self.capabilities)[0].prompt is not None
            else "/v1/chat/completions"
        )

    def batch_params(self, request: ModelRequest) -> dict[str, Any]:
        """The body of one batch request: the streamed call's arguments, not streamed."""
        request, _ = adapt_request(request, self.capabilities)
        args = {k: v for k, v in self._common(request).items() if k not in ("stream", "stream_options")}
        if request.prompt is not None:
            return {**args, "prompt": request.prompt}
        extra = {"tools": [_tool(t) for t in request.tools]} if request.tools else {}
        return {**args, "messages": to_openai_messages(request), **extra}

    def batch_stops(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[0].stop  # every stop is cut here too, as streamed

    cache_ttl = "5m"  # the server's own prompt caching: no lifetime to ask for

    def for_rounds(self) -> None:
        """Nothing to change for rounds: the server caches prompts as it will."""

    async def batch_supported(self) -> bool:
        """Whether the server has the Batch API (OpenAI does; vLLM's and llama.cpp's servers do not)."""
        import openai

        try:
            await self._client.batches.list(limit=1)
        except openai.NotFoundError:
            return False
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405, 501):
                return False
            raise self._error(exc) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{self.name}: cannot reach {self.endpoint}: {exc}", retryable=True) from exc
        return True

    async def batch_create(self, items: list[tuple[str, ModelRequest]]) -> str:
        import openai

        url = self.batch_group(items[0][1])
        lines = [{"custom_id": cid, "method": "POST", "url": url, "body": self.batch_params(r)} for cid, r in items]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        try:
            uploaded = await self._client.files.create(file=("react-bench-batch.jsonl", data), purpose="batch")
            endpoint: Any = url
            batch = await self._client.batches.create(
                input_file_id=uploaded.id, endpoint=endpoint, completion_window="24h"
            )
        except openai.APIStatusError as exc:
            raise self._error(exc) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{self.name}: cannot reach {self.endpoint}: {exc}", retryable=True) from exc
        return batch.id

    async def batch_status(self, batch_id: str) -> tuple[bool, dict[str, int]]:
        batch = await self._retrieve(batch_id)
        counts = batch.request_counts
        total, done, failed = (counts.total, counts.completed, counts.failed) if counts else (0, 0, 0)
        ended = batch.status in _BATCH_ENDED
        return ended, {"processing": 0 if ended else total - done - failed, "succeeded": done, "errored": failed}

    async def batch_results(self, batch_id: str, stops: dict[str, tuple[str, ...]]) -> dict[str, Any]:
        """custom id -> the response (stops cut as a streamed call's are), or why not. A batch the
        server failed (its input refused) is a ``ModelError`` that ends the run."""
        import openai

        batch = await self._retrieve(batch_id)
        if batch.status == "failed":
            errors = getattr(batch.errors, "data", None) or []
            said = "; ".join(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}" for e in errors[:3])
            raise ModelError(f"{self.name}: batch {batch_id} failed ({said or 'no reason given'})")
        out: dict[str, Any] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            try:
                content = await self._client.files.content(file_id)
            except openai.APIStatusError as exc:
                raise self._error(exc) from exc
            for line in content.text.splitlines():
                if line.strip():
                    custom_id, result = self._batch_line(line, stops)
                    if custom_id is not None:
                        out[custom_id] = result
        return out

    def _batch_line(self, line: str, stops: dict[str, tuple[str, ...]]) -> tuple[str | None, Any]:
        try:
            record = json.loads(line)
            custom_id = record.get("custom_id")
        except (ValueError, AttributeError):
            return None, None
        if not isinstance(custom_id, str):
            return None, None
        response = record.get("response") or {}
        if record.get("error") or not isinstance(response, dict) or response.get("status_code") != 200:
            return custom_id, f"batch result error: {record.get('error') or response.get('status_code')}"
        body = response.get("body")
        try:
            return custom_id, completion_response(body, stops.get(custom_id, ()))
        except (MalformedResponse, ModelError, *_PARSE_ERRORS) as exc:
            return custom_id, f"batch result unreadable: {type(exc).__name__}: {exc}"

    async def _retrieve(self, batch_id: str) -> Any:
        import openai

        try:
            return await self._client.batches.retrieve(batch_id)
        except openai.APIStatusError as exc:
            raise self._error(exc) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{self.name}: cannot reach {self.endpoint}: {exc}", retryable=True) from exc

    def _error(self, exc: Any) -> ModelError:
        status = exc.status_code
        return ModelError(
            f"{self.name}: HTTP {status}: {exc.message}",
            status=status,
            retryable=status in (408, 409, 429) or status >= 500,
            retry_after=retry_after_s(exc.response.headers),
        )


_BATCH_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


def completion_response(body: Any, stops: tuple[str, ...]) -> ModelResponse:
    """A whole (not streamed) chat completion or completion, read as its stream would be: one
    chunk with the whole delta, then the usage (so the checks and the stops are the stream's)."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise MalformedResponse(f"a batch result's body is not a completion: {str(body)[:200]}")
    chat = body.get("object") == "chat.completion" or any(
        "message" in c for c in body["choices"] if isinstance(c, dict)
    )
    choices = []
    for choice in body["choices"]:
        if not isinstance(choice, dict):
            raise MalformedResponse(f"a choice is {choice!r}, not an object")
        fields = {"index": choice.get("index", 0), "finish_reason": choice.get("finish_reason")}
        if chat:
            message = choice.get("message") or {}
            calls = [{**c, "index": i} for i, c in enumerate(message.get("tool_calls") or [])]
            fields["delta"] = _namespace({"content": message.get("content"), "tool_calls": calls or None})
        else:
            fields["text"] = choice.get("text")
        choices.append(_namespace(fields))
    mapper = StreamMapper(stops, chat=chat)
    head = {"id": body.get("id"), "model": body.get("model")}
    events = mapper.feed(_chunk(head, choices))
    if body.get("usage") is not None:
        events += mapper.feed(_chunk({**head, "usage": _namespace(body["usage"])}, []))
    events += mapper.finish()
    return collect(events)


def _chunk(fields: dict[str, Any], choices: list[Any]) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(**{"usage": None, **fields, "choices": choices})


def _namespace(value: Any) -> Any:
    """JSON as attribute objects (what the SDK's chunk models offer the mapper)."""
    from types import SimpleNamespace

    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items() if isinstance(k, str)})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


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
                calls.append(
                    {
                        "id": id_,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(dict(arguments))},
                    }
                )
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
    """Pure: OpenAI stream chunks (completion or chat) -> StreamEvents, with client-side stops.

    Every field is checked as it is read (the SDK builds chunks without validating them): a
    shape the protocol does not have raises ``MalformedResponse``. Only choice 0 is read; the
    others are counted in ``extra_choices``."""

    stops: tuple[str, ...] = ()
    chat: bool = True
    stopped: bool = False
    extra_choices: int = 0
    _started: bool = False
    _next_index: int = 0
    _text_index: int | None = None
    _tools: dict[int, int] = field(default_factory=dict)  # server's tool index -> our block index
    _open: list[int] = field(default_factory=list)
    _finish: str | None = None
    _server_stop: str | None = None
    _usage: Usage | None = None
    _scanner: StopScanner = field(init=False)

    def __post_init__(self) -> None:
        self._scanner = StopScanner(self.stops)

    def feed(self, chunk: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            events.append(MessageStart(_label(getattr(chunk, "id", None)), _label(getattr(chunk, "model", None))))
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = _usage(usage)
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise MalformedResponse(f"a chunk's choices is {choices!r}, not a list")
        for choice in choices:
            index = getattr(choice, "index", 0)
            if index is not None and type(index) is not int:
                raise MalformedResponse(f"a choice's index is {index!r}, not an integer")
            if index:
                self.extra_choices += 1
                continue
            events.extend(self._choice(choice))
        return events

    def _choice(self, choice: Any) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self.chat:
            delta = getattr(choice, "delta", None)
            if delta is None or isinstance(delta, str | int | float | list):
                raise MalformedResponse(f"a chat choice's delta is {delta!r}, not an object")
            text, calls = getattr(delta, "content", None), getattr(delta, "tool_calls", None)
        else:
            text, calls = getattr(choice, "text", None), None
        if text is not None and not isinstance(text, str):
            raise MalformedResponse(f"a choice's text is {text!r}, not a string")
        if text and not self._scanner.hit:
            events.extend(self._text(self._scanner.feed(text)))
            self.stopped = self._scanner.hit is not None
        if calls is not None and not isinstance(calls, list):
            raise MalformedResponse(f"a delta's tool_calls is {calls!r}, not a list")
        for call in calls or []:
            events.extend(self._tool_fragment(call))
        finish = getattr(choice, "finish_reason", None)
        if finish is not None and not isinstance(finish, str):
            raise MalformedResponse(f"a choice's finish_reason is {finish!r}, not a string")
        if finish:
            self._finish = finish
            stop_reason = (getattr(choice, "model_extra", None) or {}).get("stop_reason")
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
        index = getattr(call, "index", None)
        if type(index) is not int:
            raise MalformedResponse(f"a tool call's index is {index!r}, not an integer")
        function = getattr(call, "function", None)
        name = getattr(function, "name", None) if function is not None else None
        arguments = getattr(function, "arguments", None) if function is not None else None
        call_id = getattr(call, "id", None)
        for what, value in (("id", call_id), ("function.name", name), ("function.arguments", arguments)):
            if value is not None and not isinstance(value, str):
                raise MalformedResponse(f"a tool call's {what} is {value!r}, not a string")
        events: list[StreamEvent] = []
        if index not in self._tools:
            if self._text_index is not None:  # text before a call is finished
                events.append(BlockStop(self._text_index))
                self._open.remove(self._text_index)
                self._text_index = None
            start = BlockStart(self._next_index, "tool_use", tool_id=call_id or f"call_{index}", tool_name=name or "")
            self._tools[index] = self._open_block(events, start)
        if arguments:
            events.append(ToolInputDelta(self._tools[index], arguments))
        return events

    def _open_block(self, events: list[StreamEvent], start: BlockStart) -> int:
        events.append(start)
        self._open.append(start.index)
        self._next_index += 1
        return start.index

    def finish(self) -> list[StreamEvent]:
        """The closing events; a stream that carried no chunk, or ended before a ``finish_reason``
        (and before a stop of ours), is a ``MalformedResponse``: nothing a server meant."""
        if not self._started:
            raise MalformedResponse(
                "the response carried no completion chunk (an empty body, a page, or JSON where a stream was asked)"
            )
        if self._finish is None and not self.stopped:
            raise MalformedResponse("the stream ended without a finish_reason")
        if self._finish in _FAILED:
            raise ModelError(f"the server ended the generation with finish_reason {self._finish!r}", retryable=True)
        if self._finish is not None and self._finish not in _FINISH:
            raise ModelError(f"the server sent an unknown finish_reason {self._finish!r}")
        events: list[StreamEvent] = []
        if self._scanner.hit is None:
            events.extend(self._text(self._scanner.flush()))
        if self._next_index == 0:  # an empty reply is an empty text block, as elsewhere
            self._text_index = self._open_block(events, BlockStart(0, "text"))
        events.extend(BlockStop(index) for index in sorted(self._open))
        self._open.clear()
        usage = self._usage if self._usage is not None else Usage(unknown_calls=1)
        events.append(MessageStop(self._stop_reason(), usage, self._scanner.hit or self._server_stop))
        return events

    def _stop_reason(self) -> StopReason:
        # A refusal or a cut (``length``) says more than the tool call it interrupted: a cut call's
        # arguments are incomplete and must not run as if they were whole.
        if self._finish in ("content_filter", "length"):
            return _FINISH[self._finish]
        if self._tools:
            return StopReason.TOOL_USE
        if self._scanner.hit is not None or self._server_stop is not None:
            return StopReason.STOP_SEQUENCE
        return _FINISH.get(self._finish or "stop", StopReason.END_TURN)


def _label(value: object) -> str:
    """A chunk's ``id`` or ``model``: only a label in the record; anything but a string reads as none."""
    return value if isinstance(value, str) else ""


def _usage(usage: Any) -> Usage:
    """The chunk's usage, checked: a count that is not a token count, or ``cached_tokens`` above
    ``prompt_tokens``, is a ``MalformedResponse`` (it would corrupt usage and cost)."""
    if isinstance(usage, str | int | float | list):
        raise MalformedResponse(f"usage is {usage!r}, not an object")
    prompt = token_count(getattr(usage, "prompt_tokens", None), "usage.prompt_tokens")
    completion = token_count(getattr(usage, "completion_tokens", None), "usage.completion_tokens")
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    cached = 0 if cached is None else token_count(cached, "usage.prompt_tokens_details.cached_tokens")
    if cached > prompt:
        raise MalformedResponse(f"usage.prompt_tokens_details.cached_tokens {cached} > prompt_tokens {prompt}")
    return Usage(input_tokens=prompt - cached, output_tokens=completion, cache_read_input_tokens=cached)
