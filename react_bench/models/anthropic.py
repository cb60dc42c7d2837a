"""The Anthropic Messages API client: the ONLY module that imports ``anthropic``.

``AnthropicClient.stream(request)`` sends one streamed ``messages.create`` call with the
official async SDK and maps every SDK stream event onto our ``StreamEvent``s (an exhaustive
match over the SDK's event and block unions), so ``models.base.generate`` works on it and
no SDK type leaves this module.

Decisions a next engineer needs:
- What is sent is decided by ``plan(request)``, a pure function of the request and the
  per-model table in ``models.capabilities`` (DESIGN 6b). A setting the model rejects is
  left out and named in ``RequestPlan.not_applied`` (``not_applied(request)`` asks it of a
  request and keeps no state per call, so it is safe under concurrency): sampling parameters
  on Opus 4.7+, a thinking mode the model lacks, ``temperature`` other than 1 or ``top_p`` under 0.95 with thinking
  on, forced ``tool_choice`` where the model or thinking forbids it, thinking together with
  a prefill. A trailing-whitespace prefill is stripped (old models reject it); a prefill on
  a model without prefill is a ConfigError before any request (dropping it would change
  what is asked). Budgeted thinking needs 1024 <= budget < max_tokens (ConfigError).
- Stop sequences the API rejects (whitespace-only, like the paper's ``\\n`` re-ask) are
  applied here, client-side: text is cut at the stop, later blocks are suppressed, and the
  stream ends with stop reason ``stop_sequence``, as if the API had stopped there.
- ``temperature`` / ``top_p`` go through ``extra_body``: SDK 2.10's ``messages.create``
  has no such arguments any more.
- Prompt caching (default on): ``cache_control`` on the system prompt (caches tools +
  system, shared by every episode with the same instructions), on the last block of the
  history before the newest turn (the stable prefix) and on the last block of the newest
  turn (so the next call of the episode reads all of this one). Three of the four allowed
  breakpoints; thinking blocks never carry one. The lifetime is the API's default 5 minutes;
  the prefix every example shares (tools, system, the exemplars: ``shared_cache_points``) may
  be written for 1 hour (``cache_ttl``; ``auto``: 1h under ``batch=true``, whose rounds are
  minutes apart), those writes at twice the input rate (``Usage.cache_creation_1h_input_tokens``).
- Empty text blocks are left out of the wire messages (the API rejects them; they carry
  nothing). Thinking blocks and signatures go back verbatim.
- No retries here (the SDK's are off): ``models.retrying.RetryingModel`` wraps this client
  (``make_model`` does it) and retries HTTP faults and cut streams alike, counted. Errors
  become ``ModelError`` with the HTTP status, the API's own message (which names the rule)
  and the ``retry-after`` the API sent.
- New stream event types, content block types and delta types may appear (the API says so
  and asks clients to ignore them): they are skipped, with their blocks' later deltas.
- A message ends at its ``message_stop`` (the API's documented end of a stream): whatever a
  server sends after it is read for at most 2 s and dropped (so the connection can be reused),
  never made part of the message.
- A stream the SDK cannot parse (a data line that is not JSON, bytes that are not UTF-8, a body
  its ``Content-Encoding`` does not describe) or that breaks the protocol's shapes (``null``
  where an object or a string belongs, no usage, a token count that is not a count between 0
  and ``MAX_TOKEN_COUNT``) is a ``MalformedResponse``: retried, then an error on that example.
- Two clocks per attempt: ``timeout_s`` (60 s) is the longest wait for the next byte;
  ``deadline_s`` bounds the whole attempt (default: 60 s plus ``max_tokens`` at 20 tokens a
  second, the slowest the API streams), so a stream that sends ``ping`` forever ends too. Both
  are retried; the error says which clock ran out.
- The API key is read from the environment variable ``api_key_env`` names, in the
  constructor: a missing key is a ConfigError before any request, naming the variable.
  ``base_url=None`` leaves the SDK's own handling of ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, assert_never, get_args

import anthropic
import httpx2
import pydantic
from anthropic import types as sdk
from anthropic.types.raw_content_block_start_event import ContentBlock as SdkStartBlock

from react_bench.errors import ConfigError
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
from react_bench.models.base import (
    OPERATIONAL,
    MalformedResponse,
    ModelError,
    ModelRequest,
    ThinkingConfig,
    ToolSpec,
    adapt_request,
    retry_after_s,
    token_count,
)
from react_bench.models.capabilities import min_cache_tokens, model_info
from react_bench.models.collector import collect, response_to_events
from react_bench.models.deadline import Deadline, attempt_s
from react_bench.models.stopping import StreamStops
from react_bench.redact import without_userinfo
from react_bench.types import Message, ModelResponse, StopReason, TextBlock, Usage, message_to_dict, response_from_dict

_CACHE = {"type": "ephemeral"}  # the default lifetime, 5 minutes
_CACHE_1H = {"type": "ephemeral", "ttl": "1h"}
CacheTTL = Literal["auto", "5m", "1h"]


# What the SDK's stream parsing raises on bytes it cannot read (json, utf-8, pydantic, a
# Content-Encoding that lies), and what an unchecked None field raises in the mapping.
_PARSE_ERRORS = (
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
    RecursionError,
    anthropic.APIResponseValidationError,
    httpx2.DecodingError,
)
_CACHEABLE = frozenset({"text", "tool_use", "tool_result"})


@dataclass(frozen=True)
class AnthropicConfig:
    """One Claude model as a run uses it: ``configs/model/claude-*.yaml`` map onto these fields.

    Thinking is not set here but per request (``ModelRequest.thinking``, from the runner
    config), with ``display`` defaulting to ``summarized`` so thinking is visible.
    """

    name: str  # the model id, as in the SDK's types/model.py
    api_key_env: str = "ANTHROPIC_API_KEY"  # the NAME of the variable holding the key
    base_url: str | None = None  # None: the SDK reads ANTHROPIC_BASE_URL, else api.anthropic.com
    timeout_s: float = field(default=60.0, metadata=OPERATIONAL)  # the longest wait for the next byte
    deadline_s: float | None = field(default=None, metadata=OPERATIONAL)  # one attempt, whole; None: by max_tokens
    prompt_caching: bool = True
    # the prompt cache's lifetime: "auto" is 1h under batch=true (rounds are minutes apart, past
    # 5 minutes) where the model takes it, else the API's default 5m; it changes the price only
    cache_ttl: CacheTTL = field(default="auto", metadata=OPERATIONAL)
    allow_unknown_model: bool = False  # unknown ids get the strictest rules instead of an error


@dataclass(frozen=True)
class RequestPlan:
    """What one request becomes: the SDK arguments and what could not be applied."""

    arguments: dict[str, Any]
    not_applied: tuple[str, ...]
    client_stops: tuple[str, ...]  # applied here because the API rejects them


class AnthropicClient:
    def __init__(self, config: AnthropicConfig) -> None:
        self.config = config
        self.name = config.name
        self.info = model_info(config.name, allow_unknown=config.allow_unknown_model)
        self.capabilities = self.info.capabilities()
        key = os.environ.get(config.api_key_env, "").strip()
        if not key:
            raise ConfigError(
                f"no Anthropic API key: the environment variable {config.api_key_env} is not set "
                "(the model config's api_key_env names the variable to read)"
            )
        self._sdk = anthropic.AsyncAnthropic(
            # retries are models.retrying's (one policy, counted, cut streams included), not the SDK's
            api_key=key,
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._wire_cache = WireCache()
        if config.cache_ttl not in ("auto", "5m", "1h"):
            raise ConfigError(f"cache_ttl={config.cache_ttl!r}: one of auto, 5m, 1h")
        if config.cache_ttl == "1h" and not self.info.cache_ttl_1h:
            raise ConfigError(f"cache_ttl=1h: {config.name} does not take the 1-hour prompt cache")
        self.cache_ttl = "1h" if config.cache_ttl == "1h" else "5m"

    async def batch_supported(self) -> bool:
        """The Message Batches API: every Anthropic endpoint has it."""
        return True

    def for_rounds(self) -> None:
        """``batch=true``: the 1-hour cache where the lifetime is left to ``auto`` and the model takes it."""
        if self.config.cache_ttl == "auto" and self.info.cache_ttl_1h:
            self.cache_ttl = "1h"

    @property
    def endpoint(self) -> str:
        """Where requests go, as the SDK resolved it (``base_url``, ``ANTHROPIC_BASE_URL`` or its default)."""
        return without_userinfo(str(self._sdk.base_url))  # never a user or password into a log

    @property
    def sdk(self) -> str:
        return f"anthropic {anthropic.__version__}"

    async def aclose(self) -> None:
        await self._sdk.close()

    def plan(self, request: ModelRequest) -> RequestPlan:
        """The SDK arguments for ``request`` and the settings left out (pure; no I/O)."""
        request, dropped = adapt_request(request, self.capabilities)
        not_applied = list(dropped)
        request = self._prefill(request, not_applied)
        request = _thinking_conflicts(request, not_applied, forced_ok=self.info.forced_tool_use)
        api_stops = tuple(s for s in request.stop if s.strip())
        client_stops = tuple(s for s in request.stop if s and not s.strip())
        not_applied += [f"stop={s!r}" for s in request.stop if not s]
        wire, sizes = self._wire_cache.messages(request.messages)
        arguments: dict[str, Any] = {"model": self.config.name, "max_tokens": request.max_tokens, "messages": wire}
        head_tokens = 0
        if request.system:
            arguments["system"] = [{"type": "text", "text": request.system}]
            head_tokens += self._wire_cache.system_tokens(request.system)
        if request.tools:
            arguments["tools"], tools_tokens = self._wire_cache.tools(request.tools)
            head_tokens += tools_tokens
        if self.config.prompt_caching:
            shared = (request.cache_points or ())[: request.shared_cache_points]
            place_breakpoints(
                arguments,
                request.cache_points,
                min_cache_tokens(self.info.id),
                sizes,
                head_tokens,
                _CACHE_1H if self.cache_ttl == "1h" else _CACHE,
                shared,
            )
        _compact(arguments["messages"])
        if request.tools:
            if request.tool_choice is not None:
                arguments["tool_choice"] = {"type": request.tool_choice}
        if api_stops:
            arguments["stop_sequences"] = list(api_stops)
        if request.thinking is not None:
            arguments["thinking"] = _wire_thinking(request.thinking, request.max_tokens)
        sampling = {k: v for k, v in (("temperature", request.temperature), ("top_p", request.top_p)) if v is not None}
        if sampling:
            arguments["extra_body"] = sampling
        return RequestPlan(arguments, tuple(not_applied), client_stops)

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return self.plan(request).not_applied

    # --- the Message Batches API (half price; react_bench/executors/rounds.py drives it) ----------------

    batch_limits = (100_000, 256 * 1024 * 1024)  # requests and bytes in one batch, as the API documents

    def batch_params(self, request: ModelRequest) -> dict[str, Any]:
        """The body of one batch request: the same arguments as a streamed call, not streamed."""
        arguments = dict(self.plan(request).arguments)
        return {**arguments, **(arguments.pop("extra_body", None) or {})}

    def batch_stops(self, request: ModelRequest) -> tuple[str, ...]:
        return self.plan(request).client_stops

    def batch_group(self, request: ModelRequest) -> str:
        return ""  # one endpoint: any requests share a batch

    async def batch_create(self, items: list[tuple[str, ModelRequest]]) -> str:
        try:
            batch = await self._sdk.messages.batches.create(
                requests=[{"custom_id": cid, "params": self.batch_params(r)} for cid, r in items]  # type: ignore[typeddict-item]
            )
        except anthropic.APIStatusError as exc:
            raise model_error(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(f"Anthropic API connection failed: {exc}", retryable=True) from exc
        return batch.id

    async def batch_status(self, batch_id: str) -> tuple[bool, dict[str, int]]:
        """(ended, request counts by state)."""
        try:
            batch = await self._sdk.messages.batches.retrieve(batch_id)
        except anthropic.APIStatusError as exc:
            raise model_error(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(f"Anthropic API connection failed: {exc}", retryable=True) from exc
        return batch.processing_status == "ended", batch.request_counts.model_dump()

    async def batch_results(self, batch_id: str, stops: dict[str, tuple[str, ...]]) -> dict[str, ModelResponse | str]:
        """custom id -> the response (client-side stops applied, as a streamed call would), or why not."""
        out: dict[str, ModelResponse | str] = {}
        try:
            lines = [line async for line in await self._sdk.messages.batches.results(batch_id)]
        except anthropic.APIStatusError as exc:
            raise model_error(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(f"Anthropic API connection failed: {exc}", retryable=True) from exc
        for line in lines:
            result = line.result
            if result.type == "succeeded":
                response = response_from_dict(result.message.model_dump(mode="json"))
                cut = StreamStops(stops.get(line.custom_id, ()))
                events = [e for event in response_to_events(response) for e in cut.feed(event)]
                out[line.custom_id] = collect(events) if cut.stops else response
            else:
                out[line.custom_id] = f"batch result {result.type}: {getattr(result, 'error', '')}"
        return out

    def _prefill(self, request: ModelRequest, not_applied: list[str]) -> ModelRequest:
        """A conversation ending with an assistant message: refused, or made acceptable."""
        messages = request.messages
        if not messages or messages[-1].role != "assistant":
            return request
        if request.metadata.get("continuation") == "pause_turn":
            return request  # a paused turn goes back as it is (the API's way to continue it)
        if not self.capabilities.prefill:
            raise ConfigError(
                f"{self.config.name} does not support assistant message prefill: the conversation must end "
                "with a user message (put the partial answer in the user turn instead)"
            )
        if request.thinking is not None:  # the API never takes a prefill together with thinking
            not_applied.append(f"thinking={request.thinking.mode} (assistant prefill)")
            request = replace(request, thinking=None)
        last = messages[-1]
        tail = last.content[-1] if last.content else None
        if isinstance(tail, TextBlock) and tail.text != tail.text.rstrip():
            not_applied.append("prefill trailing whitespace (stripped)")
            stripped = Message("assistant", (*last.content[:-1], TextBlock(tail.text.rstrip())))
            request = replace(request, messages=(*messages[:-1], stripped))
        return request

    def deadline_s(self, max_tokens: int) -> float:
        """How long one attempt may take, whole (``deadline_s``, or by ``max_tokens``)."""
        return attempt_s(self.config.deadline_s, max_tokens)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        plan = self.plan(request)
        mapper = StreamMapper()
        cutter = StreamStops(plan.client_stops) if plan.client_stops else None
        allowed = self.deadline_s(int(plan.arguments.get("max_tokens") or 0))
        deadline = Deadline(asyncio.get_running_loop().time() + allowed)
        try:
            response = await deadline.wait(self._sdk.messages.create(**plan.arguments, stream=True))
            async with response:
                events = aiter(response)
                while True:
                    if mapper.stopped:  # the message is complete: the rest is read only to keep
                        await _drain_rest(events, deadline.when)  # the connection for the next call
                        break
                    try:
                        raw = await deadline.wait(anext(events))
                        mapped = mapper.map(raw)
                    except StopAsyncIteration:
                        break
                    except _PARSE_ERRORS as exc:
                        raise MalformedResponse(f"{type(exc).__name__}: {exc}") from exc
                    if cutter is None:
                        for event in mapped:
                            yield event
                    else:
                        for event in mapped:
                            for out in cutter.feed(event):
                                yield out
        except TimeoutError as exc:
            raise ModelError(
                f"timed out: the attempt passed its deadline of {allowed:g} s (model.deadline_s)", retryable=True
            ) from exc
        except (anthropic.APITimeoutError, httpx2.TimeoutException) as exc:  # before the headers, or after
            raise ModelError(
                f"timed out: no byte from the API for {self.config.timeout_s:g} s (model.timeout_s)", retryable=True
            ) from exc
        except anthropic.APIStatusError as exc:
            raise model_error(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            raise ModelError(f"Anthropic API connection failed: {exc}", retryable=True) from exc
        finally:
            deadline.cancel()


async def _drain_rest(events: AsyncIterator[Any], deadline: float) -> None:
    """Read what follows ``message_stop`` and drop it (normally only the body's end, which
    lets the connection be reused); whatever it is, it is not part of the message: anything
    unreadable or slow (more than 2 s) just closes the connection."""
    try:
        async with asyncio.timeout_at(min(deadline, asyncio.get_running_loop().time() + 2.0)):
            async for _ in events:
                pass
    except (TimeoutError, anthropic.APIError, httpx2.HTTPError, *_PARSE_ERRORS):
        pass


def _thinking_conflicts(request: ModelRequest, not_applied: list[str], *, forced_ok: bool) -> ModelRequest:
    """Settings the API rejects in combination (or on this model) are left out and named."""
    changes: dict[str, Any] = {}
    forced = request.tool_choice == "any"
    if forced and not forced_ok:
        not_applied.append("tool_choice=any (this model rejects forced tool use)")
        changes["tool_choice"], forced = None, False
    if request.thinking is not None:
        if forced:
            not_applied.append(f"thinking={request.thinking.mode} (tool_choice=any forces a tool)")
            changes["thinking"] = None
        else:
            if request.temperature is not None and request.temperature != 1:
                not_applied.append(f"temperature={request.temperature} (thinking is on)")
                changes["temperature"] = None
            if request.top_p is not None and request.top_p < 0.95:
                not_applied.append(f"top_p={request.top_p} (thinking is on)")
                changes["top_p"] = None
    return replace(request, **changes) if changes else request


def _wire_thinking(thinking: ThinkingConfig, max_tokens: int) -> dict[str, Any]:
    if thinking.mode == "adaptive":
        return {"type": "adaptive", "display": thinking.display}
    budget = thinking.budget_tokens
    if budget is None or budget < 1024 or budget >= max_tokens:
        raise ConfigError(f"thinking=enabled needs 1024 <= budget_tokens < max_tokens ({max_tokens}); got {budget}")
    return {"type": "enabled", "budget_tokens": budget, "display": thinking.display}


def _wire_message(message: Message) -> dict[str, Any]:
    """A message in the API's form. Empty text blocks become ``None`` placeholders here (so a
    cache point's block index still points at the right block) and are dropped at the end
    of ``plan`` by ``_compact``."""
    data = message_to_dict(message)
    content = [
        None if b["type"] == "text" and not b["text"] else {k: v for k, v in b.items() if k != "input_error"}
        for b in data["content"]  # input_error: our note on a garbled input, not the API's
    ]
    return {**data, "content": content}


class WireCache:
    """The wire form of what a run sends again and again, kept by object identity: the
    messages (the exemplar turns and an episode's history are the same ``Message`` objects
    request after request) with each block's token estimate, and the tools. Requests share
    the cached message dicts: ``plan`` never edits one in place, it replaces a message it
    changes (a breakpoint, an empty block left out) with a copy in its own list."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._cache: dict[int, tuple[Any, Any]] = {}
        self._system: dict[str, int] = {}

    def _get(self, key: Any, make: Callable[[Any], Any]) -> Any:
        hit = self._cache.get(id(key))
        if hit is None or hit[0] is not key:
            if len(self._cache) >= self._size:
                self._cache.clear()
            hit = self._cache[id(key)] = (key, make(key))
        return hit[1]

    def messages(self, messages: Iterable[Message]) -> tuple[list[dict[str, Any]], list[tuple[int, ...]]]:
        """The wire messages (shared dicts, a new list) and each one's block token estimates."""
        wire, sizes = [], []
        for message in messages:
            data, size = self._get(message, _wire_and_sizes)
            wire.append(data)
            sizes.append(size)
        return wire, sizes

    def system_tokens(self, system: str) -> int:
        """The token estimate of the system prompt's wire form (kept by value: one per prompt)."""
        tokens = self._system.get(system)
        if tokens is None:
            if len(self._system) >= 64:
                self._system.clear()
            tokens = self._system[system] = _estimate([{"type": "text", "text": system}])
        return tokens

    def tools(self, tools: tuple[ToolSpec, ...]) -> tuple[list[dict[str, Any]], int]:
        """The tools' wire form (a new list of shared dicts) and its token estimate."""
        wire, tokens = self._get(tools, _wire_tools)
        return list(wire), tokens


