"""Per-example counts kept by the model layers (retries, request-cache hits and misses, cache
writes that failed), as one typed object.

``evaluate`` opens one ``counting_scope()`` around each example; a layer adds to the current
example's ``Counts`` with ``count(name)``, whose name is one of ``Counts``' fields (a ``Literal``:
mypy refuses any other). asyncio tasks inherit the context, so concurrent examples never mix
their counts. Outside a scope counting does nothing. The ids of the responses the request cache
served are kept beside the counts (``served_from_cache``): they are not paid again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

CountName = Literal["retries", "cache_hits", "cache_misses", "cache_write_failures"]


@dataclass
class Counts:
    """What the model layers counted for one example."""

    retries: int = 0  # transient faults survived (models.retrying)
    cache_hits: int = 0  # responses served from the request cache (models.cache)
    cache_misses: int = 0
    cache_write_failures: int = 0  # responses used but not stored
    cached_ids: Counter[str] = field(default_factory=Counter)  # response id -> times the cache served it

    def add(self, name: CountName, k: int = 1) -> None:
        setattr(self, name, getattr(self, name) + k)


_COUNTS: ContextVar[Counts | None] = ContextVar("react_bench_counts", default=None)


@contextmanager
def counting_scope() -> Iterator[Counts]:
    """The example's counts, filled by the layers while the scope is open."""
    counts = Counts()
    token = _COUNTS.set(counts)
    try:
        yield counts
    finally:
        _COUNTS.reset(token)


def count(name: CountName, k: int = 1) -> None:
    counts = _COUNTS.get()
    if counts is not None:
        counts.add(name, k)


def served_from_cache(response_id: str) -> None:
    counts = _COUNTS.get()
    if counts is not None:
        counts.cached_ids[response_id] += 1
