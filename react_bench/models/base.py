"""The model seam: requests, capabilities, the ``ModelClient`` protocol.

A client turns a provider-neutral ``ModelRequest`` into a stream of ``StreamEvent``s;
``generate`` assembles them into a ``ModelResponse`` with the pure collector. Provider SDK
types never leave the provider's module.

Settings a model rejects (DESIGN 6b) are never sent to fail: ``adapt_request`` removes them
according to the model's ``ModelCapabilities`` and names them, so that a run can record
"temperature=0 not applied" instead of pretending it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from react_bench.errors import ConfigError
from react_bench.events import StreamEvent
from react_bench.types import Message, ModelResponse

# Dataclass field metadata of a setting that may change when a run is resumed or replayed: it
# cannot change an answer (a timeout, a thread count, a retry budget). Config classes mark them.
OPERATIONAL: dict[str, Any] = {"operational": True}


def operational(cls: type, name: str) -> bool:
    """Whether field ``name`` of the config dataclass ``cls`` is marked operational."""
    import dataclasses

    found = {f.name: f for f in dataclasses.fields(cls)}.get(name)
    return found is not None and bool(found.metadata.get("operational"))


class ModelError(Exception):
    """A provider or model failure that ends one episode (not a bug in our code).

    ``status`` is the HTTP status where there is one; ``retryable`` says whether trying
    the same request later could succeed (``models.retrying`` does); ``retry_after`` is the
    wait in seconds the server asked for, where it asked.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ):
        from react_bench.redact import without_userinfo

        super().__init__(without_userinfo(message))  # a URL quoted in it keeps no credentials
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class MalformedResponse(ModelError):
    """A response the protocol does not allow (unparseable, or a shape or count it cannot have):
    retried like a cut stream (a proxy or a server fault), then an error on that example."""

    def __init__(self, message: str) -> None:
        super().__init__(f"malformed response: {message}", retryable=True)


MAX_TOKEN_COUNT = 100_000_000  # no request or response of any model comes near: a larger count is corrupt