def _wire_and_sizes(message: Message) -> tuple[dict[str, Any], tuple[int, ...]]:
    data = _wire_message(message)
    return data, tuple(0 if b is None else _estimate(b) for b in data["content"])


def _wire_tools(tools: tuple[ToolSpec, ...]) -> tuple[list[dict[str, Any]], int]:
    wire = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
    return wire, _estimate(wire)


def _compact(wire: list[dict[str, Any]]) -> None:
    """Empty text blocks (``None`` placeholders) left out, in copies of the messages that had any."""
    for k, message in enumerate(wire):
        if None in message["content"]:
            kept = [b for b in message["content"] if b is not None]
            wire[k] = {**message, "content": kept or [{"type": "text", "text": ""}]}  # all empty: as it was


def _estimate(value: Any) -> int:
    """A generous token estimate (about 3 characters a token): a breakpoint is dropped only when
    its prefix is surely below the model's minimum, so no cacheable prefix goes unmarked."""
    return len(_ENCODE(value)) // 3


_ENCODE = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per call


def place_breakpoints(
    arguments: dict[str, Any],
    points: tuple[tuple[int, int], ...] | None,
    minimum: int,
    sizes: list[tuple[int, ...]],
    head_tokens: int,
    shared_marker: dict[str, str] = _CACHE,
    shared: tuple[tuple[int, int], ...] = (),
) -> None:
    """``cache_control`` on the blocks a later request will repeat (at most 4 breakpoints): the
    tools + system and the ``shared`` points (a prefix every example repeats) with
    ``shared_marker`` (the 1-hour lifetime in batch rounds), the others with the default.

    ``points``: (message index, block index) chosen by the policy that built the request (it
    knows which prefix repeats: the exemplars across questions, an episode's history across
    steps); ``None``: the end of the history before the newest turn and the end of the
    newest turn. The tools + system prefix is marked too. A breakpoint whose prefix is below
    the model's minimum cacheable length is left out: the API would not cache it anyway.
    ``sizes`` / ``head_tokens``: the messages' block estimates and the tools + system's
    (``WireCache`` keeps them). A message that gets a breakpoint is replaced by a copy (the
    list's dicts may be shared with other requests).
    """
    messages = arguments["messages"]
    if points is None:
        points = tuple((i, _last_cacheable(messages[i])) for i in (len(messages) - 2, len(messages) - 1) if i >= 0)
    tokens = head_tokens
    marks: list[tuple[int, int]] = []
    head = arguments.get("system") or arguments.get("tools")
    if head and tokens >= minimum:
        head[-1] = {**head[-1], "cache_control": shared_marker}
    wanted: dict[int, set[int]] = {}
    for i, j in points:
        wanted.setdefault(i, set()).add(j)
    for i, blocks in enumerate(sizes):
        here = wanted.get(i)
        if here is None:
            if tokens < minimum:  # past the minimum, every later prefix is too: no more counting
                tokens += sum(blocks)
            continue
        content = messages[i]["content"]
        for j, size in enumerate(blocks):
            if tokens < minimum:
                tokens += size
            block = content[j]
            if j in here and block is not None and block["type"] in _CACHEABLE and tokens >= minimum:
                marks.append((i, j))
    copied: set[int] = set()
    for i, j in marks[-(3 if head and "cache_control" in head[-1] else 4) :]:
        if i not in copied:
            messages[i] = {**messages[i], "content": list(messages[i]["content"])}
            copied.add(i)
        marker = shared_marker if (i, j) in shared else _CACHE
        messages[i]["content"][j] = {**messages[i]["content"][j], "cache_control": marker}


