"""``run_episode``: THE agent loop, shared by the text runner and the tool-use runner.

Rules (DESIGN section 3):
- The only exits are a turn without an action (``Decision.calls`` empty), an action whose
  observation carries a ``final_answer`` (an answer action such as Wikipedia's ``finish``:
  reason ``answered``) and one whose observation is ``done`` (the environment ended the episode,
  e.g. a game won: reason ``done``, with the environment's ``reward``). Nothing else ends an
  episode early, except a model failure (``ModelError``), reported as reason ``error``.
- A step cap is mandatory. At the cap, ``on_limit`` decides: ``give_up`` (the paper: an empty
  answer) or ``wrap_up`` (one more call without tools, told that the steps are used up).
  Handing the example to another mode (ReAct -> CoT-SC) is the mode's business (``methods/core.py``),
  not the loop's: the loop ends with reason ``step_limit`` and the mode decides.
- A tool that raises, and a call whose input the model garbled (``ToolCall.input_error``),
  are results with ``is_error=True``; the episode goes on. A turn with duplicate call ids
  cannot be answered (results are paired by id) and ends the episode with reason ``error``. Only an
  ``EpisodeAbort`` (the environment cannot answer faithfully, e.g. a replay miss) ends the
  episode, with reason ``error``.
- All calls of one turn run concurrently; their results go back in ONE user message, in the
  order of the calls and paired by id, whatever order they finish in.
- The history is append-only; assistant messages are stored exactly as the policy returns
  them (thinking blocks and signatures included) so they are sent back unchanged.

The policy seam: a ``Policy`` streams ``AgentEvent``s for one model turn and ends with a
``Decision``. Runners differ only in their policy. The environment seam is
``react_bench.environment``: the loop calls ``env.step(Action)``; it never resets (the caller
does, since the first observation is the policy's input) and knows no environment by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, get_args

from react_bench.environment import Action, Environment, EpisodeAbort, Observation
from react_bench.errors import ConfigError
from react_bench.events import (
    AgentEvent,
    EpisodeFinished,
    FinishReason,
    StepFinished,
    StepStarted,
    ToolCalled,
    ToolExecutionFinished,
    ToolExecutionStarted,
)
from react_bench.models.base import ModelError, ModelRefused
from react_bench.models.collector import StreamProtocolError
from react_bench.timeline import tool_ended, tool_started
from react_bench.types import Message, ToolResultBlock, Usage

OnLimit = Literal["give_up", "wrap_up"]
ON_LIMIT_POLICIES: tuple[str, ...] = get_args(OnLimit)
__all__ = ["Action", "Environment", "EpisodeAbort", "Observation"]  # re-exported: the loop's view of the seam


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Mapping[str, Any]
    input_error: str | None = None  # the model's input was unusable: answered is_error, not executed
    text: str | None = None  # the text runner: the action as written (the grammar's ``Action.text``)

    def action(self) -> Action:
        return Action(self.name, self.arguments, self.text)


@dataclass(frozen=True)
class Decision:
    """One model turn, decided. No calls means the turn is the answer."""

    message: Message
    calls: tuple[ToolCall, ...] = ()
    answer: str = ""
    usage: Usage = Usage()


class Policy(Protocol):
    def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]: ...

    def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]: ...


@dataclass(frozen=True)
class LoopConfig:
    max_steps: int = 7
    on_limit: OnLimit = "give_up"
    wrap_up_notice: str = "You have used all {steps} steps. Give your final answer now, without using any tool."
    # False: the action the model decides at the last step is not executed (the episode ends at
    # the cap with it unanswered), as the ReAct WebShop notebook's loop ran: it asked for a 15th
    # action and never executed it. True (the project's own): every step's action is executed.
    act_at_cap: bool = True

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(f"max_steps must be at least 1, got {self.max_steps}")
        if self.on_limit not in ON_LIMIT_POLICIES:
            raise ConfigError(f"on_limit must be one of {ON_LIMIT_POLICIES}, got {self.on_limit!r}")


@dataclass
class EpisodeResult:
    answer: str
    reason: FinishReason
    steps: int
    usage: Usage
    error: str | None = None
    history: list[Message] = field(default_factory=list)
    events: list[AgentEvent] = field(default_factory=list)
    reward: float | None = None


class PolicyError(RuntimeError):
    """The policy broke the seam's contract (a bug in our code, so it raises)."""


@dataclass
class _Turn:
    """What one drained policy turn gave: its Decision, or the model failure that ended it."""

    decision: Decision | None = None
    error: str | None = None
    refused: bool = False  # the model declined (ModelRefused): the episode ends "refused"

    def ended(self, step: int, total: Usage) -> EpisodeFinished:
        """The EpisodeFinished of a turn that gave no Decision."""
        return EpisodeFinished("", "refused" if self.refused else "error", step, total, error=self.error)


async def _drain(turn: AsyncIterator[AgentEvent | Decision], slot: _Turn, what: str) -> AsyncIterator[AgentEvent]:
    """Forward a policy turn's events; put its Decision (or its model failure) in ``slot``."""
    try:
        async for item in turn:
            if isinstance(item, Decision):
                slot.decision = item
            else:
                yield item
    except (ModelError, StreamProtocolError) as exc:
        slot.error = f"{type(exc).__name__}: {exc}"
        slot.refused = isinstance(exc, ModelRefused)
        return
    if slot.decision is None:
        raise PolicyError(f"policy ended {what} without a Decision")


