"""What a run will cost before it runs: ``dry_run=true``, and the budget's per-example estimate.

A dry run makes no model call. For every example it builds the first request of each part
of the mode (through the policies, exactly as the run would), and estimates the rest:

- calls: one for Standard / CoT, ``cot_sc_samples`` for CoT-SC, ``max_steps`` for ReAct and Act
  (an upper bound: every episode runs to the step cap; most end sooner);
- input tokens: the first request's (about four characters a token), growing by
  ``max_tokens`` + 150 tokens (the step and its observation) at every later step;
- output tokens: ``max_tokens`` per call (an upper bound);
- with prompt caching as configured (Claude, ``prompt_caching: true``): each call reads the
  previous call's prompt and writes what it adds; an example's first call reads the exemplars
  when an earlier example wrote them and they reach the model's minimum cacheable length.

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
from react_bench.models.base import ModelClient, ModelRequest
from react_bench.models.cache import estimate_input_tokens
from react_bench.models.capabilities import calls_cost_usd
from react_bench.results import read_records
from react_bench.types import Usage

OBSERVATION_TOKENS = 150
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


@dataclass(frozen=True)
class Estimate:
    calls: int
    usage: Usage  # input split as it would be billed: plain, cache writes, cache reads

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.calls + other.calls, self.usage + other.usage)


def _calls(solver: Solver, part: str) -> int:
    s = solver.settings
    return {"standard": 1, "cot": 1, "cot_sc": s.cot_sc_samples}.get(part, s.loop.max_steps)


def lats_expansions(solver: Solver, most: bool = False) -> list[int]:
    """mode=lats: the depths of the expansions an example makes (``methods/lats.py``). Each iteration
    expands a node near the root and simulates from it; the estimate takes a simulation to run to
    half the depth cap (the answer may come anywhere between the first step and the cap), ``most``
    to the cap, in every one of ``lats.iterations``."""
    config = solver.settings.lats
    assert config is not None
    cap = solver.settings.loop.max_steps
    if most:
        return [d for _ in range(config.iterations) for d in range(cap)]
    depth = max(1, -(-cap // 2))  # the first iteration from the root; the later ones from a node below it
    return list(range(depth)) + [d for _ in range(config.iterations - 1) for d in range(min(1, depth - 1), depth)]


def _lats_example(solver: Solver, question: str, *, caching: bool, minimum: int, exemplars_cached: bool) -> Estimate:
    """Per expansion at depth d: ``n`` samples (the step's prompt, as ReAct's step d + 1: the
    prompt the parent's expansion wrote read from the prompt cache, the step written) and ``n``
    value calls (the value prompt and the trajectory), each writing half its ``max_tokens`` (an
    expected figure, like the depth: a search is priced as it is likely to run, not at its most);
    a reflection per ``lats.reflections``."""
    config = solver.settings.lats
    assert config is not None
    request = solver.probe_requests(question)[0]
    first, shared = estimate_input_tokens(request), _shared_prefix_tokens(request)
    growth = solver.settings.max_tokens + OBSERVATION_TOKENS
    value = solver.prompts["lats"]
    reflection = solver.prompts["reflexion"]
    value_tokens = len(value.instruction + value.exemplars) // 4 + len(question) // 4
    total = Estimate(0, Usage())
    for k, d in enumerate(lats_expansions(solver)):
        tokens = first + d * growth
        # the first sample reads the prompt its parent's expansion wrote (the exemplars, at the root)
        # and writes its step; its siblings, the same prompt, read all of it
        before = first + (d - 1) * growth if d else (shared if exemplars_cached or k > 0 else 0)
        read = before if caching and before >= minimum else 0
        out = Usage(output_tokens=solver.settings.max_tokens // 2)
        if caching and tokens >= minimum:
            first_sample = Usage(cache_read_input_tokens=read, cache_creation_input_tokens=tokens - read)
            siblings = _times(Usage(cache_read_input_tokens=tokens), config.n - 1)
        else:
            first_sample, siblings = Usage(input_tokens=tokens), _times(Usage(input_tokens=tokens), config.n - 1)
        samples = first_sample + siblings + _times(out, config.n)
        values = Usage(input_tokens=value_tokens + d * growth, output_tokens=config.value_max_tokens // 2)
        total = total + Estimate(config.n, samples) + Estimate(config.n, _times(values, config.n))
    trajectory = growth * solver.settings.loop.max_steps
    reflect = Usage(
        input_tokens=len(reflection.instruction + reflection.exemplars) // 4 + trajectory,
        output_tokens=config.reflection_max_tokens,
    )
    return total + Estimate(config.reflections, _times(reflect, config.reflections))


def _times(usage: Usage, k: int) -> Usage:
    return sum((usage for _ in range(k)), Usage())


def estimate_example(
    solver: Solver, question: str, *, caching: bool, minimum: int, exemplars_cached: bool, long_cache: bool = False
) -> Estimate:
    """``long_cache``: the prefix every example shares written with the 1-hour lifetime (batch
    rounds), at its rate."""
    if solver.spec.tree:
        return _lats_example(solver, question, caching=caching, minimum=minimum, exemplars_cached=exemplars_cached)
    total = Estimate(0, Usage())
    growth = solver.settings.max_tokens + OBSERVATION_TOKENS
    for part, request in zip(solver.spec.parts, solver.probe_requests(question), strict=True):
        first = estimate_input_tokens(request)
        shared = _shared_prefix_tokens(request)
        previous = 0
        for k in range(_calls(solver, part)):
            tokens = first + (k * growth if part in ("react", "act") else 0)
            if not caching or tokens < minimum:
                usage = Usage(input_tokens=tokens)
            else:
                read = previous if previous >= minimum else (shared if exemplars_cached and shared >= minimum else 0)
                # long_cache: the shared prefix (the exemplars) is written for an hour, the rest as ever
                long = max(0, min(shared, tokens) - read) if long_cache and shared >= minimum else 0
                usage = Usage(
                    cache_creation_input_tokens=tokens - read,
                    cache_read_input_tokens=read,
                    cache_creation_1h_input_tokens=long,
                )
            total = total + Estimate(1, usage + Usage(output_tokens=solver.settings.max_tokens))
            previous = tokens
    reflexion = solver.settings.reflexion
    if solver.spec.trials and reflexion is not None:  # every trial to its cap, a reflection after each but the last
        prompt = solver.prompts["reflexion"]
        trajectory = (solver.settings.max_tokens + OBSERVATION_TOKENS) * solver.settings.loop.max_steps
        reflect = Usage(
            input_tokens=len(prompt.instruction + prompt.exemplars) // 4 + trajectory,
            output_tokens=reflexion.max_tokens,
        )
        one = total
        for _ in range(reflexion.trials - 1):
            total = total + one + Estimate(1, reflect)
    return total


def lats_calls_at_most(solver: Solver) -> int:
    """mode=lats: the most calls an example can make (every simulation to the cap, in every
    iteration): per expansion ``n`` samples and ``n`` values, and the reflections."""
    config = solver.settings.lats
    assert config is not None
    return 2 * config.n * len(lats_expansions(solver, most=True)) + config.reflections


def rounds(solver: Solver) -> int:
    """``batch=true``: the most rounds an example can take, its calls one after another (every
    episode to its step cap; CoT-SC's samples in one round; a reflection between trials)."""
    steps = solver.settings.loop.max_steps
    if solver.spec.tree and solver.settings.lats is not None:  # an expansion: its samples, then their values
        return 2 * len(lats_expansions(solver, most=True)) + solver.settings.lats.reflections
    one = sum(1 if part in ("standard", "cot", "cot_sc") else steps for part in solver.spec.parts)
    reflexion = solver.settings.reflexion
    if solver.spec.trials and reflexion is not None:
        return reflexion.trials * one + reflexion.trials - 1
    return one


def _shared_prefix_tokens(request: ModelRequest) -> int:
    """Tokens up to the first cache point (the exemplars every question shares)."""
    if not request.cache_points or not request.messages:
        return 0
    message, block = request.cache_points[0]
    blocks = request.messages[message].content[: block + 1]
    return sum(len(getattr(b, "text", "")) for b in blocks) // 4


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
