"""``RetryingModel``: a model layer that makes transient faults invisible to the loop.

It wraps any ``ModelClient`` (``make_model`` puts it around the network providers) and
runs each call to completion before passing anything on: the events of an attempt are
held until its ``MessageStop`` arrives. An attempt that fails in a way that trying again
can cure is discarded whole and the request is sent again as a fresh request:

- a ``ModelError`` with ``retryable=True`` (429, 408, 409, 5xx, 529 overloaded, an ``error``
  event inside a 200 stream, a connection that failed or dropped mid-stream);
- a stream that ended without ``message_stop`` (a 200 response cut short).

A partial response is never used. Waits grow exponentially with full jitter
(``backoff_s * 2**attempt``, at most ``max_backoff_s``, times a random factor in [0.5, 1]);
a ``retry-after`` the server sent (``ModelError.retry_after``) is honoured instead. After
``max_retries`` retries the last failure is raised as a ``ModelError``; the loop ends that
example with reason ``error``, and the run reports it apart from wrong answers.

Why hold the events: a cut stream has already shown some text; passing it on would make
the loop see a response that never existed. The cost is that text reaches the console per
response rather than per token for network models.

Retries are counted per example (``counting.count("retries")``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import cast

from react_bench.events import MessageStop, StreamEvent
from react_bench.models.base import MalformedResponse, ModelClient, ModelError, ModelLayer, ModelRequest
from react_bench.models.collector import MAX_RESPONSE_CHARS, TOO_LONG, collect, delta_chars
from react_bench.models.counting import count
from react_bench.types import ModelResponse


class StreamCut(ModelError):
    """A 200 stream that ended before ``message_stop``: transient, retried."""

    def __init__(self, message: str = "the stream ended without message_stop") -> None:
        super().__init__(message, retryable=True)


@dataclass
class RetryingModel(ModelLayer):
    inner: ModelClient
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        attempt = 0
        while True:
            try:
                events = await self._attempt(request)
            except ModelError as exc:
                if not exc.retryable or attempt >= self.max_retries:
                    if attempt:
                        raise ModelError(
                            f"{exc} (after {attempt + 1} attempts)", status=exc.status, retryable=exc.retryable
                        ) from exc
                    raise
                await self.sleep(self._delay(attempt, exc.retry_after))
                attempt += 1
                count("retries")
                continue
            if attempt:  # the response says what it took (its trace's chat span)
                events[-1] = replace(cast(ModelResponse, events[-1]), retries=attempt)
            for item in events:
                yield item
            return

    async def _attempt(self, request: ModelRequest) -> list[StreamEvent | ModelResponse]:
        """The attempt's events and, last, its response (assembled here, once)."""
        events, chars = [], 0
        async for event in self.inner.stream(request):
            chars += delta_chars(event)
            if chars > MAX_RESPONSE_CHARS:  # never held whole: a server streaming without end
                raise MalformedResponse(TOO_LONG)
            events.append(event)
        if not any(isinstance(e, MessageStop) for e in events):
            raise StreamCut()
        return [*events, collect(events)]

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_backoff_s)
        return min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + self.rng.random() / 2)