def _last_cacheable(message: dict[str, Any]) -> int:
    for index in range(len(message["content"]) - 1, -1, -1):
        block = message["content"][index]
        if block is not None and block["type"] in _CACHEABLE:
            return index
    return -1


def model_error(exc: anthropic.APIStatusError) -> ModelError:
    """An SDK status error as a ModelError naming the status, the error type and the API's message."""
    kind = exc.type or ""
    # An `error` event inside a 200 stream carries no HTTP status of its own.
    status = (
        exc.status_code if exc.status_code >= 400 else {"overloaded_error": 529, "rate_limit_error": 429}.get(kind, 500)
    )
    retryable = status in (408, 409, 429) or status >= 500
    where = f" (request id {exc.request_id})" if exc.request_id else ""
    return ModelError(
        f"Anthropic API error {status} {kind}: {exc.api_message or exc}{where}",
        status=status,
        retryable=retryable,
        retry_after=retry_after_s(exc.response.headers) if exc.status_code >= 400 else None,
    )


# ------------------------------------------------------------------ SDK event -> StreamEvent


def _count(usage: object, name: str, required: bool) -> int:
    """A token count as the protocol has it: an optional one absent or null is 0; a required one
    missing, or anything but a whole number between 0 and MAX_TOKEN_COUNT, is a malformed
    response (it would corrupt usage and cost). What the SDK's validation has already read as
    a number (the string "12" as 12) is taken as it read it."""
    value = getattr(usage, name, None)
    if value is None and not required:
        return 0
    return token_count(value, f"usage.{name}")


