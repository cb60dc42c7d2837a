"""What a run will cost before it runs: ``dry_run=true``, and the budget's per-example estimate.

A dry run makes no model call. For every example its method prices it (``Method.estimate``):
a mode of parts builds the first request of each part through the policies, exactly as the run
would, and estimates the rest (``methods/pricing.py``: calls to the step cap, tokens growing by
the step and its observation, the prompt cache as configured); a method of its own prices itself
(Reflexion: every trial and its reflection; LATS: the expected search, and its most).

With ``batch=true`` it also gives the batched price (half, the shared prefix written with the
1-hour lifetime where the model takes it) and the hours as rounds (``rounds``: the longest an
example's calls can chain) x ``ASSUMED_ROUND_MINUTES``, beside the live price and hours.

It prints tokens and cost for the whole run and writes the exact first request it would send,
as the API would receive it, to ``dry_run_request.json`` in the run folder (the wire body for
Claude models, the provider-neutral request otherwise), with the estimate in ``dry_run.json``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from react_bench.errors import ConfigError
from react_bench.methods.core import Solver
from react_bench.methods.pricing import Estimate, Pricing
from react_bench.models.base import ModelClient, ModelRequest
from react_bench.models.capabilities import calls_cost_usd
from react_bench.results import read_records
from react_bench.types import Usage

ASSUMED_RPM = 50  # Anthropic's lowest tier, where a model config gives no requests_per_minute
# batch=true: how long a round is taken to last in the hours a dry run gives (an assumption, said as
# one: Anthropic says most batches end within an hour, every one within 24)
ASSUMED_ROUND_MINUTES = 30


def wire_request(client: ModelClient, request: ModelRequest) -> dict[str, Any]:
    """The body the API receives for ``request`` from the provider's ``client`` (Claude: its
    ``plan``), else the request itself as JSON."""
    plan = getattr(client, "plan", None)
    if plan is None:
        return dataclasses.asdict(request)
    arguments = dict(plan(request).arguments)
    extra = arguments.pop("extra_body", {}) or {}
    return {**arguments, **extra, "stream": True}


def estimate_example(
    solver: Solver, question: str, *, caching: bool, minimum: int, exemplars_cached: bool, long_cache: bool = False
) -> Estimate:
    """One example, priced by its method (``Method.estimate``; ``methods/pricing.py`` for a mode of
    parts). ``long_cache``: the prefix every example shares written with the 1-hour lifetime (batch
    rounds), at its rate."""
    return solver.method.price.estimate(solver, question, Pricing(caching, minimum, exemplars_cached, long_cache))


def rounds(solver: Solver) -> int:
    """``batch=true``: the most rounds an example can take, its calls one after another (its
    method's ``rounds``: every episode to its step cap; CoT-SC's samples in one round; a
    reflection between trials; a search's expansions)."""
    return solver.method.price.rounds(solver)


def estimate_run(
    solver: Solver, questions: Sequence[str], *, caching: bool, minimum: int, long_cache: bool = False
) -> Estimate:
    total = Estimate(0, Usage())
    for i, question in enumerate(questions):
        total = total + estimate_example(
            solver, question, caching=caching, minimum=minimum, exemplars_cached=i > 0, long_cache=long_cache
        )
    return total


def batch_estimate(
    solver: Solver, questions: Sequence[str], model_name: str, *, caching: bool, minimum: int, long_cache: bool
) -> tuple[dict[str, Any], str]:
    """``batch=true`` in a dry run: the batched price (half the live price, the prompt cache written
    for ``long_cache``'s hour where the model takes it) and the rounds, as ``dry_run.json`` holds
    them and the line that says them."""
    batched = estimate_run(solver, questions, caching=caching, minimum=minimum, long_cache=long_cache)
    full = calls_cost_usd(model_name, [batched.usage])
    most = rounds(solver)
    summary = {
        "cost_usd": None if full is None else 0.5 * full,
        "rounds_at_most": most,
        "round_minutes_assumed": ASSUMED_ROUND_MINUTES,
        "hours": most * ASSUMED_ROUND_MINUTES / 60,
        "cache_ttl": "1h" if long_cache else "5m",
    }
    cost = "unknown" if summary["cost_usd"] is None else f"${summary['cost_usd']:.2f}"
    line = (
        f"batch=true: {cost} (half price; prompt cache written for {summary['cache_ttl']}) in at most "
        f"{most} rounds, about {summary['hours']:.1f} hours at an assumed {ASSUMED_ROUND_MINUTES} minutes a round"
    )
    return summary, line


@dataclass
class Budget:
    """``max_cost_usd``: an example starts only if what is spent, what the examples in flight will
    spend and its own estimate stay within the budget. The estimate is the mean cost of the
    examples finished so far (the dearest of them: a budget is not passed on the mean), or before
    any has finished, the dry-run estimate (an upper bound).
    An example that would pass the budget only because of the examples in flight waits for one
    of them to finish (its cost is then measured, not guessed) instead of being given up: the
    run stops close to the budget, not at the first example's upper bound."""

    limit: float
    spent: float
    first_estimate: float
    finished: list[float]
    in_flight: dict[str, float]
    skipped: list[str]
    # each example in flight reserves the estimate, and one that cannot fit it is not started;
    # not under batch=true, whose rounds check the budget themselves (a reservation would keep
    # the examples out of the same rounds, and an upper bound would start none of a small budget)
    reserve: bool = True
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @staticmethod
    def start(
        limit: float,
        model: str,
        solver: Solver,
        run_dir: Any,
        question: str,
        caching: tuple[bool, int],
        batch: bool = False,
    ) -> Budget:
        """``batch``: the estimate at the Batches API's half price."""
        if calls_cost_usd(model, [Usage(input_tokens=1, output_tokens=1)]) is None:
            raise ConfigError(f"max_cost_usd: {model} has no price in the capability table; a budget needs one")
        spent = [r.get("cost_usd") or 0.0 for r in read_records(run_dir)]
        cached, minimum = caching
        first = estimate_example(solver, question, caching=cached, minimum=minimum, exemplars_cached=False)
        estimate = (calls_cost_usd(model, [first.usage]) or 0.0) * (0.5 if batch else 1.0)
        return Budget(limit, float(sum(spent)), estimate, [], {}, [], reserve=not batch)

    def estimate(self) -> float:
        return max(self.finished) if self.finished else self.first_estimate

    async def admit(self, example_id: str) -> bool:
        async with self._changed:
            while True:
                estimate = self.estimate()
                # batch rounds (no reservation) stop at the round; only a budget already spent stops here
                if self.spent + (estimate if self.reserve else 0.0) > self.limit or self.spent >= self.limit:
                    self.skipped.append(example_id)
                    return False
                if not self.reserve or self.spent + (len(self.in_flight) + 1) * estimate <= self.limit:
                    self.in_flight[example_id] = estimate
                    return True
                await self._changed.wait()  # an example in flight finishes: spent and estimate are measured

    async def give_up(self, example_id: str) -> None:
        """An example admitted but stopped before it finished (batch rounds past the budget)."""
        async with self._changed:
            self.in_flight.pop(example_id, None)
            self.skipped.append(example_id)
            self._changed.notify_all()

    async def done(self, example_id: str, cost: float | None) -> None:
        async with self._changed:
            self.in_flight.pop(example_id, None)
            self.spent += cost or 0.0
            self.finished.append(cost or 0.0)
            self._changed.notify_all()
