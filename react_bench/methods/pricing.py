"""An example's calls and tokens before it runs, for a method of parts: what ``Method.estimate``
and ``Method.rounds`` give unless a method prices itself (``estimate.py`` adds the examples up).

- calls: one for Standard / CoT, ``cot_sc_samples`` for CoT-SC, ``max_steps`` for ReAct and Act
  (an upper bound: every episode runs to the step cap; most end sooner);
- input tokens: the first request's (about four characters a token), growing by
  ``max_tokens`` + ``OBSERVATION_TOKENS`` at every later step;
- output tokens: ``max_tokens`` per call (an upper bound);
- with prompt caching (``Pricing.caching``): each call reads the previous call's prompt and writes
  what it adds; an example's first call reads the exemplars when an earlier example wrote them
  and they reach the model's minimum cacheable length.

The solver is read, never imported (``core.Solver``: its settings, spec and ``probe_requests``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from react_bench.models.base import ModelRequest
from react_bench.models.cache import estimate_input_tokens
from react_bench.types import Usage

OBSERVATION_TOKENS = 150  # a step's observation, and its share of the turn, in tokens


@dataclass(frozen=True)
class Estimate:
    calls: int
    usage: Usage  # input split as it would be billed: plain, cache writes, cache reads

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.calls + other.calls, self.usage + other.usage)


@dataclass(frozen=True)
class Pricing:
    """What the price of a request depends on beyond the request: ``caching`` (the model caches
    prompts), ``minimum`` (its shortest cacheable prefix), ``exemplars_cached`` (an earlier example
    wrote the shared exemplars) and ``long_cache`` (the shared prefix written with the 1-hour
    lifetime: batch rounds)."""

    caching: bool = False
    minimum: int = 0
    exemplars_cached: bool = False
    long_cache: bool = False


def times(usage: Usage, k: int) -> Usage:
    return sum((usage for _ in range(k)), Usage())


def shared_prefix_tokens(request: ModelRequest) -> int:
    """Tokens up to the first cache point (the exemplars every question shares)."""
    if not request.cache_points or not request.messages:
        return 0
    message, block = request.cache_points[0]
    blocks = request.messages[message].content[: block + 1]
    return sum(len(getattr(b, "text", "")) for b in blocks) // 4


def step_growth(solver: Any) -> int:
    """Tokens a step adds to the next request: its turn at most, and its observation."""
    return int(solver.settings.max_tokens) + OBSERVATION_TOKENS


def part_calls(solver: Any, part: str) -> int:
    s = solver.settings
    return {"standard": 1, "cot": 1, "cot_sc": s.cot_sc_samples}.get(part, s.loop.max_steps)


def parts_estimate(solver: Any, question: str, pricing: Pricing) -> Estimate:
    """Every part of the solver's spec, each call as above."""
    total = Estimate(0, Usage())
    growth = step_growth(solver)
    for part, request in zip(solver.spec.parts, solver.probe_requests(question), strict=True):
        first = estimate_input_tokens(request)
        shared = shared_prefix_tokens(request)
        previous = 0
        for k in range(part_calls(solver, part)):
            tokens = first + (k * growth if part in ("react", "act") else 0)
            if not pricing.caching or tokens < pricing.minimum:
                usage = Usage(input_tokens=tokens)
            else:
                cached = pricing.exemplars_cached and shared >= pricing.minimum
                read = previous if previous >= pricing.minimum else (shared if cached else 0)
                # long_cache: the shared prefix (the exemplars) is written for an hour, the rest as ever
                long = max(0, min(shared, tokens) - read) if pricing.long_cache and shared >= pricing.minimum else 0
                usage = Usage(
                    cache_creation_input_tokens=tokens - read,
                    cache_read_input_tokens=read,
                    cache_creation_1h_input_tokens=long,
                )
            total = total + Estimate(1, usage + Usage(output_tokens=solver.settings.max_tokens))
            previous = tokens
    return total


def parts_rounds(solver: Any) -> int:
    """The most rounds an example of parts can take: every episode to its step cap, a one-call part
    (CoT-SC's samples together) one round."""
    steps = solver.settings.loop.max_steps
    return sum(1 if part in ("standard", "cot", "cot_sc") else steps for part in solver.spec.parts)


def text_call_usage(prompt_chars: int, extra_tokens: int, max_tokens: int) -> Usage:
    """A call outside the episode (a reflection, a value): its prompt (``prompt_chars`` of fixed
    text, about four to a token, and ``extra_tokens`` of trajectory) and ``max_tokens`` out."""
    return Usage(input_tokens=prompt_chars // 4 + extra_tokens, output_tokens=max_tokens)