def _usage(usage: sdk.Usage | sdk.MessageDeltaUsage | None, where: str, required: tuple[str, ...]) -> Usage:
    """A usage object; ``required``: the counts the protocol always sends there."""
    if usage is None:
        raise MalformedResponse(f"{where} carries no usage")
    breakdown = getattr(usage, "cache_creation", None)  # the writes by lifetime (5m, 1h), where sent
    return Usage(
        input_tokens=_count(usage, "input_tokens", "input_tokens" in required),
        output_tokens=_count(usage, "output_tokens", "output_tokens" in required),
        cache_creation_input_tokens=_count(usage, "cache_creation_input_tokens", False),
        cache_read_input_tokens=_count(usage, "cache_read_input_tokens", False),
        cache_creation_1h_input_tokens=_count(breakdown, "ephemeral_1h_input_tokens", False) if breakdown else 0,
    )


# The fields each event must carry, and of what kind (the SDK builds an event from whatever
# came: a field sent as null arrives as None, and matching on it would skip or misread it).
_SHAPES: dict[str, tuple[tuple[str, type], ...]] = {
    "message_start": (("message", object),),
    "content_block_start": (("index", int), ("content_block", object)),
    "content_block_delta": (("index", int), ("delta", object)),
    "content_block_stop": (("index", int),),
    "message_delta": (("delta", object),),
}


