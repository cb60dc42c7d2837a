"""A local HTTP server that speaks the Anthropic Messages API, for tests (DESIGN 6).

Real HTTP on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a background thread, HTTP/1.1
with chunked SSE), so the real ``anthropic`` SDK talks to it through ``base_url``: no mocked
SDK objects anywhere. ``POST /v1/messages`` answers streaming (SSE) or plain JSON.

Responses are scripted per test: a queue of specs (``Reply``, ``Fault``, ``Dropped``,
``StreamError``, ``RawStream``) or a ``responder`` callable (request body -> spec). A
request is validated BEFORE a spec is taken, like the real API, so a 400 consumes nothing;
``assert_complete`` fails when specs are left. Every request is recorded with its headers
(credential values replaced by ``<redacted>``), body, and when it arrived and was answered.

For benchmarks: ``latency_s`` holds every Messages reply that long before its first byte
(the model's time), and ``requests_per_minute`` enforces a rate limit the way the API
documents it (``RequestLimiter``: a token bucket; 429 ``rate_limit_error`` with
``retry-after`` when it is empty).

Validation (``check_request``) enforces the rules the loop and the client must respect,
with the API's error shape ``{"type": "error", "error": {"type": ..., "message": ...}}``:
tool_use answered by tool_result blocks first in the very next user message, no
tool_result for an unknown id, thinking blocks sent back unchanged and signed, non-empty
text blocks, stop sequences with a non-whitespace character, at most 4 cache breakpoints,
and the per-model rules of DESIGN 6b read from ``models.capabilities`` (the single source):
prefill, sampling parameters, thinking modes, forced tool use.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import re
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from react_bench.errors import ConfigError
from react_bench.models.capabilities import ClaudeModel, model_info
from react_bench.testing.sse import (
    CacheSimulator,
    Dropped,
    Fault,
    RawStream,
    Reply,
    Spec,
    Stalled,
    StreamError,
    Truncated,
    build_message,
    encode_sse,
    signature_matches,
    stream_events,
)

__all__ = [
    "ApiError",
    "Dropped",
    "Fault",
    "MessagesServer",
    "RawStream",
    "RecordedRequest",
    "Reply",
    "Stalled",
    "StreamError",
    "Truncated",
    "claude_model_config",
]

Responder = Callable[[dict[str, Any]], Spec]

FAULT_KINDS = ("rate_limited", "overloaded", "server_error", "dropped", "truncated", "stream_error")

PREFILL_REJECTED = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)


def claude_model_config(
    base_url: str, key_env: str, name: str = "claude-sonnet-4-6", **settings: Any
) -> dict[str, Any]:
    """A run's model config (``RunConfig.model``) for a Claude model answered by the server at
    ``base_url``: the key is read from ``key_env`` (any value; the server only checks that one
    is sent), and no retries unless ``settings`` say otherwise."""
    return {
        "provider": "anthropic",
        "name": name,
        "api_key_env": key_env,
        "base_url": base_url,
        "max_retries": 0,
        **settings,
    }


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 0
    received: float = field(default_factory=time.monotonic)  # when it arrived (rate-limit checks)
    answered: float = 0.0  # when its answer was written (0: not yet)


_CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass
class Batch:
    """A Message Batch: it ends once it has been retrieved ``polls_until_ended`` times and
    ``latency_s`` has passed since it was created (the API's processing time)."""

    id: str
    results: list[dict[str, Any]]
    polls_until_ended: int
    polls: int = 0
    latency_s: float = 0.0
    created: float = field(default_factory=time.monotonic)

    @property
    def ended(self) -> bool:
        return self.polls >= self.polls_until_ended and time.monotonic() - self.created >= self.latency_s

    def view(self, base_url: str) -> dict[str, Any]:
        kinds = [r["result"]["type"] for r in self.results]
        counts = {k: kinds.count(k) if self.ended else 0 for k in ("succeeded", "errored", "canceled", "expired")}
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": "ended" if self.ended else "in_progress",
            "request_counts": {"processing": 0 if self.ended else len(kinds), **counts},
            "created_at": "2026-12-01T00:00:00Z",
            "expires_at": "2026-12-02T00:00:00Z",
            "ended_at": "2026-12-01T00:01:00Z" if self.ended else None,
            "results_url": f"{base_url}/v1/messages/batches/{self.id}/results" if self.ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
        }


