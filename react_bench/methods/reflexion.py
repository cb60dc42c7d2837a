"""Reflexion (Shinn et al., 2023) on the shared loop: ``mode=reflexion``.

Each example runs as up to ``reflexion.trials`` trials. A trial is one ReAct episode (the
``react`` part, through either runner) whose prompt holds the reflections of the trials before
it. An evaluator then judges the episode. On a failure that is not the last trial, the model
writes a reflection, and the memory keeps the last ``reflexion.memory`` of them. A success
ends the example. The loop is ``modes.Solver._reflexion``; this module holds its pieces:
settings, evaluators, the heuristic halt, the memory's text, the reflection prompt and the
trial log.

Evaluators (``reflexion.evaluator``):
- ``env``: the environment's success (ALFWorld: the game won; WebShop: reward 1). Only for the
  tasks whose environment scores an episode.
- ``oracle``: the task's own score against the gold answer (HotpotQA: exact match; FEVER: the
  label). The gold label decides whether to retry, so the run, its metrics and every table that
  shows it say **oracle feedback**. This is how Reflexion's HotpotQA figures were made.
- ``heuristic``: no gold and no environment verdict. A trial fails when the halt below stopped
  it, or when it ended without an answer (the step cap, an empty answer). Otherwise it passes.
- ``judge``: a model reads the trial and says SUCCESS or FAILURE. It is the run's own model, or
  ``reflexion.judge=<configs/model name>``. Its calls are recorded with the example's.
- ``auto`` (the default): ``env`` where the environment scores, else ``oracle``.

The heuristic halt (``reflexion.halt``) ends a trial early. It fires when the same action has
been answered with the same observation more than ``max_repeats`` times (3), or when more than
``max_actions`` actions (30) have run. The record names the trigger. It works with any
evaluator. An episode it stops fails.

What is taken from where (``docs/decisions.md``, "Reflexion"):
- From the Reflexion paper, as issue 38 quotes it: ALFWorld runs 12 trials, with the heuristic
  halt at more than 3 identical (action, observation) pairs or more than 30 actions, and a
  memory of 3 reflections. HotpotQA is judged by exact match against the gold answer (oracle
  feedback). These are ``protocol=paper``'s settings for ALFWorld (``TaskInfo.protocol``).
- The project's own choices: 5 trials on the other tasks. The identical pairs are counted over
  the whole trial, not only in a row. The memory goes just before the example's opening, so
  the prompt cache still shares the instruction and exemplars. A reflection is one paragraph
  (it stops at the first newline). The reflection exemplars are the project's own, written for
  this harness's trajectories (``prompts/reflexion.json``).

The trial log (``trials.jsonl`` in the run folder) gets a line per finished trial: the trial,
its episodes, and its calls as a cassette holds them (with each call's usage). The line is
written and fsynced before the next trial starts. A run that is killed and resumed continues
each unfinished example after its last logged trial: no finished trial runs twice and none is
lost. The example's cassette line starts with the logged calls, so a replay serves every trial
in order.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from react_bench.environment import Action, Environment, Example, Observation
from react_bench.errors import ConfigError, settings_of
from react_bench.models.base import ToolSpec
from react_bench.models.replay import CassetteKind, Recorded, cassette_line, recorded_from_line
from react_bench.prompts import PromptSpec, task_exemplars
from react_bench.record import Episode, Trial
from react_bench.rundir import json_line
from react_bench.settings import default
from react_bench.types import ModelResponse

Evaluator = Literal["auto", "env", "oracle", "heuristic", "judge"]
EVALUATORS: tuple[str, ...] = get_args(Evaluator)
TRIAL_LOG = "trials.jsonl"

# Reflexion's published figures, the "paper" column of its rows (Shinn et al., 2023, as issue 38
# quotes them). On HotpotQA they are per model: ReAct alone, then ReAct + Reflexion.
REFLEXION_PAPER: dict[str, str] = {
    "hotpotqa": (
        "100 questions, ReAct -> +Reflexion: text-davinci-003 30 -> 55, gpt-3.5-turbo 26 -> 38, gpt-4 39 -> 51"
    ),
    "alfworld": "130/134 (97.0) after 12 trials",
}


@dataclass(frozen=True)
class ReflexionConfig:
    """``reflexion.*``: how many trials, how much memory, who judges, when a trial is halted."""

    trials: int = 5  # where the task's protocol names none (ALFWorld's: 12)
    memory: int = default("reflexion.memory")
    evaluator: Evaluator = default("reflexion.evaluator")
    halt: bool = False  # the heuristic halt (ALFWorld's protocol: on)
    max_repeats: int = default("reflexion.max_repeats")
    max_actions: int = default("reflexion.max_actions")
    judge: str | None = default("reflexion.judge")  # evaluator=judge: a configs/model/<name>; None: the run's model
    max_tokens: int = default("reflexion.max_tokens")  # of a reflection

    @staticmethod
    def from_mapping(values: Mapping[str, Any], protocol: Mapping[str, Any]) -> ReflexionConfig:
        """``reflexion.*`` as composed; a null takes the task's protocol (``TaskInfo.protocol``'s
        ``reflexion``: ALFWorld's 12 trials and the halt), else the default."""
        chosen = {k: v for k, v in values.items() if v is not None}
        return settings_of(ReflexionConfig, {**protocol, **chosen}, "reflexion")

    def __post_init__(self) -> None:
        for name in ("trials", "memory", "max_repeats", "max_actions", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"reflexion.{name}={value!r}: a whole number, at least 1")
        if not isinstance(self.halt, bool):
            raise ConfigError(f"reflexion.halt={self.halt!r}: true or false")
        if self.evaluator not in EVALUATORS:
            raise ConfigError(f"reflexion.evaluator={self.evaluator!r}: one of {', '.join(EVALUATORS)}")

    def resolved(self, task: str, answers: bool, scores_episodes: bool) -> ReflexionConfig:
        """The evaluator for ``task`` (``auto`` made concrete), checked against what it has:
        reference answers (``answers``), an environment that scores an episode."""
        evaluator = self.evaluator
        if evaluator == "auto":
            evaluator = "env" if scores_episodes else "oracle"
        if evaluator == "env" and not scores_episodes:
            raise ConfigError(
                f"reflexion.evaluator=env: task={task}'s environment does not score an episode; choose oracle "
                "(the gold answer, recorded as oracle feedback), heuristic or judge"
            )
        if evaluator == "oracle" and not answers:
            raise ConfigError(f"reflexion.evaluator=oracle: task={task} has no reference answers; choose env")
        return replace(self, evaluator=evaluator)

    @property
    def oracle_feedback(self) -> bool:
        return self.evaluator == "oracle"