def _check_shape(event: object) -> None:
    for name, kind in _SHAPES.get(getattr(event, "type", None) or "", ()):
        value = getattr(event, name, None)
        if value is None or (kind is int and type(value) is not int):
            raise MalformedResponse(f"{getattr(event, 'type', None)}.{name} is {value!r}")


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise MalformedResponse(f"{where} is {value!r}, not a string")
    return value


def _stop_reason(value: str | None) -> StopReason | None:
    try:
        return StopReason(value) if value else None
    except ValueError:
        raise ModelError(f"the API sent an unknown stop reason {value!r}") from None


# What this client knows. The SDK parses an unknown type into some known class anyway (an
# unknown event as a message_start without a message, say), so the type string decides.
_KNOWN_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
_KNOWN_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "input_json_delta", "citations_delta"})
# Block types handled by _block_start: ours, and the server-tool ones it refuses by name.
_KNOWN_BLOCKS = frozenset(
    {
        "text",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "container_upload",
    }
)


class StreamMapper:
    """SDK raw stream events -> StreamEvents. Holds the message_delta until message_stop.

    Event, block and delta types this client does not know are skipped (the API may add
    new ones and asks clients to ignore them); so are the deltas and stop of a skipped block.
    ``ignored`` counts what was skipped.
    """

    def __init__(self) -> None:
        self._delta: sdk.RawMessageDeltaEvent | None = None
        self._skipped_blocks: set[int] = set()
        self.ignored = 0
        self.stopped = False  # message_stop seen: the message is complete

    def map(self, event: sdk.RawMessageStreamEvent) -> list[StreamEvent]:
        if getattr(event, "type", None) == "content_block_delta":  # most of a stream: the short way
            index, delta = getattr(event, "index", None), getattr(event, "delta", None)
            if type(index) is int and delta is not None:  # else _check_shape below names what is wrong
                return self._content_delta(index, delta)
        _check_shape(event)
        if getattr(event, "type", None) not in _KNOWN_EVENTS or self._skip(event):
            self.ignored += 1
            return []
        match event:
            case sdk.RawMessageStartEvent(message=message):
                usage = _usage(message.usage, "message_start", ("input_tokens", "output_tokens"))
                return [MessageStart(_text(message.id, "message.id"), _text(message.model, "message.model"), usage)]
            case sdk.RawContentBlockStartEvent(index=index, content_block=block):
                return _block_start(index, block)
            case sdk.RawContentBlockDeltaEvent(index=index, delta=delta):
                return self._content_delta(index, delta)
            case sdk.RawContentBlockStopEvent(index=index):
                return [BlockStop(index)]
            case sdk.RawMessageDeltaEvent():
                self._delta = event
                return []
            case sdk.RawMessageStopEvent():
                self.stopped = True
                if self._delta is None:
                    return [MessageStop(None)]
                message_delta = self._delta.delta
                usage = _usage(self._delta.usage, "message_delta", ("output_tokens",))
                stop = _stop_reason(message_delta.stop_reason)
                return [MessageStop(stop, usage, message_delta.stop_sequence)]
            case _:
                assert_never(event)

    def _skip(self, event: sdk.RawMessageStreamEvent) -> bool:
        match event:
            case sdk.RawContentBlockStartEvent(index=index, content_block=block):
                if getattr(block, "type", None) not in _KNOWN_BLOCKS:
                    self._skipped_blocks.add(index)
                return index in self._skipped_blocks
            case sdk.RawContentBlockStopEvent(index=index):
                return index in self._skipped_blocks
            case _:
                return False  # a delta: _content_delta decides

    def _content_delta(self, index: int, delta: sdk.RawContentBlockDelta) -> list[StreamEvent]:
        """A delta of a skipped block, or of a type this client does not know, is skipped."""
        if index in self._skipped_blocks or getattr(delta, "type", None) not in _KNOWN_DELTAS:
            self.ignored += 1
            return []
        return _delta(index, delta)


