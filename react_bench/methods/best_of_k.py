"""ReAct best-of-k, a baseline of LATS's results tables, on the shared loop: ``mode=best_of_k``.

An example runs as ``k`` ReAct episodes on the text runner, each sampled at ``mode.temperature``
with a sample index of its own (its own cache key and, for a seeded model, its own seed). The
model as value function then scores each finished trajectory from 1 to 10 (LATS's value function:
its prompt, ``prompts/lats.json``, and its reading of the reply, ``lats.parse_value``), and the
answer is the trajectory it rates best. A trajectory that ended without an answer (nor an
environment's reward: a purchase, a game's end) is not rated and never preferred to one that did;
ties go to the earlier episode. The environment's reward and the task's score
are those of the chosen episode, so WebShop's score is the chosen purchase's.

Selection (``mode.selection``):
- ``value`` (the default): the value function's choice. No gold answer is read.
- ``oracle``: the first episode the task's own score rates right, else the value function's choice.
  The gold answer picks the answer, so the run, its metrics and every table that shows it say
  **oracle feedback**, as LATS's and Reflexion's do.

How the calls go: the episodes one after another (each reads the prompt cache the ones before it
wrote), so that a replay, which serves an example's calls in the order they were asked, meets
them in that order; under ``batch=true`` that is ``k`` times the rounds of one episode. The value
calls, one call each, then go at once (asked in a fixed order: the first trajectory's first).
Every episode
is kept in the record's trajectory, in order, and the record's ``method`` holds each candidate's
answer, value, reason and reward, the chosen one and whether any was right (``oracle_at_k``: what
a perfect selector would have scored, beside what the value function chose).

Settings (``configs/mode/best_of_k.yaml``; ``mode.k=10`` on the command line): ``k`` 5, ``temperature``
1.0 (LATS's sampling temperature), ``selection`` value, ``value_samples`` 1 and ``value_max_tokens``
100 (LATS's value calls). LATS reports ReAct best-of-k at HotpotQA EM 0.38 and WebShop score 59.1 /
success 32.0 (gpt-3.5), the figures Table 1 shows beside a run of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, get_args

from react_bench.environment import Example
from react_bench.errors import ConfigError
from react_bench.events import MethodStage, announce
from react_bench.methods.core import Costing, EventSink, Method, ModeSpec, Outcome, Solver, SolveSettings
from react_bench.methods.lats import VALUE_SUFFIX, parse_value, unlike_lats_runs, value_parts
from react_bench.methods.pricing import Estimate, Pricing, step_growth, text_call_usage, times
from react_bench.models.base import ModelError
from react_bench.models.collector import StreamProtocolError
from react_bench.prompts import PromptSpec, task_exemplars
from react_bench.runners.common import Sampling, StepStats
from react_bench.types import Usage

Selection = Literal["value", "oracle"]
SELECTIONS: tuple[str, ...] = get_args(Selection)
VALUE_PROMPT = "value"  # the key of the value function's prompt among the run's prompts


@dataclass(frozen=True)
class BestOfKConfig:
    """``mode.*`` of ``mode=best_of_k`` (the module docstring: what each is)."""

    k: int = 5
    temperature: float = 1.0
    selection: Selection = "value"
    value_samples: int = 1
    value_max_tokens: int = 100

    def __post_init__(self) -> None:
        for name in ("k", "value_samples", "value_max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"mode.{name}={value!r}: a whole number, at least 1")
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, int | float) or self.temperature < 0:
            raise ConfigError(f"mode.temperature={self.temperature!r}: a number, 0 or more")
        if self.selection not in SELECTIONS:
            raise ConfigError(f"mode.selection={self.selection!r}: one of {', '.join(SELECTIONS)}")


@dataclass(frozen=True)
class BestOfKSummary:
    """A best-of-k run's summary (``RunMetrics.method``): the selection, whether the gold answer
    chose (``oracle_feedback``), the share of examples with some right candidate (``oracle_at_k``)
    and the value replies that named no score."""

    k: int = 0
    selection: str = "value"
    oracle_feedback: bool = False
    oracle_at_k: float = 0.0
    unparsed_values: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> BestOfKSummary:
        known = {f.name for f in fields(BestOfKSummary)}
        return BestOfKSummary(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class BestOfK(Method):
    """``mode=best_of_k`` for the registry (the module docstring)."""

    def settle(self, solve: SolveSettings, task: str, answers: bool, protocol: Mapping[str, Any]) -> SolveSettings:
        solve = super().settle(solve, task, answers, protocol)
        config: BestOfKConfig = solve.options
        if config.selection == "oracle" and not answers:
            raise ConfigError(
                f"mode.selection=oracle: task={task} has no reference answers; the value function selects "
                "(mode.selection=value)"
            )
        return solve

    def as_baseline(self, k: int, custom: bool) -> tuple[tuple[str, str], ...]:
        """LATS's own baseline: k episodes at ``mode.k``."""
        return (("mode.k", str(k)),)

    def labels(self, solve: Mapping[str, Any]) -> dict[str, str]:
        oracle = self.read_settings(solve).get("selection") == "oracle"
        return {"feedback": "oracle" if oracle else "honest"}

    def unlike(self, task: str, run: Mapping[str, Any]) -> list[str]:
        """LATS's best-of-k figures were made as its search's were: gpt-3.5, WebShop's own catalog."""
        return unlike_lats_runs(task, run)

    def extra_prompts(self, task: str) -> dict[str, PromptSpec]:
        return {VALUE_PROMPT: task_exemplars("lats", task, self.name)}

    async def solve(self, solver: Solver, example: Example, on_event: EventSink | None) -> Outcome:
        config: BestOfKConfig = solver.settings.options
        episodes: list[Outcome] = []
        for i in range(config.k):
            announce(on_event, MethodStage("candidate", i + 1, config.k))
            sampling = Sampling(solver.settings.max_tokens, config.temperature, sample_index=i)
            episodes.append(await solver.agent(example, "react", on_event, sampling=sampling))
        stats = sum((e.stats for e in episodes), StepStats())
        usage = sum((e.usage for e in episodes), Usage())
        error = next((e.error for e in episodes if e.reason == "error"), None)
        values: list[float | None] = [None] * len(episodes)
        unparsed = 0
        if error is None:
            announce(on_event, MethodStage("selection", 1, 1))  # the value calls: a stage of their own
            try:
                values, used, unparsed = await _values(solver, config, episodes, stats)
                usage += used
            except (ModelError, StreamProtocolError) as exc:  # a value call failed: re-runnable
                error = f"{type(exc).__name__}: {exc}"
        right = [solver.grade(example, e) if solver.grade is not None else False for e in episodes]
        chosen = _choose(episodes, values, right if config.selection == "oracle" else None)
        best = episodes[chosen]
        return Outcome(
            prediction=best.prediction,
            route=self.name,
            reason="error" if error is not None else best.reason,
            steps=sum(e.steps for e in episodes),
            usage=usage,
            error=error,
            reward=best.reward,
            episodes=[episode for e in episodes for episode in e.episodes],
            stats=stats,
            extra={
                "k": config.k,
                "selection": config.selection,
                "chosen": chosen,
                "oracle_at_k": any(right),
                "unparsed_values": unparsed,
                "candidates": [
                    {
                        "prediction": e.prediction,
                        "value": values[i],
                        "reason": e.reason,
                        "reward": e.reward,
                        "steps": e.steps,
                        "correct": right[i],
                    }
                    for i, e in enumerate(episodes)
                ],
            },
        )

    def summarize(self, records: Sequence[Any], solve: Mapping[str, Any]) -> BestOfKSummary:
        """The selection, and beside the chosen answers' score what a perfect selector would have
        scored (``oracle_at_k``: some candidate was right) and how often the value call was unreadable."""
        own = [r.method for r in records if r.method is not None]
        n = len(own) or 1
        settings = self.read_settings(solve)
        return BestOfKSummary(
            k=int(settings.get("k") or 0),
            selection=str(settings.get("selection") or "value"),
            oracle_feedback=self.labels(solve)["feedback"] == "oracle",
            oracle_at_k=sum(bool(m.get("oracle_at_k")) for m in own) / n,
            unparsed_values=sum(int(m.get("unparsed_values") or 0) for m in own),
        )

    def table_rows(self, summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        s: BestOfKSummary = self.summary_of(summary)
        said = "ORACLE FEEDBACK: the first right candidate was chosen" if s.oracle_feedback else "no gold answer read"
        return [
            ("best-of-k selection", f"{s.selection} of {s.k}", said),
            ("  some candidate right", f"{100 * s.oracle_at_k:.1f}", f"{s.unparsed_values} value replies unreadable"),
        ]


class BestOfKCosting(Costing):
    """``mode=best_of_k``'s price and batch rounds: its episodes, then their value calls."""

    def estimate(self, solver: Solver, question: str, pricing: Pricing) -> Estimate:
        """``k`` ReAct episodes, each to its step cap, and a value call per trajectory (its prompt,
        the trajectory at the cap, ``value_max_tokens`` out) per ``value_samples``."""
        config: BestOfKConfig = solver.settings.options
        episodes = super().estimate(solver, question, pricing)
        later = super().estimate(solver, question, replace(pricing, exemplars_cached=True))  # the first wrote them
        for _ in range(config.k - 1):
            episodes = episodes + later
        prompt = solver.prompts[VALUE_PROMPT]
        trajectory = step_growth(solver) * solver.settings.loop.max_steps + len(question) // 4
        value = text_call_usage(len(prompt.instruction + prompt.exemplars), trajectory, config.value_max_tokens)
        calls = config.k * config.value_samples
        return episodes + Estimate(calls, times(value, calls))

    def rounds(self, solver: Solver) -> int:
        """The ``k`` episodes one after another, then their value calls in one round."""
        return solver.settings.options.k * super().rounds(solver) + 1


async def _values(
    solver: Solver, config: BestOfKConfig, episodes: Sequence[Outcome], stats: StepStats
) -> tuple[list[float | None], Usage, int]:
    """The value function's score of each finished trajectory (the mean over ``value_samples``;
    None where no reply named one, or where the episode ended without an answer: nothing to rate), their
    usage, and how many replies named no score. Each coroutine makes one call, so they are asked
    in the order they are made."""
    rated = [i for i, e in enumerate(episodes) if _finished(e)]
    parts = {i: value_parts(solver.prompts[VALUE_PROMPT], solver.transcript(episodes[i].episodes), []) for i in rated}
    asks = [(i, v) for i in rated for v in range(config.value_samples)]

    async def one(i: int, v: int) -> tuple[str, Usage]:
        sampling = Sampling(config.value_max_tokens, config.temperature, sample_index=v)
        return await solver.text_call(
            solver.model, parts[i], VALUE_SUFFIX, config.value_max_tokens, stats, sampling, ("\n\n",)
        )

    replies = await asyncio.gather(*(one(i, v) for i, v in asks))
    scores: dict[int, list[float]] = {}
    usage, misses = Usage(), 0
    for (i, _), (said, used) in zip(asks, replies, strict=True):
        usage += used
        score = parse_value(said)
        if score is None:
            misses += 1
        else:
            scores.setdefault(i, []).append(score)
    values = [sum(scores[i]) / len(scores[i]) if i in scores else None for i in range(len(episodes))]
    return values, usage, misses


def _finished(outcome: Outcome) -> bool:
    """Whether an episode ended with an answer (a final answer, or an environment's reward: a purchase,
    a game's end), so that there is something to rate."""
    return bool(outcome.prediction.strip()) or outcome.reward is not None


def _choose(episodes: Sequence[Outcome], values: Sequence[float | None], right: Sequence[bool] | None) -> int:
    """The chosen episode: under oracle selection the first right one; else (and when none is right)
    an answered one before an unanswered, the highest value, the earliest of equals."""
    if right is not None and any(right):
        return list(right).index(True)
    ranked = sorted(
        range(len(episodes)),
        key=lambda i: (_finished(episodes[i]), values[i] if values[i] is not None else -1.0, -i),
    )
    return ranked[-1]


# LATS's table (Zhou et al., ICML 2024, arXiv 2310.04406), gpt-3.5: the ReAct best-of-k baseline
PUBLISHED = {
    "hotpotqa": "ReAct (best of k) EM 38 (LATS's baseline, gpt-3.5)",
    "webshop": "ReAct (best of k) score 59.1 / SR 32.0 (LATS's baseline, gpt-3.5)",
}

METHODS = (
    BestOfK(
        "best_of_k",
        ModeSpec("react", text_only="samples text trajectories and rates them with LATS's value function"),
        "k ReAct episodes sampled at a temperature; the model as value function picks the answer (LATS's baseline)",
        published=PUBLISHED,
        published_by="LATS paper",
        settings_type=BestOfKConfig,
        summary_type=BestOfKSummary,
        costing=BestOfKCosting(),
    ),
)
