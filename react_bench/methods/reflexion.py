"""Reflexion (Shinn et al., 2023) on the shared loop: ``mode=reflexion``.

Each example runs as up to ``reflexion.trials`` trials. A trial is one ReAct episode (the
``react`` part, through either runner) whose prompt holds the reflections of the trials before
it. An evaluator then judges the episode. On a failure that is not the last trial, the model
writes a reflection, and the memory keeps the last ``reflexion.memory`` of them. A success
ends the example. The loop is ``Reflexion.solve`` at the end of this module, with its pieces:
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
import functools
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from react_bench.environment import Action, Environment, Example, Observation
from react_bench.errors import ConfigError, settings_of
from react_bench.events import MethodStage, announce
from react_bench.methods.core import (
    Costing,
    Curve,
    EventSink,
    Method,
    ModeSpec,
    Outcome,
    Solver,
    SolveSettings,
    action_text,
)
from react_bench.methods.pricing import Estimate, Pricing, step_growth, text_call_usage
from react_bench.metrics import score_ci
from react_bench.models.base import ModelError, ToolSpec
from react_bench.models.capabilities import calls_cost_usd
from react_bench.models.collector import StreamProtocolError
from react_bench.models.replay import CassetteKind, Recorded, cassette_line, current_calls, recorded_from_line
from react_bench.prompts import PromptSpec, task_exemplars
from react_bench.record import Episode, Score
from react_bench.rundir import json_line
from react_bench.runners.common import StepStats
from react_bench.settings import default
from react_bench.types import ModelResponse, Usage

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
class Trial:
    """One trial of a Reflexion example: what the actor answered, what the evaluator said of it, the
    reflection written after it (None: none was, after a success or the last trial) and what it
    cost. Its episodes are the record's ``trajectory`` entries of the same ``trial``. The record
    keeps the example's trials in ``record.method["trials"]`` (``trials_of``)."""

    trial: int  # 1, 2, ...
    prediction: str
    success: bool  # the evaluator's verdict: what decides whether another trial runs
    correct: bool  # the task's own score of the prediction (what the learning curve counts)
    evaluator: str  # env | oracle | heuristic | judge:<model>
    reason: str  # how the actor's episode ended (answered, done, step_limit, halted, error ...)
    steps: int = 0
    feedback: str = ""  # what the evaluator said, as the reflection prompt shows it
    halted: str | None = None  # the heuristic trigger that ended the episode early, if one did
    memory: tuple[str, ...] = ()  # the reflections the trial's prompt held (at most reflexion.memory)
    reflection: str | None = None
    usage: Usage = Usage()  # the actor's calls, the judge's and the reflection's
    calls: int = 0
    cost_usd: float | None = None  # its calls at the model's price (None: no price known)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["usage"], out["memory"] = self.usage.to_dict(), list(self.memory)
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Trial:
        known = {f.name for f in fields(Trial)}
        values = {k: v for k, v in data.items() if k in known}
        values["usage"] = Usage.from_dict(data.get("usage"))
        values["memory"] = tuple(data.get("memory") or ())
        return Trial(**values)


def trials_of(record: Any) -> list[Trial]:
    """An example record's trials (``record.method["trials"]``), in order; [] for none."""
    kept = (record.method or {}).get("trials") if record.method is not None else None
    return [Trial.from_dict(t) for t in kept or () if isinstance(t, Mapping)]