def _block_start(index: int, block: SdkStartBlock) -> list[StreamEvent]:
    match block:
        case sdk.TextBlock(text=text):
            return [BlockStart(index, "text"), *([TextDelta(index, _text(text, "text block's text"))] if text else [])]
        case sdk.ThinkingBlock(thinking=thinking, signature=signature):
            out: list[StreamEvent] = [BlockStart(index, "thinking")]
            out += [ThinkingDelta(index, thinking)] if thinking else []
            return out + ([SignatureDelta(index, signature)] if signature else [])
        case sdk.RedactedThinkingBlock(data=data):
            return [BlockStart(index, "redacted_thinking", data=data)]
        case sdk.ToolUseBlock(id=tool_id, name=name, input=input_):
            out = [BlockStart(index, "tool_use", tool_id=tool_id, tool_name=name)]
            return out + ([ToolInputDelta(index, json.dumps(input_))] if input_ else [])
        case (
            sdk.ServerToolUseBlock()
            | sdk.WebSearchToolResultBlock()
            | sdk.WebFetchToolResultBlock()
            | sdk.CodeExecutionToolResultBlock()
            | sdk.BashCodeExecutionToolResultBlock()
            | sdk.TextEditorCodeExecutionToolResultBlock()
            | sdk.ToolSearchToolResultBlock()
            | sdk.ContainerUploadBlock()
        ):
            raise ModelError(f"the API sent a {block.type} block; server tools are never requested here")
        case _:
            assert_never(block)