async def run_episode(
    policy: Policy,
    env: Environment,
    config: LoopConfig,
    history: list[Message] | None = None,
) -> AsyncIterator[AgentEvent]:
    """Run one episode, yielding its events. ``history`` (if given) is appended to in place."""
    history = [] if history is None else history
    total = Usage()
    for step in range(1, config.max_steps + 1):
        yield StepStarted(step)
        turn = _Turn()
        async for event in _drain(policy.decide(history, step), turn, f"step {step}"):
            yield event
        if turn.decision is None:
            yield turn.ended(step, total)
            return
        decision = turn.decision
        total += decision.usage
        history.append(decision.message)
        if not decision.calls:
            yield StepFinished(step, decision.usage)
            yield EpisodeFinished(decision.answer, "answered", step, total)
            return
        if step == config.max_steps and not config.act_at_cap:
            yield StepFinished(step, decision.usage)  # decided, never executed: the cap ends the episode
            break
        ids = [c.id for c in decision.calls]
        if len(set(ids)) != len(ids):  # results could not be paired by id: the API would refuse them
            yield EpisodeFinished("", "error", step, total, error=f"the model sent duplicate tool_use ids: {ids}")
            return
        observations: dict[str, Observation] = {}
        try:
            async for event in execute_all(env, decision.calls, step, observations):
                yield event
        except EpisodeAbort as exc:
            yield EpisodeFinished("", "error", step, total, error=f"{type(exc).__name__}: {exc}")
            return
        history.append(
            Message(
                "user",
                tuple(
                    ToolResultBlock(c.id, observations[c.id].text, observations[c.id].is_error) for c in decision.calls
                ),
            )
        )
        yield StepFinished(step, decision.usage)
        ending = next((observations[c.id] for c in decision.calls if observations[c.id].ends), None)
        if ending is not None:
            answered = ending.final_answer is not None
            reason: FinishReason = "answered" if answered else "done"
            yield EpisodeFinished(ending.final_answer or "", reason, step, total, reward=ending.reward)
            return

    steps = config.max_steps
    if config.on_limit == "wrap_up":
        notice = config.wrap_up_notice.format(steps=steps)
        turn = _Turn()
        async for event in _drain(policy.wrap_up(history, steps + 1, notice), turn, "its wrap-up"):
            yield event
        if turn.decision is None:
            yield turn.ended(steps, total)
            return
        total += turn.decision.usage
        history.append(turn.decision.message)
        yield EpisodeFinished(turn.decision.answer, "step_limit", steps, total)
        return
    yield EpisodeFinished("", "step_limit", steps, total)


MAX_OBSERVATION_CHARS = 200_000  # what one action's observation may put in the history (docs/security.md)


def capped(observation: Observation) -> Observation:
    """An observation cut to ``MAX_OBSERVATION_CHARS``, the cut said at its end (so the record and
    the next prompt show it): a page or a game's text has no other bound."""
    text = observation.text
    if len(text) <= MAX_OBSERVATION_CHARS:
        return observation
    note = f"\n[observation cut: {len(text):,} characters, at most {MAX_OBSERVATION_CHARS:,} are kept]"
    return replace(observation, text=text[:MAX_OBSERVATION_CHARS] + note)


async def execute_all(
    env: Environment, calls: Sequence[ToolCall], step: int, observations: dict[str, Observation]
) -> AsyncIterator[AgentEvent]:
    """Execute all calls concurrently (one call: simply awaited); fill ``observations`` by call id; yield progress."""

    async def one(call: ToolCall) -> tuple[ToolCall, Observation]:
        mark = tool_started(call.id, call.name, step, call.arguments)  # its time in the example's timeline
        observation = await _execute(env, call)
        tool_ended(mark, observation.text, observation.is_error)
        return call, observation

    for call in calls:
        yield ToolCalled(step, call.id, call.name, dict(call.arguments), call.text)
    for call in calls:
        yield ToolExecutionStarted(step, call.id, call.name)
    tasks = [asyncio.ensure_future(one(call)) for call in calls] if len(calls) > 1 else []
    try:  # one call, the common case: awaited here, no task
        for finished in asyncio.as_completed(tasks) if tasks else (one(call) for call in calls):
            call, observation = await finished
            observations[call.id] = observation
            yield ToolExecutionFinished(step, call.id, call.name, observation.text, observation.is_error)
    finally:
        for task in tasks:
            task.cancel()


async def _execute(env: Environment, call: ToolCall) -> Observation:
    if call.input_error is not None:
        return Observation(f"Error: the input of {call.name} is {call.input_error}", is_error=True)
    try:
        return capped(await env.step(call.action()))
    except EpisodeAbort:
        raise
    except Exception as exc:  # a tool failure is a result, not an exception
        return Observation(f"Error: {type(exc).__name__}: {exc}", is_error=True)


async def run_to_end(events: AsyncIterator[AgentEvent], history: list[Message] | None = None) -> EpisodeResult:
    """Drain an episode's events into an ``EpisodeResult``."""
    collected: list[AgentEvent] = []
    async for event in events:
        collected.append(event)
    last = collected[-1] if collected else None
    if not isinstance(last, EpisodeFinished):
        raise PolicyError("episode ended without an EpisodeFinished event")
    return EpisodeResult(
        answer=last.answer,
        reason=last.reason,
        steps=last.steps,
        usage=last.usage,
        error=last.error,
        history=history if history is not None else [],
        events=collected,
        reward=last.reward,
    )