@dataclass(frozen=True)
class Verdict:
    """An evaluator's judgement of one trial, and what the reflection is told."""

    success: bool
    feedback: str
    evaluator: str


def verdict_of(
    kind: str, correct: bool, reason: str, prediction: str, reward: float | None, halted: str | None
) -> Verdict:
    """The verdict of ``env``, ``oracle`` or ``heuristic`` (a judge's is ``judge_verdict``)."""
    if halted is not None:
        return Verdict(False, f"The trial was stopped: {halted}.", kind)
    if reason == "step_limit":
        return Verdict(False, "The trial ran out of steps before it finished the task.", kind)
    match kind:
        case "env":
            won = reward is not None and reward >= 1.0
            said = "" if reward is None else f" (reward {reward:g} of 1)"
            return Verdict(won, "The task was completed." if won else f"The task was not completed{said}.", kind)
        case "oracle":
            return Verdict(correct, f"The answer {prediction!r} is {'correct' if correct else 'incorrect'}.", kind)
        case "heuristic":
            ended = reason in ("answered", "done") and (bool(prediction.strip()) or reason == "done")
            return Verdict(ended, "The trial ended with an answer." if ended else "The trial gave no answer.", kind)
    raise ValueError(f"no verdict of kind {kind!r}")


JUDGE_PROMPT = (
    "You check an agent's attempt at a task. Read the attempt below and decide whether the agent completed "
    "the task correctly. Reply with one word: SUCCESS or FAILURE.\n\n"
)


def judge_verdict(said: str, judge: str) -> Verdict:
    """A judge's reply read as a verdict: SUCCESS anywhere and no FAILURE is a success."""
    upper = said.upper()
    success = "SUCCESS" in upper and "FAILURE" not in upper
    return Verdict(success, f"A judge read the trial and said {'SUCCESS' if success else 'FAILURE'}.", judge)


def action_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call written as a text action: ``look``, ``search[Ed Wood]``, ``f[{"a": 1, ...}]``."""
    if not arguments:
        return name
    if len(arguments) == 1:
        return f"{name}[{next(iter(arguments.values()))}]"
    return f"{name}[{json.dumps(dict(arguments), sort_keys=True)}]"


class Halting:
    """An environment that halts its episode on Reflexion's heuristic: the same action answered
    the same way more than ``max_repeats`` times, or more than ``max_actions`` actions. The
    action that trips it is executed and answered; its observation then ends the episode."""

    def __init__(self, env: Environment, max_repeats: int, max_actions: int) -> None:
        self.env, self.max_repeats, self.max_actions = env, max_repeats, max_actions
        self.seen: Counter[tuple[str, str]] = Counter()
        self.count = 0
        self.halted: str | None = None

    def actions(self) -> tuple[ToolSpec, ...]:
        return self.env.actions()

    async def reset(self, example: Example) -> Observation:
        return await self.env.reset(example)

    async def step(self, action: Action) -> Observation:
        observation = await self.env.step(action)
        self.count += 1
        said = action.text or action_text(action.name, action.arguments)
        pair = (said.strip(), observation.text.strip())
        self.seen[pair] += 1
        if self.seen[pair] > self.max_repeats:
            self.halted = (
                f"the same action ({said.strip()!r}) got the same observation {self.seen[pair]} times "
                f"(more than {self.max_repeats})"
            )
        elif self.count > self.max_actions:
            self.halted = f"{self.count} actions (more than {self.max_actions})"
        if self.halted is not None and not observation.ends:
            return replace(observation, done=True, reward=0.0 if observation.reward is None else observation.reward)
        return observation

    def close(self) -> None:
        self.env.close()


def memory_text(reflections: Sequence[str]) -> str:
    """The memory as the prompt holds it, just before the example's opening ("" when empty)."""
    if not reflections:
        return ""
    lines = "\n".join(f"Reflection {i}: {r.strip()}" for i, r in enumerate(reflections, start=1))
    return (
        "You have tried this task before and failed. Here is what you concluded from those attempts; "
        f"use it to do better this time.\n{lines}\n\n"
    )