class RequestLimiter:
    """A requests-per-minute limit as the API applies it: a token bucket, continuously
    replenished at ``rpm / 60`` per second and holding at most one second's worth (the API's
    documentation: a per-minute limit may be enforced over shorter intervals, 60 RPM as one
    request per second). A request that finds the bucket empty is answered 429
    ``rate_limit_error`` with ``retry-after``; ``rejected`` counts them."""

    def __init__(self, requests_per_minute: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rpm = float(requests_per_minute)
        self.rate = self.rpm / 60.0
        self.capacity = max(1.0, self.rate)
        self.clock = clock  # a test's own clock: the bucket then never depends on the machine's speed
        self._tokens = self.capacity
        self._at = clock()
        self._lock = threading.Lock()
        self.rejected = 0

    def admit(self) -> float | None:
        """None if the request may go, else the seconds until a token is there."""
        with self._lock:
            now = self.clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return None
            self.rejected += 1
            return (1.0 - self._tokens) / self.rate

    def headers(self, wait_s: float) -> dict[str, str]:
        return {
            "retry-after": str(max(1, math.ceil(wait_s))),  # whole seconds, as the API sends it
            "anthropic-ratelimit-requests-limit": str(int(self.rpm)),
            "anthropic-ratelimit-requests-remaining": "0",
        }


@dataclass(frozen=True)
class ApiError:
    status: int
    type: str
    message: str

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.type, "message": self.message}}


# -------------------------------------------------------------------------- validation


