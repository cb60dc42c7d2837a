"""Per-example counts kept by the model layers (retries, request-cache hits and misses).

``evaluate`` opens one ``counting_scope()`` around each example; a layer calls ``count(name)``
(asyncio tasks inherit the context, so concurrent examples never mix their counts). Outside
a scope counting does nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_COUNTS: ContextVar[Counter[str] | None] = ContextVar("react_bench_counts", default=None)
_CACHED_IDS: ContextVar[set[str] | None] = ContextVar("react_bench_cached_ids", default=None)


@contextmanager
def counting_scope() -> Iterator[tuple[Counter[str], set[str]]]:
    """Counts by name, and the ids of responses served from the request cache (not paid again)."""
    counts: Counter[str] = Counter()
    cached: set[str] = set()
    tokens = (_COUNTS.set(counts), _CACHED_IDS.set(cached))
    try:
        yield counts, cached
    finally:
        _CACHED_IDS.reset(tokens[1])
        _COUNTS.reset(tokens[0])


def count(name: str, k: int = 1) -> None:
    counts = _COUNTS.get()
    if counts is not None:
        counts[name] += k


def served_from_cache(response_id: str) -> None:
    cached = _CACHED_IDS.get()
    if cached is not None:
        cached.add(response_id)