def reflection_prompt(task: str) -> PromptSpec:
    """The reflection prompt of ``task``: the instruction and the project's own exemplars."""
    return task_exemplars("reflexion", task, "reflexion")


def reflection_parts(prompt: PromptSpec, transcript: str, feedback: str, memory: Sequence[str] = ()) -> list[str]:
    """The reflection request's text, in parts: instruction and exemplars, then this trial, its
    feedback and the reflections it already had (so a new one need not repeat them, and two
    trials that went the same way still ask different questions)."""
    trial = f"Trial:\n{transcript.strip()}\nFeedback: {feedback}\n"
    if memory:
        lines = "\n".join(f"- {r.strip()}" for r in memory)
        trial += f"Reflections this trial already had (write a new one; do not repeat them):\n{lines}\n"
    return [f"{prompt.instruction}{prompt.exemplars}", trial]


# --- the trial log -------------------------------------------------------------------------


@dataclass(frozen=True)
class LoggedTrial:
    """A finished trial read back from ``trials.jsonl``: the trial, its episodes, its calls."""

    trial: Trial
    episodes: tuple[Episode, ...]
    calls: tuple[Recorded, ...]
    reward: float | None = None


class TrialLog:
    """``trials.jsonl``: one fsynced line per finished trial (see the module docstring). It is
    read once, when first asked; damaged lines (a torn last line) are skipped; an attempt's trials
    are taken in order from 1 and stop at the first gap."""

    def __init__(self, path: Path, kind: CassetteKind) -> None:
        self.path, self.kind = path, kind
        self._by_attempt: dict[tuple[str, int], dict[int, LoggedTrial]] | None = None
        self._lock = asyncio.Lock()

    def _load(self) -> dict[tuple[str, int], dict[int, LoggedTrial]]:
        if self._by_attempt is None:
            self._by_attempt = {}
            if self.path.exists():
                with self.path.open("rb") as f:
                    for raw in f:
                        try:
                            if not raw.endswith(b"\n"):
                                raise ValueError("no newline")
                            line = json.loads(raw)
                            logged = LoggedTrial(
                                Trial.from_dict(line["trial"]),
                                tuple(Episode.from_dict(e) for e in line.get("episodes") or ()),
                                tuple(recorded_from_line(line["calls"])),
                                line.get("reward"),
                            )
                            key = (str(line["id"]), int(line.get("epoch") or 1))
                        except (ValueError, KeyError, TypeError):
                            continue  # damaged: that trial runs again
                        self._by_attempt.setdefault(key, {}).setdefault(logged.trial.trial, logged)
        return self._by_attempt

    def trials(self, example: Example) -> list[LoggedTrial]:
        found = self._load().get(example.key, {})
        out: list[LoggedTrial] = []
        while len(out) + 1 in found:
            out.append(found[len(out) + 1])
        return out

    async def write(
        self,
        example: Example,
        trial: Trial,
        episodes: Sequence[Episode],
        calls: Sequence[Recorded],
        reward: float | None,
    ) -> None:
        calls_line = cassette_line(example.id, list(calls), self.kind)
        calls_line["usage"] = [c.usage.to_dict() if isinstance(c, ModelResponse) else None for c in calls]
        line: dict[str, Any] = {
            "id": example.id,
            "epoch": example.epoch,
            "trial": trial.to_dict(),
            "reward": reward,
            "episodes": [e.to_dict() for e in episodes],
            "calls": calls_line,
        }
        data = json_line(line)
        async with self._lock:
            await asyncio.to_thread(self._append, data)
        self._load().setdefault(example.key, {})[trial.trial] = LoggedTrial(
            trial, tuple(episodes), tuple(calls), reward
        )

    def _append(self, data: bytes) -> None:
        with self.path.open("ab") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