def check_request(body: Mapping[str, Any], paused: Collection[str] = ()) -> ApiError | None:
    """The first rule ``body`` breaks, as the API would report it; None when it is valid.
    ``paused``: the content (``paused_key``) of the responses this server ended with
    ``pause_turn``: sent back as the last assistant turn, each continues that turn (the API's
    documented way), whatever the model's prefill rule."""
    model = body.get("model")
    if not isinstance(model, str):
        return ApiError(400, "invalid_request_error", "model: Field required")
    try:
        info = model_info(model)
    except ConfigError:
        return ApiError(404, "not_found_error", f"model: {model}")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 0:
        return _invalid("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return _invalid("messages: at least one message is required")
    for message in (_params(body, info), _cache_breakpoints(body), _messages(messages, info, body, paused)):
        if message:
            return _invalid(message)
    return None


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def _params(body: Mapping[str, Any], info: ClaudeModel) -> str | None:
    for i, stop in enumerate(body.get("stop_sequences") or []):
        if not isinstance(stop, str) or not stop.strip():
            return f"stop_sequences.{i}: each stop sequence must contain at least one non-whitespace character"
    if not info.sampling:
        for name in ("temperature", "top_p", "top_k"):
            if body.get(name) is not None:
                return f"`{name}` is deprecated for this model."
    thinking = body.get("thinking") or {}
    kind = thinking.get("type")
    if kind in ("enabled", "adaptive") and kind not in info.thinking_modes:
        if kind == "enabled":
            return (
                '"thinking.type.enabled" is not supported for this model. '
                'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
            )
        return '"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled".'
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
    thinking_on = kind in ("enabled", "adaptive")
    if thinking_on and body.get("temperature") not in (None, 1, 1.0):
        return "`temperature` may only be set to 1 when thinking is enabled."
    forced = (body.get("tool_choice") or {}).get("type") in ("any", "tool")
    if forced and not info.forced_tool_use:
        return "tool_choice: forced tool use (`any` or `tool`) is not supported for this model."
    if forced and thinking_on:
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def _cache_breakpoints(body: Mapping[str, Any]) -> str | None:
    blocks: list[Any] = list(body.get("tools") or [])
    blocks += body["system"] if isinstance(body.get("system"), list) else []
    for message in body["messages"]:
        blocks += message.get("content") if isinstance(message.get("content"), list) else []
    marks = [b["cache_control"] for b in blocks if isinstance(b, Mapping) and b.get("cache_control")]
    found = len(marks) + bool(body.get("cache_control"))
    if found > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {found}."
    lifetimes = [m.get("ttl", "5m") if isinstance(m, Mapping) else "5m" for m in marks]
    if any(m not in ("5m", "1h") for m in lifetimes):
        return "cache_control.ttl: Input should be '5m' or '1h'"
    if "1h" in lifetimes[lifetimes.index("5m") :] if "5m" in lifetimes else False:
        # the API: a longer lifetime's breakpoints come before a shorter one's
        return "a cache_control with ttl '1h' must not come after one with ttl '5m'"
    return None


def _content(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def paused_key(content: list[Mapping[str, Any]]) -> str:
    keep = ("type", "text", "id", "name", "input", "thinking", "signature", "data")
    return json.dumps([{k: b[k] for k in keep if k in b} for b in content], sort_keys=True)


def _messages(
    messages: list[Mapping[str, Any]], info: ClaudeModel, body: Mapping[str, Any], paused: Collection[str] = ()
) -> str | None:
    for i, message in enumerate(messages):
        if message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        for j, block in enumerate(_content(message)):
            if block.get("type") == "text" and not block.get("text"):
                return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
            if block.get("type") == "thinking":
                if not block.get("signature"):
                    return f"messages.{i}.content.{j}.thinking.signature: Field required"
                if not signature_matches(str(block["signature"]), str(block.get("thinking", ""))):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        problem = _tool_pairing(messages, i)
        if problem:
            return problem
    last = messages[-1]
    if last.get("role") == "assistant" and any(paused_key(_content(last)).endswith(p[1:]) for p in paused):
        return None  # a paused turn sent back: it continues
    return _prefill(last, info, body)


def _tool_pairing(messages: list[Mapping[str, Any]], i: int) -> str | None:
    message = messages[i]
    content = _content(message)
    if message["role"] == "assistant":
        ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
        if not ids or i == len(messages) - 1:
            return None
        reply = _content(messages[i + 1]) if messages[i + 1].get("role") == "user" else []
        answered = {b.get("tool_use_id") for b in reply if b.get("type") == "tool_result"}
        missing = [x for x in ids if x not in answered]
        if missing:
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(map(str, missing))}. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message."
            )
        kinds = [b.get("type") for b in reply]
        first_other = next((k for k, kind in enumerate(kinds) if kind != "tool_result"), len(kinds))
        if "tool_result" in kinds[first_other:]:
            return (
                f"messages.{i + 1}: `tool_result` blocks must come first in the user message content, "
                "before any other content."
            )
        return None
    previous = _content(messages[i - 1]) if i > 0 and messages[i - 1].get("role") == "assistant" else []
    known = {b.get("id") for b in previous if b.get("type") == "tool_use"}
    for j, block in enumerate(content):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
            return (
                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                "block in the previous message."
            )
    return None


def _prefill(last: Mapping[str, Any], info: ClaudeModel, body: Mapping[str, Any]) -> str | None:
    if last.get("role") != "assistant":
        return None
    if not info.prefill:
        return PREFILL_REJECTED
    if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
        return "Assistant message prefill is not supported when thinking is enabled."
    content = _content(last)
    if content and content[-1].get("type") == "text" and content[-1]["text"] != content[-1]["text"].rstrip():
        return "messages: final assistant content cannot end with trailing whitespace"
    return None


_SECRET_HEADERS = frozenset({"x-api-key", "authorization"})


