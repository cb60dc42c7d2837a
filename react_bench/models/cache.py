"""Two model layers that save money: an on-disk request cache and a client-side rate limiter.

``CachedModel`` (``cache=true``, the default; ``cache=false`` bypasses it, ``cache=refresh``
asks the model again and overwrites): a complete response is stored on disk, keyed by the
endpoint the client's SDK sends to (``base_url`` as resolved, environment variable included: a
run against another server never reads this one's answers) and the whole request (the client's
kind and model name, messages, prompt, system, tools, tool choice, every sampling setting,
stops, thinking, cache points) plus the sample index, so a rerun of
the same configuration makes no model call while CoT-SC's samples at temperature 0.7 stay
distinct calls. Only complete responses are stored, never failures. An entry that cannot be
read (a damaged file) is a miss and is overwritten, never a crash. Entries live under
``$REACT_BENCH_REQUEST_CACHE`` (default ``~/.cache/react-bench/requests``), one JSON file
each, written atomically. Hits and misses are counted per example; a hit costs nothing. A
write that fails (a read-only or full cache folder) never costs the answer, which was paid
for: the response is used, the failure counted (``cache_write_failures``) and warned of once
per run on stderr.

``LimitedModel`` (``model.requests_per_minute``, ``model.tokens_per_minute``): one limiter
shared by every concurrent example of a run. Requests are paced evenly (a request every
``60 / requests_per_minute`` seconds, and ``60 * input tokens / tokens_per_minute`` seconds
for its estimated input), so no one-minute window can hold more than the limits; a
``retry-after`` from the API is honoured by the retry layer beneath.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from react_bench.events import StreamEvent
from react_bench.models.base import ModelClient, ModelLayer, ModelRequest, endpoint_of, stream_response
from react_bench.models.collector import response_to_events
from react_bench.models.counting import count, served_from_cache
from react_bench.types import ModelResponse, response_from_dict, response_to_dict

CacheMode = Literal["on", "off", "refresh"]


def default_request_cache_dir() -> Path:
    env = os.environ.get("REACT_BENCH_REQUEST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "react-bench" / "requests"


# client settings that cannot change a response (how patiently it is asked, which key pays);
# where it is asked is in the key as the endpoint the SDK resolved (base_url or its environment variable)
_NOT_IN_KEY = frozenset(
    {"api_key_env", "key_env", "base_url", "timeout_s", "n_threads", "n_threads_batch", "cache_ttl"}
)  # cache_ttl: the price, never the answer


def _request_fields(request: ModelRequest) -> dict[str, Any]:
    """The request as the key holds it: the attempt only from the second on, so a run without
    ``epochs`` (and every attempt's first) keeps the keys runs have always had."""
    fields = dataclasses.asdict(request)
    if fields.get("epoch") is None:
        del fields["epoch"]
    del fields["shared_cache_points"]  # which breakpoints are written for an hour: the price only
    return fields


def request_key(client: ModelClient, model: str, request: ModelRequest) -> str:
    config = getattr(client, "config", None)
    settings = dataclasses.asdict(config) if dataclasses.is_dataclass(config) and not isinstance(config, type) else {}
    data = {
        "client": type(client).__name__,
        "endpoint": endpoint_of(client),  # another server is another model, whatever its name
        "settings": {k: v for k, v in settings.items() if k not in _NOT_IN_KEY},  # e.g. prompt_caching
        "model": model,
        "request": _request_fields(request),
    }
    text = json.dumps(data, sort_keys=True, default=sorted, ensure_ascii=True)  # frozensets: sorted lists
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class CachedModel(ModelLayer):
    inner: ModelClient
    directory: Path = field(default_factory=default_request_cache_dir)
    mode: CacheMode = "on"
    client: ModelClient | None = None  # the provider's client, whose settings are part of the key (None: ``inner``)
    _warned: bool = field(default=False, repr=False)

    def path(self, request: ModelRequest) -> Path:
        key = request_key(self.client if self.client is not None else self.inner, self.inner.name, request)
        return self.directory / key[:2] / f"{key}.json"

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        path = self.path(request)
        if self.mode == "on":
            stored = read_entry(path)
            if stored is not None:
                count("cache_hits")
                served_from_cache(stored.id)
                for event in response_to_events(stored):
                    yield event
                yield stored
                return
        items = [item async for item in stream_response(self.inner, request)]
        count("cache_misses")
        response = items[-1]
        assert isinstance(response, ModelResponse)
        try:
            write_entry(path, response_to_dict(response))
        except OSError as exc:
            count("cache_write_failures")
            if not self._warned:
                self._warned = True
                print(
                    f"warning: the request cache could not be written ({exc}); responses are used, not stored "
                    f"(cache=false skips the cache)",
                    file=sys.stderr,
                )
        for item in items:
            yield item


def read_entry(path: Path) -> ModelResponse | None:
    try:
        return response_from_dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):  # damaged: a miss, overwritten below
        return None


def write_entry(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of this writer's own: workers of a Ray run (other processes, other hosts on a shared
    # folder) may write the same entry at once; os.replace makes the last complete one the entry
    tmp = path.with_suffix(f".{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(json.dumps(data, ensure_ascii=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise


Pacer = Callable[[float], Awaitable[float]]  # (this request's interval) -> seconds to wait before sending it


@dataclass
class LimitedModel(ModelLayer):
    """``pacer``: one queue shared beyond this process (``executors/ray.py``'s limiter actor, for every
    worker of a Ray run); None: this process's own queue."""

    inner: ModelClient
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    pacer: Pacer | None = None
    _next: float = 0.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def interval(self, request: ModelRequest) -> float:
        gap = 0.0
        if self.requests_per_minute:
            gap = 60.0 / self.requests_per_minute
        if self.tokens_per_minute:
            gap = max(gap, 60.0 * estimate_input_tokens(request) / self.tokens_per_minute)
        return gap

    async def reserve(self, interval: float) -> float:
        """The wait before a request of this ``interval`` may go (and the queue moved on by it)."""
        async with self._lock:  # one queue for the run: FIFO, shared by all examples
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + interval
        return start - now

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        delay = await (self.pacer or self.reserve)(self.interval(request))
        if delay > 0:
            await asyncio.sleep(delay)
        async for item in stream_response(self.inner, request):
            yield item


def estimate_input_tokens(request: ModelRequest) -> int:
    """About four characters a token, over everything the request sends."""
    data = dataclasses.asdict(request)
    del data["shared_cache_points"]  # a marker for the client, never sent
    return max(1, len(json.dumps(data, default=sorted, ensure_ascii=False)) // 4)