@dataclass(frozen=True)
class TrialCurve:
    """A Reflexion run's summary (``RunMetrics.method``): the share of examples right after trial t
    (an example that stopped at a success stays right), with Wilson's interval; who judged the
    trials (``oracle_feedback``: the gold label decided each retry); what the trials cost."""

    evaluator: str
    trials: int  # the most an example may run (reflexion.trials)
    curve: tuple[Score, ...] = ()  # after trial 1, 2, ... trials
    trials_run: int = 0  # over all examples
    reflections: int = 0
    halted: int = 0  # trials the heuristic halt ended
    cost_per_trial: float | None = None  # None: a price unknown
    cost_per_success: float | None = None  # the run's cost over the examples right at the end

    @property
    def oracle_feedback(self) -> bool:
        return self.evaluator == "oracle"

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluator": self.evaluator,
            "oracle_feedback": self.oracle_feedback,
            "trials": self.trials,
            "curve": [c.to_dict() for c in self.curve],
            "trials_run": self.trials_run,
            "reflections": self.reflections,
            "halted": self.halted,
            "cost_per_trial": self.cost_per_trial,
            "cost_per_success": self.cost_per_success,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> TrialCurve:
        return TrialCurve(
            evaluator=str(data.get("evaluator") or ""),
            trials=int(data.get("trials") or 0),
            curve=tuple(Score.from_dict(c) for c in data.get("curve") or ()),
            trials_run=int(data.get("trials_run") or 0),
            reflections=int(data.get("reflections") or 0),
            halted=int(data.get("halted") or 0),
            cost_per_trial=data.get("cost_per_trial"),
            cost_per_success=data.get("cost_per_success"),
        )


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