class MessagesServer:
    """The server; use as a context manager. ``base_url`` goes to the SDK or the client config."""

    def __init__(
        self,
        script: tuple[Spec, ...] | list[Spec] = (),
        *,
        responder: Responder | None = None,
        chunk: int = 4,
        json_chunk: int = 3,
        min_cache_tokens: int | None = None,  # None: each model's documented minimum (as the API)
        fault_rate: float = 0.0,
        fault_seed: int = 0,
        latency_s: float = 0.0,
        requests_per_minute: float | None = None,
    ) -> None:
        self.responder = responder
        # How long the model takes: each Messages reply waits this long before its first byte.
        self.latency_s = latency_s
        self.limiter = RequestLimiter(requests_per_minute) if requests_per_minute else None
        # Fault injection: each reply is replaced, with probability fault_rate, by one of the
        # failures a real API shows (FAULT_KINDS); ``faults`` counts what was injected.
        self.fault_rate = fault_rate
        self._fault_rng = random.Random(fault_seed)
        self.faults: Counter[str] = Counter()
        # Message Batches: created at once, "ended" after ``batch_polls`` retrievals and
        # ``batch_latency_s`` seconds (each batch's processing time)
        self.batches: dict[str, Batch] = {}
        self.batch_polls = 2
        self.batch_latency_s = 0.0
        self.batch_expire = 0  # the next this many batch requests end "expired" (not processed in 24 h)
        self.refuse_batches: ApiError | None = None  # an account or endpoint without batches answers this
        self.chunk, self.json_chunk = chunk, json_chunk
        self.cache = CacheSimulator(min_cache_tokens)
        self.requests: list[RecordedRequest] = []
        # What the server would bill: every complete answer (model, usage, whether from a batch);
        # a cut stream or an error bills nothing here
        self.billed: list[dict[str, Any]] = []
        self.connections = 0  # TCP connections accepted (keep-alive: far fewer than requests)
        self._script: deque[Spec] = deque(script)
        self._lock = threading.Lock()
        self._count = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.paused: set[str] = set()  # paused_key of each response ended with pause_turn
        self.stopping = threading.Event()  # set by stop(): streams that never end (Stalled) end then

    def __enter__(self) -> MessagesServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.stopping.clear()
        handler = type("MessagesHandler", (_Handler,), {"state": self})
        self._httpd = _HTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="messages-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._httpd = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the messages server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def enqueue(self, *specs: Spec) -> None:
        with self._lock:
            self._script.extend(specs)

    @property
    def remaining(self) -> int:
        return len(self._script)

    def assert_complete(self) -> None:
        if self._script:
            raise AssertionError(f"{len(self._script)} scripted response(s) never requested: {list(self._script)!r}")

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            self._count += 1
            return self._count

    def _new_batch(self, requests: list[dict[str, Any]]) -> Batch:
        """A Message Batch: each request answered as a plain request would be (script or
        responder, with fault injection), a fault becoming an ``errored`` result."""
        results = []
        for request in requests:
            with self._lock:
                expire, self.batch_expire = self.batch_expire > 0, max(self.batch_expire - 1, 0)
            if expire:  # the API bills nothing for it and gives no message
                results.append({"custom_id": request["custom_id"], "result": {"type": "expired"}})
                continue
            spec = self._next_spec(request["params"])
            with self._lock:
                self._count += 1
                number = self._count
            if isinstance(spec, Reply):
                message = build_message(spec, request["params"], number=number, cache=self.cache)
                result: dict[str, Any] = {"type": "succeeded", "message": message}
                self._bill(message, batch=True)
            elif isinstance(spec, (Dropped, Truncated, StreamError)):
                error = ApiError(500, "api_error", "Internal server error")
                result = {"type": "errored", "error": error.body()}
            elif isinstance(spec, Fault):
                result = {"type": "errored", "error": ApiError(spec.status, spec.error_type, spec.message).body()}
            else:
                result = {"type": "errored", "error": _invalid("no response left for this request").body()}
            results.append({"custom_id": request["custom_id"], "result": result})
        with self._lock:
            batch = Batch(
                f"msgbatch_local_{len(self.batches) + 1:04d}", results, self.batch_polls, latency_s=self.batch_latency_s
            )
            self.batches[batch.id] = batch
        return batch

    def _bill(self, message: Mapping[str, Any], *, batch: bool = False) -> None:
        with self._lock:
            self.billed.append({"model": message["model"], "usage": dict(message["usage"]), "batch": batch})

    def _next_spec(self, body: dict[str, Any]) -> Spec | None:
        with self._lock:
            if self._script:
                return self._inject(self._script.popleft())
        return self._inject(self.responder(body)) if self.responder is not None else None

    def _inject(self, spec: Spec) -> Spec:
        if not isinstance(spec, Reply) or self.fault_rate <= 0:
            return spec
        with self._lock:
            if self._fault_rng.random() >= self.fault_rate:
                return spec
            kind = self._fault_rng.choice(FAULT_KINDS)
            cut = self._fault_rng.randint(1, 6)
            self.faults[kind] += 1
        match kind:
            case "rate_limited":
                return Fault.rate_limited(0.001)
            case "overloaded":
                return Fault.overloaded(retry_after_ms=1)
            case "server_error":
                return Fault.server_error()
            case "dropped":
                return Dropped(spec, after_events=cut)
            case "truncated":
                return Truncated(spec, after_events=cut)
            case _:
                return StreamError(spec, after_events=cut)


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 512  # the listen backlog: many clients connecting at once are all accepted


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked SSE, like the real API
    timeout = 10  # an idle keep-alive connection ends instead of holding a thread
    state: MessagesServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def setup(self) -> None:
        super().setup()
        # Each SSE event is its own small write: without this, Nagle's algorithm holds it until
        # the client's delayed ACK (about 40 ms a response), a stall the real API does not have.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.state._lock:
            self.state.connections += 1

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): ("<redacted>" if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        self._recorded = RecordedRequest(self.path, headers, body if isinstance(body, dict) else {})
        number = self.state._record(self._recorded)
        self._request_id = f"req_local_{number:04d}"
        try:
            self._answer(body if isinstance(body, dict) else None, number)
        finally:
            self._recorded.answered = time.monotonic()

    def handle(self) -> None:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            super().handle()  # a client closing a keep-alive connection is not an error

    def _status(self, status: int) -> None:
        """Record the status BEFORE the client can see the answer (tests read it right after)."""
        self._recorded.status = status
        self.send_response(status)

    def do_GET(self) -> None:
        headers = {k.lower(): ("<redacted>" if k.lower() in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        self._recorded = RecordedRequest(self.path, headers, {})
        number = self.state._record(self._recorded)
        self._request_id = f"req_local_{number:04d}"
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            return self._error(ApiError(401, "authentication_error", "x-api-key header is required"))
        parts = self.path.split("?")[0].strip("/").split("/")  # v1 messages batches <id> [results]
        batch = (
            self.state.batches.get(parts[3]) if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] else None
        )
        if batch is None:
            return self._error(ApiError(404, "not_found_error", f"Not Found: {self.path}"))
        if len(parts) == 5 and parts[4] == "results":
            if not batch.ended:
                return self._error(_invalid("the batch has not ended: no results yet"))
            data = "".join(json.dumps(line) + "\n" for line in batch.results).encode()
            self._status(200)
            self.send_header("content-type", "application/binary")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        batch.polls += 1
        return self._json(200, batch.view(self.state.base_url))

    def _create_batch(self, body: dict[str, Any]) -> None:
        if self.state.refuse_batches is not None:
            return self._error(self.state.refuse_batches)
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return self._error(_invalid("requests: a non-empty list is required"))
        ids = [r.get("custom_id") for r in requests if isinstance(r, dict)]
        if len(ids) != len(requests) or len(set(ids)) != len(ids) or not all(_CUSTOM_ID.fullmatch(str(i)) for i in ids):
            return self._error(_invalid("requests: each needs a unique custom_id of 1-64 letters, digits, _ or -"))
        for request in requests:
            params = request.get("params")
            if not isinstance(params, dict) or params.get("stream"):
                return self._error(_invalid("params: a Messages request without streaming is required"))
            problem = check_request(params)
            if problem is not None:
                return self._error(problem)
        batch = self.state._new_batch(requests)
        return self._json(200, batch.view(self.state.base_url))

    def _answer(self, body: dict[str, Any] | None, number: int) -> None:
        if self.path.split("?")[0] == "/v1/messages/batches" and body is not None:
            if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
                return self._error(ApiError(401, "authentication_error", "x-api-key header is required"))
            return self._create_batch(body)
        if self.path.split("?")[0] != "/v1/messages":
            return self._error(ApiError(404, "not_found_error", f"Not Found: {self.path}"))
        if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
            return self._error(ApiError(401, "authentication_error", "x-api-key header is required"))
        limiter = self.state.limiter
        wait = limiter.admit() if limiter is not None else None
        if wait is not None:
            assert limiter is not None
            error = ApiError(429, "rate_limit_error", "Number of requests has exceeded your per-minute rate limit")
            return self._error(error, limiter.headers(wait))
        if body is None:
            return self._error(_invalid("The request body is not valid JSON."))
        problem = check_request(body, self.state.paused)
        if problem is not None:
            return self._error(problem)
        if self.state.latency_s > 0:
            time.sleep(self.state.latency_s)
        spec = self.state._next_spec(body)
        if spec is None:
            return self._error(_invalid("messages server: the test script has no response left for this request"))
        return self._serve(spec, body, number)

    def _serve(self, spec: Spec, body: dict[str, Any], number: int) -> None:
        if isinstance(spec, Fault):
            return self._error(ApiError(spec.status, spec.error_type, spec.message or spec.error_type), spec.headers)
        if isinstance(spec, RawStream):
            self._start_stream(spec.headers)
            self._chunk(spec.body)
            return self._end_stream()
        reply = spec if isinstance(spec, Reply) else spec.reply
        message = build_message(reply, body, number=number, cache=self.state.cache)
        if message["stop_reason"] == "pause_turn":
            with self.state._lock:
                self.state.paused.add(paused_key(message["content"]))
        if not body.get("stream"):
            if isinstance(spec, Reply):
                self.state._bill(message)
            return self._json(200, message) if isinstance(spec, Reply) else self._drop()
        events = stream_events(message, chunk=self.state.chunk, json_chunk=self.state.json_chunk)
        if isinstance(spec, (Dropped, Truncated, StreamError, Stalled)):
            events = events[: spec.after_events]
        else:
            self.state._bill(message)
        self._start_stream()
        for name, payload in events:
            self._chunk(encode_sse(name, payload))
        if isinstance(spec, Dropped):
            return self._drop()
        if isinstance(spec, Stalled):
            return self._stall(spec.interval_s)
        if isinstance(spec, StreamError):  # the API reports failures inside a 200 stream this way
            self._chunk(encode_sse("error", ApiError(200, spec.error_type, spec.message).body()))
        return self._end_stream()

    def _json(self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._status(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", self._request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: ApiError, headers: Mapping[str, str] | None = None) -> None:
        return self._json(error.status, {**error.body(), "request_id": self._request_id}, headers)

    def _start_stream(self, headers: Mapping[str, str] | None = None) -> None:
        self._status(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self._request_id)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _stall(self, interval_s: float) -> None:
        """A ``ping`` every ``interval_s`` until the client hangs up or the server stops."""
        ping = encode_sse("ping", {"type": "ping"})
        try:
            while not self.state.stopping.wait(interval_s):
                self._chunk(ping)
        except OSError:  # the client gave up: what the test wants
            pass
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the socket with the answer unfinished: the client sees a broken stream."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)
