"""The paper's prompting modes on the shared loop, and the two combinations.

| mode | what runs |
| --- | --- |
| ``standard`` | one call: exemplars of question -> answer |
| ``cot`` | one call: exemplars with a reasoning line, answer after ``Answer:`` |
| ``cot_sc`` | ``n`` CoT samples (paper: 21 at temperature 0.7), majority vote on normalised answers |
| ``act`` | actions and observations, no thoughts (tool-use runner: no thinking, a tool every turn) |
| ``react`` | thoughts, actions, observations |
| ``react_cot_sc`` | ReAct; CoT-SC when ReAct gives no answer within the step cap |
| ``cot_sc_react`` | CoT-SC; ReAct when the majority answer has fewer than n/2 votes |

Decisions written down:
- Every mode runs through ``loop.run_episode``; the one-call modes are one-step episodes.
- Modes without actions (standard, cot, cot_sc) send the text protocol under both runners:
  the runner only changes how actions are taken.
- Votes: empty answers do not vote; ties go to the answer seen first; the answer reported
  is the first raw sample of the winning group. Samples run one after another (so replay
  serves them in order) and every sample is kept, so accuracy at k = 1..n can be computed
  from one pool (the paper's Figure 2). Each sample has its own ``sample_index`` (cache key).
- ``react`` with ``on_limit=backoff`` is ``react_cot_sc``. Backoff happens when the episode
  hit the cap or finished with an empty answer, never after a model error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from react_bench.events import (
    AgentEvent,
    AssistantTextDelta,
    AssistantThinkingDelta,
    event_to_dict,
)
from react_bench.loop import EpisodeResult, LoopConfig, run_episode, run_to_end
from react_bench.metrics import normalize_answer
from react_bench.models.base import ModelClient, ThinkingConfig
from react_bench.prompts import PromptSpec
from react_bench.runners.common import Sampling
from react_bench.runners.common import StepStats
from react_bench.runners.text import AnswerPolicy, TextActionEnv, TextPolicy
from react_bench.runners.tool_use import ToolUsePolicy
from react_bench.types import Message, Usage, message_to_dict

MODES = ("standard", "cot", "cot_sc", "act", "react", "react_cot_sc", "cot_sc_react")
Runner = Literal["text", "tool_use"]
EventSink = Callable[[AgentEvent], None]


@dataclass(frozen=True)
class SolveSettings:
    mode: str = "react"
    runner: Runner = "text"
    parser: Literal["paper", "robust"] = "paper"
    loop: LoopConfig = LoopConfig()
    max_tokens: int = 100
    temperature: float | None = 0.0
    cot_sc_samples: int = 21
    cot_sc_temperature: float = 0.7
    thinking: ThinkingConfig | None = None
    tool_max_tokens: int = 1024

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; one of {MODES}")
        if self.runner not in ("text", "tool_use"):
            raise ValueError(f"unknown runner {self.runner!r}; one of text, tool_use")
        if self.cot_sc_samples < 1:
            raise ValueError("cot_sc_samples must be at least 1")


@dataclass(frozen=True)
class Vote:
    answer: str
    count: int
    total: int


def majority_vote(answers: Sequence[str]) -> Vote:
    """Majority over normalised answers; empty answers abstain; ties go to the earliest."""
    groups: dict[str, list[int]] = {}
    for i, answer in enumerate(answers):
        key = normalize_answer(answer)
        if key:
            groups.setdefault(key, []).append(i)
    if not groups:
        return Vote("", 0, len(answers))
    best = max(groups.values(), key=lambda idx: (len(idx), -idx[0]))
    return Vote(answers[best[0]], len(best), len(answers))


@dataclass
class Outcome:
    """How one example was solved; ``route`` names the part that produced the answer."""

    prediction: str
    route: str
    reason: str
    steps: int
    usage: Usage
    error: str | None = None
    backoff: bool = False
    samples: list[str] = field(default_factory=list)
    vote: Vote | None = None
    episodes: list[dict[str, Any]] = field(default_factory=list)
    stats: StepStats = field(default_factory=StepStats)


EnvFactory = Callable[[], Any]


class Solver:
    """Solves one example in the configured mode; shared across examples of a run."""

    def __init__(
        self,
        settings: SolveSettings,
        model: ModelClient,
        prompts: dict[str, PromptSpec],
        env_factory: EnvFactory | None,
    ):
        self.settings = settings
        self.model = model
        self.prompts = prompts
        self.env_factory = env_factory

    async def solve(self, question: str, on_event: EventSink | None = None) -> Outcome:
        mode, loop = self.settings.mode, self.settings.loop
        if mode == "react_cot_sc":
            mode, loop = "react", replace(loop, on_limit="backoff")
        if mode in ("standard", "cot"):
            return await self._one_call(question, mode, on_event)
        if mode == "cot_sc":
            return await self._cot_sc(question, on_event)
        if mode in ("react", "act"):
            outcome = await self._agent(question, mode, loop, on_event)
            if loop.on_limit == "backoff" and outcome.reason != "error" and not outcome.prediction.strip():
                return _merge(outcome, await self._cot_sc(question, on_event), "react->cot_sc")
            return outcome
        assert mode == "cot_sc_react"
        first = await self._cot_sc(question, on_event)
        assert first.vote is not None
        if first.vote.count < first.vote.total / 2:
            return _merge(first, await self._agent(question, "react", loop, on_event), "cot_sc->react")
        return first

    async def _episode(self, policy: Any, env: Any, loop: LoopConfig, on_event: EventSink | None) -> EpisodeResult:
        history: list[Message] = []

        async def forwarded():
            async for event in run_episode(policy, env, loop, history):
                if on_event is not None:
                    on_event(event)
                yield event

        return await run_to_end(forwarded(), history)

    async def _one_call(
        self, question: str, style: Literal["cot", "standard"], on_event: EventSink | None, sampling: Sampling | None = None
    ) -> Outcome:
        sampling = sampling or Sampling(self.settings.max_tokens, self.settings.temperature)
        policy = AnswerPolicy(self.model, self.prompts[style], question, style, sampling)
        result = await self._episode(policy, _NoEnv(), LoopConfig(max_steps=1), on_event)
        return _outcome(result, style, policy.stats)

    async def _cot_sc(self, question: str, on_event: EventSink | None) -> Outcome:
        samples: list[Outcome] = []
        for k in range(self.settings.cot_sc_samples):
            sampling = Sampling(self.settings.max_tokens, self.settings.cot_sc_temperature, sample_index=k)
            samples.append(await self._one_call(question, "cot", on_event, sampling))
        answers = [s.prediction for s in samples]
        vote = majority_vote(answers)
        errors = [s.error for s in samples if s.error]
        stats = sum((s.stats for s in samples), StepStats())
        return Outcome(
            prediction=vote.answer,
            route="cot_sc",
            reason="error" if errors and len(errors) == len(samples) else "answered",
            steps=1,  # each sample is a one-step episode; `stats.calls` counts the samples
            usage=sum((s.usage for s in samples), Usage()),
            error=errors[0] if errors else None,
            samples=answers,
            vote=vote,
            episodes=[e for s in samples for e in s.episodes],
            stats=stats,
        )

    async def _agent(self, question: str, style: Literal["react", "act"], loop: LoopConfig, on_event: EventSink | None) -> Outcome:
        if self.env_factory is None:
            raise ValueError(f"mode {style} needs an environment")
        env = self.env_factory()
        s = self.settings
        if s.runner == "text":
            sampling = Sampling(s.max_tokens, s.temperature)
            policy: Any = TextPolicy(self.model, self.prompts[style], question, style, s.parser, sampling)
            result = await self._episode(policy, TextActionEnv(env), loop, on_event)
        else:
            prompt = self.prompts["tool_use_act" if style == "act" else "tool_use"]
            policy = ToolUsePolicy(
                self.model, prompt, question, env.tools(), style, s.thinking, s.tool_max_tokens, s.temperature
            )
            result = await self._episode(policy, env, loop, on_event)
        return _outcome(result, style, policy.stats)


class _NoEnv:
    def tools(self):
        return ()

    async def execute(self, name, arguments):  # pragma: no cover - one-call policies never act
        raise AssertionError("this mode takes no actions")


_DELTAS = (AssistantTextDelta, AssistantThinkingDelta)


def _outcome(result: EpisodeResult, route: str, stats: StepStats) -> Outcome:
    episode = {
        "route": route,
        "history": [message_to_dict(m) for m in result.history],
        "events": [event_to_dict(e) for e in result.events if not isinstance(e, _DELTAS)],
    }
    return Outcome(
        prediction=result.answer,
        route=route,
        reason=result.reason,
        steps=result.steps,
        usage=result.usage,
        error=result.error,
        episodes=[episode],
        stats=stats,
    )


def _merge(first: Outcome, second: Outcome, route: str) -> Outcome:
    """The backoff result: the second part's answer, both parts' costs and trajectories."""
    return Outcome(
        prediction=second.prediction,
        route=route,
        reason=second.reason,
        steps=first.steps + second.steps,
        usage=first.usage + second.usage,
        error=second.error,
        backoff=True,
        samples=first.samples or second.samples,
        vote=first.vote or second.vote,
        episodes=first.episodes + second.episodes,
        stats=first.stats + second.stats,
    )
