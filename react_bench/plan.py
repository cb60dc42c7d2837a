"""How big a run must be (``react-bench plan``, ``scripts/plan.py``): from a pilot run (or two over
the same examples), the examples and trials needed to detect a given difference between two
methods (``detect=3``: 3 points) or to reach a given interval width (``width=5``), with the price.

- **A difference** is read by McNemar's test (two-sided, 5%) at 80% power, as every paired
  comparison of a study is (``metrics.paired_n``, Connor 1987). What it needs is the share of
  examples on which the two methods disagree: observed where two pilots ran the same examples,
  else taken as two independent outcomes of the pilot's score (the share right over all its
  attempts), ``2 p (1 - p)`` (said as an assumption; methods that agree more need fewer examples).
- **Trials** (``epochs``): where the pilot ran several attempts per example, the share of its
  examples whose outcome flips between attempts, and the variance within an example
  (``s (1 - s) k / (k - 1)`` of an example right ``s`` of ``k`` times), are measured. Averaging ``t``
  trials divides that part of the disagreement by ``t``: the examples needed for 1, 3 and 5 trials
  are given. A pilot of one attempt per example cannot say what trials buy, and the plan says so.
- **An interval**: the examples for a 95% interval of the given full width around the pilot's
  score (its normal approximation), for each number of trials likewise.
- **The price**: the dry run's (``estimate.estimate_example`` on the pilot's own settings and
  examples: an upper bound, every episode to its cap) per example and attempt, times the plan; and
  the pilot's measured cost per attempt, times the plan, beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.metrics import Z80, Z95
from react_bench.record import RunHeader
from react_bench.results import flip_share, iter_example_records

TRIALS = (1, 3, 5)


@dataclass(frozen=True)
class Pilot:
    run_dir: Path
    header: RunHeader
    attempts: dict[str, list[bool]]  # example id -> its outcomes, attempt by attempt
    cost_per_attempt: float | None
    flips: float | None  # the share of examples whose outcome differs between attempts (results.flip_share)

    @staticmethod
    def read(run_dir: Path) -> Pilot:
        header = RunHeader.read(run_dir)
        records = list(iter_example_records(run_dir))
        if not records:
            raise ConfigError(f"{run_dir}: no finished example to plan from")
        attempts: dict[str, list[bool]] = {}
        for r in records:
            attempts.setdefault(r.id, []).append(r.correct)
        costs = [r.cost_usd for r in records]
        known = None not in costs
        cost = sum(c or 0.0 for c in costs) / len(records) if known else None
        return Pilot(Path(run_dir), header, attempts, cost, flip_share(records))

    @property
    def score(self) -> float:
        """The share right over every attempt (the pilot's best estimate of the method's score)."""
        outcomes = [x for a in self.attempts.values() for x in a]
        return sum(outcomes) / len(outcomes)

    def within(self) -> float | None:
        """The variance of an outcome within an example (between its attempts); None with one attempt each."""
        several = [a for a in self.attempts.values() if len(a) > 1]
        if not several:
            return None
        return sum((s := sum(a) / len(a)) * (1 - s) * len(a) / (len(a) - 1) for a in several) / len(several)


def _firsts(pilot: Pilot) -> dict[str, bool]:
    return {i: a[0] for i, a in pilot.attempts.items()}


def discordance(pilots: Sequence[Pilot]) -> tuple[float, str]:
    """The share of examples two methods disagree on, and where it comes from."""
    if len(pilots) == 2:
        a, b = _firsts(pilots[0]), _firsts(pilots[1])
        shared = sorted(set(a) & set(b))
        if not shared:
            raise ConfigError("plan: the two pilots share no example; give two runs over the same examples")
        apart = sum(a[i] != b[i] for i in shared)
        return max(apart, 1) / len(shared), f"observed: the two pilots disagree on {apart} of {len(shared)}"
    p = pilots[0].score
    return max(2 * p * (1 - p), 1 / len(pilots[0].attempts)), (
        f"assumed: two methods scoring {100 * p:.1f}% with independent outcomes, 2p(1-p)"
    )


def spread(disagree: float, within: float | None, trials: int) -> float:
    """The variance of an example's difference between two methods with ``trials`` attempts each
    averaged: the part between examples as it is, the part within an example (both methods'
    attempts, ``2 within``, at most the whole) divided by ``trials``."""
    noise = min(2 * (within or 0.0), disagree)
    return (disagree - noise) + noise / trials


def examples_for_difference(difference: float, disagree: float, within: float | None, trials: int) -> int:
    """Examples for McNemar's test to detect ``difference`` at 80% power with ``trials`` attempts
    per example averaged (the within-example part of the disagreement divided by ``trials``)."""
    v = max(spread(disagree, within, trials), difference * difference)  # never below the difference's own
    root = Z95 * math.sqrt(v) + Z80 * math.sqrt(v - difference * difference)
    return math.ceil((root / difference) ** 2)


def examples_for_width(score: float, width: float, within: float | None, trials: int) -> int:
    """Examples for a 95% interval of full ``width`` around ``score`` with ``trials`` attempts averaged."""
    total = max(score * (1 - score), 0.25 / 100)
    noise = min(within or 0.0, total)
    spread = (total - noise) + noise / trials
    return math.ceil((2 * Z95 * math.sqrt(spread) / width) ** 2)


def dry_run_price(pilot: Pilot) -> tuple[float | None, int]:
    """The dry run's price and calls per example attempt on the pilot's own settings and examples
    (an upper bound: every episode to its cap); price None for a model without one."""
    import asyncio
    import io
    import json
    import tempfile
    from dataclasses import replace

    from react_bench.evaluate import evaluate
    from react_bench.runconfig import RunConfig

    data = json.loads((pilot.run_dir / "run.json").read_text(encoding="utf-8"))
    composed = data.get("composed")
    if not composed:
        raise ConfigError(f"{pilot.run_dir} was run from code without its composed settings; plan from an eval.py run")
    cfg = RunConfig.from_mapping(composed)
    with tempfile.TemporaryDirectory(prefix="react-bench-plan-") as folder:
        cfg = replace(
            cfg,
            task=replace(cfg.task, ids=tuple(pilot.attempts), n=None, offset=0),
            dry_run=True,
            epochs=1,
            run_id="plan",
            run_dir=Path(folder) / "plan",
            resume=False,
            progress=False,
            show="none",
        )
        done = asyncio.run(evaluate(cfg, out=io.StringIO()))
        estimate = json.loads((done.run_dir / "dry_run.json").read_text(encoding="utf-8"))
    n = len(pilot.attempts)
    cost = estimate.get("cost_usd")
    return (None if cost is None else float(cost) / n), math.ceil(int(estimate.get("calls_at_most") or 0) / n)


def plan(run_dirs: Sequence[Path], detect: float | None = None, width: float | None = None) -> dict[str, Any]:
    """The plan (module docstring): ``detect`` and ``width`` in points (3 = 3 percentage points)."""
    if (detect is None) == (width is None):
        raise ConfigError("plan: give detect=<points> (a difference to detect) or width=<points> (an interval)")
    if not 1 <= len(run_dirs) <= 2:
        raise ConfigError("plan: one pilot run, or two over the same examples")
    pilots = [Pilot.read(Path(d)) for d in run_dirs]
    goal = (detect if detect is not None else width) or 0.0
    if not 0 < goal < 100:
        raise ConfigError(f"plan: {'detect' if detect is not None else 'width'}={goal:g}: points between 0 and 100")
    within = pilots[0].within()
    disagree, source = discordance(pilots) if detect is not None else (0.0, "")
    per_attempt, calls = dry_run_price(pilots[0])
    rows = []
    for trials in TRIALS:
        if detect is not None:
            n = examples_for_difference(detect / 100, disagree, within, trials)
        else:
            n = examples_for_width(pilots[0].score, width / 100 if width else 0.0, within, trials)
        attempts = n * trials * (2 if detect is not None else 1)  # a difference needs both methods' runs
        rows.append(
            {
                "trials": trials,
                "examples": n,
                "attempts": attempts,
                "calls_at_most": attempts * calls,
                "price_dry_run": None if per_attempt is None else per_attempt * attempts,
                "price_pilot": None if pilots[0].cost_per_attempt is None else pilots[0].cost_per_attempt * attempts,
            }
        )
    head = pilots[0].header
    return {
        "pilots": [str(p.run_dir) for p in pilots],
        "task": head.task,
        "mode": head.mode,
        "model": head.model_name,
        "pilot_n": len(pilots[0].attempts),
        "pilot_score": pilots[0].score,
        "detect": detect,
        "width": width,
        "discordance": disagree if detect is not None else None,
        "discordance_source": source,
        "flips_between_trials": pilots[0].flips,
        "within_variance": within,
        "rows": rows,
    }


def plan_text(result: dict[str, Any]) -> str:
    money = lambda v: "unknown (no price for this model)" if v is None else f"${v:,.2f}"  # noqa: E731
    lines = [
        f"pilot: {', '.join(result['pilots'])} ({result['task']} {result['mode']}, {result['model']}; "
        f"n={result['pilot_n']}, score {100 * result['pilot_score']:.1f}%)",
    ]
    if result["detect"] is not None:
        lines.append(
            f"to detect a difference of {result['detect']:g} points between two methods (McNemar, two-sided "
            f"5%, 80% power); they disagree on {100 * result['discordance']:.1f}% of examples "
            f"({result['discordance_source']})"
        )
    else:
        lines.append(f"for a 95% interval {result['width']:g} points wide around {100 * result['pilot_score']:.1f}%")
    flips = result["flips_between_trials"]
    lines.append(
        "trials: the pilot ran one attempt per example, so what trials buy is unknown (run a pilot with epochs=3)"
        if flips is None
        else f"trials: {100 * flips:.1f}% of the pilot's examples flip between attempts"
    )
    lines += ["", "trials  examples  attempts  calls (at most)  price (dry run, at most)  price (at the pilot's cost)"]
    for r in result["rows"]:
        lines.append(
            f"{r['trials']:>6}  {r['examples']:>8,}  {r['attempts']:>8,}  {r['calls_at_most']:>15,}  "
            f"{money(r['price_dry_run']):>24}  {money(r['price_pilot'])}"
        )
    if result["detect"] is not None:
        lines.append("(attempts and prices count both methods' runs)")
    return "\n".join(lines) + "\n"