def _delta(index: int, delta: sdk.RawContentBlockDelta) -> list[StreamEvent]:
    match delta:
        case sdk.TextDelta(text=text):
            return [TextDelta(index, _text(text, "text_delta.text"))]
        case sdk.ThinkingDelta(thinking=thinking):
            return [ThinkingDelta(index, _text(thinking, "thinking_delta.thinking"))]
        case sdk.SignatureDelta(signature=signature):
            return [SignatureDelta(index, _text(signature, "signature_delta.signature"))]
        case sdk.InputJSONDelta(partial_json=partial):
            return [ToolInputDelta(index, _text(partial, "input_json_delta.partial_json"))]
        case sdk.CitationsDelta():
            return []  # citations are only sent for documents with citations on; never requested
        case _:
            assert_never(delta)


_EVENT_ADAPTER: pydantic.TypeAdapter[sdk.RawMessageStreamEvent] = pydantic.TypeAdapter(sdk.RawMessageStreamEvent)


def stream_events_from_payloads(payloads: Iterable[tuple[str, Mapping[str, Any]]]) -> list[StreamEvent]:
    """Recorded SSE (event name, JSON payload) pairs -> StreamEvents, through the client's mapping.

    Payloads are validated into the SDK's event types first, so a fixture that the SDK would
    not accept fails here too. ``ping`` is skipped and ``error`` raised, as the SDK does.
    """
    mapper, out = StreamMapper(), []
    for name, payload in payloads:
        if name == "ping":
            continue
        if name == "error":
            error = payload.get("error") or {}
            raise ModelError(f"stream error {error.get('type')}: {error.get('message')}", retryable=True)
        out += mapper.map(_EVENT_ADAPTER.validate_python(payload))
    return out


def sdk_model_ids() -> tuple[str, ...]:
    """The model ids the installed SDK lists (``anthropic/types/model.py``)."""
    literal = next(arg for arg in get_args(sdk.Model) if get_args(arg))
    return tuple(get_args(literal))
