"""One attempt's whole deadline, shared by the network clients (Anthropic, OpenAI-compatible).

A stream that keeps sending bytes (pings, keep-alive comments) never trips a read timeout; the
deadline bounds the attempt as a whole, so it ends too. The client names the setting in the
error it raises when the deadline passes (``TimeoutError`` from ``wait``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")
# The slowest rate a server is taken to stream at, and the longest it takes to start.
SLOWEST_TOKENS_PER_S, FIRST_TOKEN_S = 20.0, 60.0


def attempt_s(configured: float | None, max_tokens: int, first_token_s: float = FIRST_TOKEN_S) -> float:
    """How long one attempt may take, whole: the configured ``deadline_s``, else the time to start
    plus ``max_tokens`` at the slowest rate a server streams."""
    if configured is not None:
        return configured
    return first_token_s + max_tokens / SLOWEST_TOKENS_PER_S


class Deadline:
    """The whole-attempt deadline, as one timer per attempt (not one per stream event: an
    ``asyncio.timeout`` around each of a call's ~20 reads cost about a third of a millisecond
    per call, a tenth of the SDK's own time). It bounds only this client's own waits, never a
    yield: when it passes while the task waits in ``wait``, the task is cancelled there and
    ``wait`` raises TimeoutError (a cancellation from elsewhere, Ctrl-C, stays a cancellation,
    as ``asyncio.timeout`` does it); when it passes in the consumer's time (between events), the
    next ``wait`` raises TimeoutError before it waits."""

    def __init__(self, when: float) -> None:
        self.when = when
        self._task = asyncio.current_task()
        self._cancelling = self._task.cancelling() if self._task is not None else 0
        self._waiting = self._expired = self._cancelled = False
        self._handle = asyncio.get_running_loop().call_at(when, self._expire)

    def _expire(self) -> None:
        self._expired = True
        if self._waiting and self._task is not None:
            self._cancelled = True
            self._task.cancel()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        if self._expired:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()  # never awaited: closed, not left for the garbage collector to warn about
            raise TimeoutError
        self._waiting = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._cancelled and self._task is not None and self._task.uncancel() <= self._cancelling:
                self._cancelled = False
                raise TimeoutError from None
            raise
        finally:
            self._waiting = False

    def cancel(self) -> None:
        self._handle.cancel()