# --- the method ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reflexion(Method):
    """``mode=reflexion`` for the registry: its settings (``reflexion.*``, the task's protocol under
    them), its trials on the solver, its trial log, its learning curve and its price."""

    def parse(self, cfg: Mapping[str, Any], protocol: Mapping[str, Any]) -> ReflexionConfig:
        self.check_group(cfg)
        return ReflexionConfig.from_mapping(cfg.get(self.settings_key) or {}, protocol.get(self.settings_key) or {})

    def settle(self, solve: SolveSettings, task: str, answers: bool, protocol: Mapping[str, Any]) -> SolveSettings:
        solve = super().settle(solve, task, answers, protocol)
        return replace(solve, options=solve.options.resolved(task, answers, scores_episodes=not answers))

    def labels(self, solve: Mapping[str, Any]) -> dict[str, str]:
        evaluator = str(self.read_settings(solve).get("evaluator") or "")
        return {"feedback": "oracle" if evaluator == "oracle" else "honest"}

    def judge(self, solve: SolveSettings) -> str | None:
        r = solve.options
        return r.judge if r is not None and r.evaluator == "judge" else None

    def extra_prompts(self, task: str) -> dict[str, PromptSpec]:
        return {"reflexion": reflection_prompt(task)}

    def open_run(self, solver: Solver, run_dir: Path, kind: str) -> None:
        solver.run_state[TRIAL_LOG] = TrialLog(
            run_dir / TRIAL_LOG, "completions" if kind == "completions" else "responses"
        )

    async def solve(self, solver: Solver, example: Example, on_event: EventSink | None) -> Outcome:
        """Reflexion's trials: each a ReAct episode with the memory before the opening, judged by the
        evaluator; after a failure that is not the last trial, a reflection joins the memory. Trials
        the run's log already holds (a killed run, resumed) are taken from it, their calls put back
        first in the example's recording, and the next trial runs."""
        r: ReflexionConfig = solver.settings.options
        log: TrialLog | None = solver.run_state.get(TRIAL_LOG)
        logged = log.trials(example) if log is not None else []
        calls = current_calls()
        if calls is not None and logged:
            calls[:0] = [c for t in logged for c in t.calls]
        trials = [t.trial for t in logged]
        episodes = [e for t in logged for e in t.episodes]
        stats = StepStats(calls=sum(t.calls for t in trials))
        reward = logged[-1].reward if logged else None
        error = None
        while error is None and (not trials or (not trials[-1].success and len(trials) < r.trials)):
            number = len(trials) + 1
            announce(on_event, MethodStage("trial", number, r.trials))
            memory = tuple(t.reflection for t in trials if t.reflection)[-r.memory :]
            start = len(calls) if calls is not None else 0
            halting = (
                functools.partial(Halting, max_repeats=r.max_repeats, max_actions=r.max_actions) if r.halt else None
            )
            outcome = await solver.agent(example, "react", on_event, memory_text(memory), halting)
            tried = [replace(e, trial=number) for e in outcome.episodes]
            correct = solver.grade(example, outcome) if solver.grade is not None else False
            extra, spent, reflection = StepStats(), outcome.usage, None
            error = outcome.error if outcome.reason == "error" else None
            verdict = Verdict(False, outcome.error or "", r.evaluator)
            try:
                if error is None:
                    verdict, used = await _verdict(solver, r.evaluator, outcome, correct, tried, extra)
                    spent += used
                if error is None and not verdict.success and number < r.trials:
                    reflection, used = await solver.text_call(
                        solver.model,
                        reflection_parts(
                            solver.prompts["reflexion"], solver.transcript(tried), verdict.feedback, memory
                        ),
                        "Reflection:",
                        r.max_tokens,
                        extra,
                    )
                    spent += used
            except (ModelError, StreamProtocolError) as exc:  # the judge or the reflection failed: re-runnable
                error = f"{type(exc).__name__}: {exc}"
            own = calls[start:] if calls is not None else []
            trial = Trial(
                trial=number,
                prediction=outcome.prediction,
                success=verdict.success,
                correct=correct,
                evaluator=verdict.evaluator,
                reason=outcome.reason,
                steps=outcome.steps,
                feedback=verdict.feedback,
                halted=outcome.halted,
                memory=memory,
                reflection=reflection,
                usage=spent,
                calls=outcome.stats.calls + extra.calls,
                cost_usd=calls_cost_usd(solver.model.name, [c.usage for c in own if isinstance(c, ModelResponse)]),
                error=error,
            )
            trials.append(trial)
            episodes += tried
            stats = stats + outcome.stats + extra
            reward = outcome.reward
            if error is None and log is not None:  # an errored trial is not finished: it runs again
                await log.write(example, trial, tried, own, outcome.reward)
        last = trials[-1]
        return Outcome(
            prediction=last.prediction,
            route="reflexion",
            reason="error" if error is not None else last.reason,
            steps=sum(t.steps for t in trials),
            usage=sum((t.usage for t in trials), Usage()),
            error=error,
            reward=reward,
            episodes=episodes,
            stats=stats,
            halted=last.halted,
            extra={"trials": [t.to_dict() for t in trials]},
        )

    def summarize(self, records: Sequence[Any], solve: Mapping[str, Any]) -> TrialCurve:
        return trial_curve(records, self.read_settings(solve))

    def table_rows(self, summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """Who judged, the learning curve, the cost of a trial."""
        curve: TrialCurve = self.summary_of(summary)
        judged = "ORACLE FEEDBACK: the gold label decided each retry" if curve.oracle_feedback else ""
        rows = [("reflexion evaluator", curve.evaluator, judged)]
        for t, score in enumerate(curve.curve, start=1):
            interval = f"[{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]"
            rows.append((f"  right after trial {t}", f"{100 * score.mean:.1f}", interval))
        said = f"{curve.reflections} reflections written, {curve.halted} trials halted by the heuristic"
        rows.append(("trials run", str(curve.trials_run), said))
        if curve.cost_per_trial is not None:
            per_success = "n/a" if curve.cost_per_success is None else f"{curve.cost_per_success:.4f}"
            rows.append(("cost per trial (USD)", f"{curve.cost_per_trial:.4f}", f"per success {per_success}"))
        return rows

    def cell_note(self, summary: Mapping[str, Any]) -> str:
        return f"after {self.summary_of(summary).trials} trials"

    def curve(self, summary: Mapping[str, Any]) -> Curve:
        made: TrialCurve = self.summary_of(summary)
        money = lambda v: "unknown" if v is None else f"{v:.4f}"  # noqa: E731
        return Curve(
            "trial",
            made.curve,
            "oracle feedback" if made.oracle_feedback else "",
            {
                "evaluator": made.evaluator + (" (oracle feedback)" if made.oracle_feedback else ""),
                "cost/trial": money(made.cost_per_trial),
                "cost/success": money(made.cost_per_success),
            },
        )


class ReflexionCosting(Costing):
    """``mode=reflexion``'s price and batch rounds: its trials, and a reflection between two."""

    def estimate(self, solver: Solver, question: str, pricing: Pricing) -> Estimate:
        """Every trial to its cap, a reflection after each but the last."""
        r: ReflexionConfig = solver.settings.options
        one = super().estimate(solver, question, pricing)
        prompt = solver.prompts["reflexion"]
        trajectory = step_growth(solver) * solver.settings.loop.max_steps
        reflect = text_call_usage(len(prompt.instruction + prompt.exemplars), trajectory, r.max_tokens)
        total = one
        for _ in range(r.trials - 1):
            total = total + one + Estimate(1, reflect)
        return total

    def rounds(self, solver: Solver) -> int:
        r: ReflexionConfig = solver.settings.options
        return r.trials * super().rounds(solver) + r.trials - 1


async def _verdict(
    solver: Solver, kind: str, outcome: Outcome, correct: bool, episodes: list[Episode], stats: StepStats
) -> tuple[Verdict, Usage]:
    """The evaluator's verdict of a trial (a judge's costs a call; the others none)."""
    if kind != "judge" or outcome.halted is not None or outcome.reason == "step_limit":
        return verdict_of(kind, correct, outcome.reason, outcome.prediction, outcome.reward, outcome.halted), Usage()
    parts = [JUDGE_PROMPT, f"Attempt:\n{solver.transcript(episodes).strip()}\nFinal answer: {outcome.prediction}\n"]
    said, used = await solver.text_call(solver.judge, parts, "Verdict:", 10, stats)
    return judge_verdict(said, f"judge:{solver.judge.name}"), used


def trial_curve(records: Sequence[Any], settings: Mapping[str, Any]) -> TrialCurve:
    """A Reflexion run's learning curve (``TrialCurve``) from its records (``ExampleRecord``) and
    its settings as run.json keeps them."""
    each = [trials_of(r) for r in records]
    trials = [t for kept in each for t in kept]
    most = max([int(settings.get("trials") or 0), *(len(kept) for kept in each)])
    evaluator = str(settings.get("evaluator") or next((t.evaluator for t in trials), ""))
    curve = []
    for t in range(1, most + 1) if records else ():  # right after trial t: right at some trial up to t
        ci = score_ci([float(any(x.correct for x in kept[:t])) for kept in each], seed=0)
        curve.append(Score(ci.mean, (ci.low, ci.high), ci.method))
    costs = [t.cost_usd for t in trials]
    spent = [r.cost_usd for r in records]
    solved = sum(r.correct for r in records)
    known = None not in costs and None not in spent
    return TrialCurve(
        evaluator=evaluator,
        trials=most,
        curve=tuple(curve),
        trials_run=len(trials),
        reflections=sum(1 for t in trials if t.reflection),
        halted=sum(1 for t in trials if t.halted),
        cost_per_trial=sum(c or 0.0 for c in costs) / len(trials) if known and trials else None,
        cost_per_success=sum(c or 0.0 for c in spent) / solved if known and solved else None,
    )


METHODS = (
    Reflexion(
        "reflexion",
        ModeSpec("react"),
        "ReAct trials, an evaluator, a reflection after each failure kept for the next (Shinn et al., 2023)",
        published=REFLEXION_PAPER,
        published_by="Reflexion paper",
        distributable=False,  # the trial log (resume mid-example) is written by the run's own process
        settings_type=ReflexionConfig,
        settings_key="reflexion",  # run.json's and the fingerprint's key, and eval.yaml's section, as ever
        summary_type=TrialCurve,
        costing=ReflexionCosting(),
    ),
)