def token_count(value: object, where: str) -> int:
    """A token count as a protocol sends it: a whole number between 0 and ``MAX_TOKEN_COUNT``;
    anything else (negative, fractional, a string, null, absurd) is a ``MalformedResponse``,
    since it would corrupt usage and cost."""
    if type(value) is not int or not 0 <= value <= MAX_TOKEN_COUNT:
        raise MalformedResponse(f"{where} is {value!r}, not a token count")
    return value


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait the server asked for: ``retry-after-ms``, else ``retry-after`` in seconds
    (an HTTP date or anything unreadable: None, the caller's own backoff)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if seconds >= 0 and seconds == seconds:  # not NaN
            return seconds
    return None


class ModelRefused(ModelError):
    """The model declined to answer (stop reason ``refusal``): not a fault, not retried; the
    example ends with reason ``refused``."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ThinkingConfig:
    mode: Literal["adaptive", "enabled"] = "adaptive"
    budget_tokens: int | None = None
    display: Literal["summarized", "omitted"] = "summarized"


@dataclass(frozen=True)
class ModelRequest:
    """One model call. Either ``prompt`` (raw text completion) or ``messages`` (chat)."""

    messages: tuple[Message, ...] = ()
    prompt: str | None = None
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: Literal["auto", "any", "none"] | None = None  # None: the provider's default (auto)
    max_tokens: int = 100
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    thinking: ThinkingConfig | None = None
    # Distinguishes otherwise identical sampled calls (CoT-SC sample k): each its own cache key.
    sample_index: int | None = None
    # The attempt (``epochs=k``): None for the first, 2..k after, each its own cache key and seed.
    epoch: int | None = None
    # Prompt-cache breakpoints: (message index, block index) of blocks that a later request
    # repeats, chosen by the policy that built the request; None: the client's default.
    cache_points: tuple[tuple[int, int], ...] | None = None
    # How many of the first ``cache_points`` mark a prefix every example shares (the exemplars):
    # batch rounds write those for an hour. Not in the request cache's key (it cannot change an answer).
    shared_cache_points: int = 0
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model accepts. Prices are USD per million tokens (None: unknown/free)."""

    raw_completion: bool = False  # accepts ModelRequest.prompt
    chat: bool = True
    tools: bool = True
    prefill: bool = True  # a conversation may end with an assistant message
    sampling: bool = True  # temperature / top_p accepted
    thinking_modes: frozenset[str] = frozenset()  # subset of {"adaptive", "enabled"}
    price_input: float | None = None
    price_output: float | None = None
    price_cache_write: float | None = None
    price_cache_read: float | None = None


@runtime_checkable
class ModelClient(Protocol):
    """What every model offers the runners: a streamed call, and an honest account of what
    it will leave out of a request (``not_applied``: the settings, e.g. ``temperature=0.0``,
    that this model refuses and the client therefore does not send). A run asks it of the
    requests its policies build, and records the answer."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> ModelCapabilities: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]: ...

    @property
    def endpoint(self) -> str | None:
        """The URL a network client sends its requests to, as its SDK resolved it (``base_url``, or
        the SDK's own environment variable and default); None for a client with no server."""

    @property
    def sdk(self) -> str | None:
        """``"<package> <version>"`` of the SDK the client speaks through; None: none."""

    async def aclose(self) -> None:
        """Close what the client holds open (an HTTP connection pool); called once, at a run's end."""


class NoServer:
    """What a client that runs in the process (the local, scripted and replayed models) declares
    of ``ModelClient``'s network side: no endpoint, no SDK, nothing to close."""

    @property
    def endpoint(self) -> str | None:
        return None

    @property
    def sdk(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None


def endpoint_of(client: ModelClient) -> str | None:
    """``client.endpoint`` without a trailing slash (one server, one spelling)."""
    value = client.endpoint
    return None if value is None else str(value).rstrip("/")


def endpoint_host(client: ModelClient) -> str | None:
    """The endpoint as ``host[:port]`` (never a user, a password or a query): what run.json records."""
    from urllib.parse import urlsplit

    url = endpoint_of(client)
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or url
    return f"{host}:{parts.port}" if parts.port else host


@runtime_checkable
class BatchClient(Protocol):
    """A provider that also takes requests in batches at half price (Anthropic's Message Batches
    API, OpenAI's Batch API): ``executors/rounds.py`` drives it. ``batch_params``: a request's body in a
    batch; ``batch_stops``: the stops cut client-side from its answer; ``batch_group``: requests
    of one group may share a batch (OpenAI: one endpoint a batch); ``batch_limits``: requests and
    bytes a batch may hold; ``batch_supported``: whether the server has the batch API at all;
    ``for_rounds``: the client told its requests go in rounds (minutes apart), ``cache_ttl``: the
    lifetime its prompt cache is then written for (``5m`` the standard, ``1h`` Anthropic's long one)."""

    batch_limits: tuple[int, int]
    cache_ttl: str

    async def batch_supported(self) -> bool: ...

    def for_rounds(self) -> None: ...

    def batch_params(self, request: ModelRequest) -> dict[str, Any]: ...

    def batch_stops(self, request: ModelRequest) -> tuple[str, ...]: ...

    def batch_group(self, request: ModelRequest) -> str: ...

    async def batch_create(self, items: list[tuple[str, ModelRequest]]) -> str: ...

    async def batch_status(self, batch_id: str) -> tuple[bool, dict[str, int]]: ...

    async def batch_results(self, batch_id: str, stops: dict[str, tuple[str, ...]]) -> dict[str, Any]: ...


class ModelLayer:
    """What every model layer (retries, rate limits, the request cache, recording) shares: it
    wraps ``inner`` (a ``ModelClient``) and passes everything but the call through. A layer
    implements ``stream_response`` (events, then the response: see ``stream_response`` below);
    its ``stream`` is that without the response."""

    inner: ModelClient

    def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async for item in self.stream_response(request):
            if not isinstance(item, ModelResponse):
                yield item

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def capabilities(self) -> ModelCapabilities:
        return self.inner.capabilities

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return self.inner.not_applied(request)

    @property
    def endpoint(self) -> str | None:
        return self.inner.endpoint

    @property
    def sdk(self) -> str | None:
        return self.inner.sdk

    async def aclose(self) -> None:
        await self.inner.aclose()


# The attempt of the example being solved (``epochs=k``: 1..k), set around each attempt
# (``episode.solve_example``, in this process or a Ray worker's) and put on its requests by the
# stack's top layer (``AttemptModel``), so no policy needs to know it.
ATTEMPT: ContextVar[int] = ContextVar("react_bench_attempt", default=1)
EPOCH_SEED_STRIDE = 10_000  # a sampled call's seed: seed + sample_index + (epoch - 1) x this


def call_seed(seed: int, request: ModelRequest) -> int:
    """The seed a sampling client sends for ``request``: CoT-SC's sample and the attempt apart."""
    return seed + (request.sample_index or 0) + EPOCH_SEED_STRIDE * ((request.epoch or 1) - 1)


@dataclass
class AttemptModel(ModelLayer):
    """The top of a run's stack: each request carries its attempt (``ATTEMPT``) from the second on."""

    inner: ModelClient

    def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        epoch = ATTEMPT.get()
        return stream_response(self.inner, request if epoch == 1 else replace(request, epoch=epoch))


def adapt_request(request: ModelRequest, caps: ModelCapabilities) -> tuple[ModelRequest, tuple[str, ...]]:
    """Drop what the model rejects; return the request to send and what was not applied."""
    dropped: list[str] = []
    changes: dict[str, Any] = {}
    if not caps.sampling:
        if request.temperature is not None:
            dropped.append(f"temperature={request.temperature}")
            changes["temperature"] = None
        if request.top_p is not None:
            dropped.append(f"top_p={request.top_p}")
            changes["top_p"] = None
    if request.thinking is not None and request.thinking.mode not in caps.thinking_modes:
        dropped.append(f"thinking={request.thinking.mode}")
        changes["thinking"] = None
    if request.tools and not caps.tools:
        raise ConfigError("this model does not support tools; use runner=text")
    if request.prompt is not None and not caps.raw_completion:
        raise ConfigError("this model does not take raw text completions; send messages")
    return (replace(request, **changes) if changes else request), tuple(dropped)


def stream_response(client: ModelClient, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
    """One call: its ``StreamEvent``s as they come, then the whole ``ModelResponse``, last.

    The response is assembled once per call however many layers it passes: a ``ModelLayer``
    hands on the response it already holds (the retry layer assembles it, the request cache
    reads it, the recorder records it); only a provider client's events (its ``stream``) are
    assembled here, with the pure collector. A layer's own iterator is returned as it is (no
    generator around it: every event passes each generator of the stack)."""
    if isinstance(client, ModelLayer):
        return client.stream_response(request)
    return _collected(client, request)


async def _collected(client: ModelClient, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
    from react_bench.models.collector import ResponseCollector

    collector = ResponseCollector()
    async for event in client.stream(request):
        collector.feed(event)
        yield event
    yield collector.response()


async def generate(
    client: ModelClient,
    request: ModelRequest,
    on_event: Callable[[StreamEvent], None] | None = None,
) -> ModelResponse:
    """Run one streamed call to completion and return the assembled response."""
    async for item in stream_response(client, request):
        if isinstance(item, ModelResponse):
            return item
        if on_event is not None:
            on_event(item)
    raise AssertionError("a call's stream ends with its response")
