"""The run record, typed: one line of ``examples.jsonl`` (``ExampleRecord``), its trajectory
(``Episode``: what the model saw first, then its turns and the events of each step), the vote of a
sampled mode (``Vote``), and what readers take from ``run.json`` (``RunHeader``). A ground-floor
module: it knows the provider-neutral types and nothing above them.

One writer, one reader:
- ``ExampleRecord.to_dict`` is the only way a line is written (``evaluate``); the layout is the
  one runs have always had (scores flattened beside ``correct``), plus ``record_version``.
- ``ExampleRecord.from_dict`` reads a line of any version and upgrades it: a version-1 line
  (before this module: no ``record_version``, no ``first_observation`` in its episodes) reads with
  ``first_observation=None``, and the fields added since then take their defaults. A version-2
  line's method parts at its top level (a list or an object beside the scores) are read into
  ``method``, where version 3 writes them. ``read_records``
  (``results``) is the one place a run's lines are read, so resume, compare, export and the
  notebooks read old run folders through it.

``Episode.first_observation``: what the model saw of the example before its first step, the
environment's first observation (the question on the wiki tasks, the room and the task on
ALFWorld, the instruction page on WebShop), or for a mode with no environment (Standard, CoT)
the question it was asked. With the episode's ``history`` it is enough to rebuild every prompt the
model was sent (``tests/test_trajectory_replay.py``).

``Episode.steps()`` reads the recorded events into typed ``Step``s (the model's text, each action
with its observation and whether it was an error, the step's usage), so a reader need not know
the event layout.
"""

from __future__ import annotations

import collections.abc
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from react_bench.types import Message, Usage, message_from_dict

# 1: runs written before the record was typed (no first observation); 2: a method's own parts at
# the top level of a line (Reflexion's, LATS's); 3: all of them in ``method``
RECORD_VERSION = 3


@dataclass(frozen=True)
class Vote:
    """A majority vote over sampled answers (CoT-SC): the answer, its votes, the samples."""

    answer: str
    count: int
    total: int

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None) -> Vote | None:
        if not data:
            return None
        return Vote(str(data.get("answer") or ""), int(data.get("count") or 0), int(data.get("total") or 0))


@dataclass(frozen=True)
class StepAction:
    """One action of a step: what was called, and what the environment answered."""

    name: str
    arguments: Mapping[str, Any]
    observation: str | None = None  # None: the episode ended before it was answered
    is_error: bool = False
    text: str | None = None  # the text runner: the action as written and executed ("search[Ed Wood]")


@dataclass(frozen=True)
class Step:
    number: int
    text: str  # what the model wrote in the step (thought, or its whole completion)
    actions: tuple[StepAction, ...] = ()
    usage: Usage = Usage()
    parse_error: str | None = None
    finished: bool = False  # the step's turn came back whole (a ``step_finished`` event; its usage is the turn's)


@dataclass(frozen=True)
class Episode:
    """One episode of an example (a backoff or CoT-SC has several): its route (which part of the
    mode ran it), what the model saw first, the history as sent (messages) and its events."""

    route: str
    history: tuple[Mapping[str, Any], ...] = ()  # messages as written (types.message_to_dict)
    events: tuple[Mapping[str, Any], ...] = ()  # agent events as written (events.event_to_dict)
    first_observation: str | None = None  # None: a record written before it was kept
    trial: int | None = None  # mode=reflexion: the trial it ran in (1..); None: not a trial
    memory: str = ""  # mode=reflexion: the reflections as the prompt held them, before the opening

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "route": self.route,
            "first_observation": self.first_observation,
            "history": list(self.history),
            "events": list(self.events),
        }
        if self.trial is not None:  # (the layout of every other episode stays as it was)
            out["trial"] = self.trial
        if self.memory:
            out["memory"] = self.memory
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Episode:
        first = data.get("first_observation")
        return Episode(
            route=str(data.get("route") or ""),
            history=tuple(data.get("history") or ()),
            events=tuple(data.get("events") or ()),
            first_observation=None if first is None else str(first),
            trial=None if data.get("trial") is None else int(data["trial"]),
            memory=str(data.get("memory") or ""),
        )

    def messages(self) -> list[Message]:
        return [message_from_dict(m) for m in self.history]

    def steps(self, *, text: bool = True) -> list[Step]:
        """The episode's steps: the model's text of step k is the k-th assistant turn of the
        history; its actions, their observations, a parse error and the usage come from the events.
        ``text=False``: each step's text is left empty (the history is not read: what a summary of
        a large run needs is in the events)."""
        said = [m.text for m in self.messages() if m.role == "assistant"] if text else []
        steps: dict[int, dict[str, Any]] = {}
        pending: dict[str, dict[str, Any]] = {}  # call id -> its action, until its observation
        for event in self.events:
            number = int(event.get("step") or 0)  # 0: an event written without its step (kept, not dropped)
            step = steps.setdefault(number, {"actions": [], "usage": Usage(), "parse_error": None, "finished": False})
            match event.get("type"):
                case "tool_called":
                    action = {
                        "name": str(event.get("name") or ""),
                        "arguments": dict(event.get("arguments") or {}),
                        "observation": None,
                        "is_error": False,
                        "text": event.get("text"),
                    }
                    step["actions"].append(action)
                    pending[str(event.get("call_id"))] = action
                case "tool_execution_finished":
                    found = pending.pop(str(event.get("call_id")), None)
                    if found is not None:
                        found["observation"] = str(event.get("observation") or "")
                        found["is_error"] = bool(event.get("is_error"))
                case "parse_error":
                    step["parse_error"] = str(event.get("message") or "")
                case "step_finished":
                    step["usage"], step["finished"] = Usage.from_dict(event.get("usage")), True
        return [
            Step(
                number,
                said[number - 1] if 0 < number <= len(said) else "",
                tuple(StepAction(**a) for a in s["actions"]),
                s["usage"],
                s["parse_error"],
                s["finished"],
            )
            for number, s in sorted(steps.items())
        ]


@dataclass(frozen=True)
class ExampleRecord:
    """One finished example: a line of ``examples.jsonl``."""

    id: str
    question: str
    gold: str
    prediction: str
    correct: bool  # the task's primary metric at 1 (HotpotQA: EM; FEVER: label accuracy; games: success)
    scores: Mapping[str, Any]  # the task's metrics (em, f1, accuracy, success, score, in_label_set)
    reason: str  # answered | step_limit | error | refused | done ...
    route: str
    steps: int = 0
    reward: float | None = None
    backoff: bool = False
    error: str | None = None
    usage: Usage = Usage()
    calls: int = 0
    bad_calls: int = 0
    repairs: Mapping[str, int] = field(default_factory=dict)
    replaced_chars: int = 0
    samples: tuple[str, ...] = ()
    vote: Vote | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    trajectory: tuple[Episode, ...] = ()
    wall_s: float | None = None  # the example's own time, environment and model together (None: not kept)
    retries: int = 0  # transient faults survived (models.retrying)
    request_cache: Mapping[str, int] = field(default_factory=lambda: {"hits": 0, "misses": 0})
    cache_write_failures: int = 0
    stop_reasons: Mapping[str, int] = field(default_factory=dict)  # every call's, as the API gave it
    cost_usd: float | None = None  # None: a model with no price, never a silent 0
    saved_usd: float | None = None
    worker: str | None = None  # the Ray node and process that ran it (executor=ray)
    epoch: int = 1  # the attempt (epochs=k: 1..k); a line per attempt
    # what the method adds to the record (its Outcome.extra, as JSON: Reflexion's trials, LATS's search
    # tree, best-of-k's candidates); None: nothing. Its method reads it (``Method`` hooks), no one else.
    method: Mapping[str, Any] | None = None
    # when its calls, tools and method stages happened (``react_bench.timeline``; what its trace is made
    # of); None: a record written before it was kept
    timeline: Mapping[str, Any] | None = None
    version: int = RECORD_VERSION

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "gold": self.gold,
            "prediction": self.prediction,
            "correct": self.correct,
            **self.scores,
        }
        out.update(
            reward=self.reward,
            steps=self.steps,
            reason=self.reason,
            route=self.route,
            backoff=self.backoff,
            error=self.error,
            usage=self.usage.to_dict(),
            calls=self.calls,
            bad_calls=self.bad_calls,
            repairs=dict(self.repairs),
            replaced_chars=self.replaced_chars,
            samples=list(self.samples),
            vote=None
            if self.vote is None
            else {"answer": self.vote.answer, "count": self.vote.count, "total": self.vote.total},
            metadata=dict(self.metadata),
            trajectory=[e.to_dict() for e in self.trajectory],
            wall_s=self.wall_s,
            retries=self.retries,
            request_cache=dict(self.request_cache),
            cache_write_failures=self.cache_write_failures,
            stop_reasons=dict(self.stop_reasons),
            cost_usd=self.cost_usd,
            saved_usd=self.saved_usd,
        )
        if self.worker is not None:
            out["worker"] = self.worker
        if self.epoch != 1:
            out["epoch"] = self.epoch
        if self.method is not None:
            out["method"] = dict(self.method)
        if self.timeline is not None:
            out["timeline"] = dict(self.timeline)
        out["record_version"] = self.version
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ExampleRecord:
        """A line of any version, upgraded (see the module docstring)."""
        known = _FIELDS | {"record_version"}
        usage = data.get("usage")
        # before version 3 a method kept its own parts at the top level (a list or an object, where a
        # score is a number): they are read into ``method``, as a version-3 line holds them
        own = {k: v for k, v in data.items() if k not in known and isinstance(v, list | Mapping)}
        method = data.get("method") if isinstance(data.get("method"), Mapping) else None
        if own:
            method = {**own, **(method or {})}
        return ExampleRecord(
            id=str(data["id"]),
            question=str(data.get("question") or ""),
            gold=str(data.get("gold") or ""),
            prediction=str(data.get("prediction") or ""),
            correct=bool(data.get("correct")),
            scores={k: v for k, v in data.items() if k not in known and k not in own},
            reason=str(data.get("reason") or ""),
            route=str(data.get("route") or ""),
            steps=int(data.get("steps") or 0),
            reward=None if data.get("reward") is None else float(data["reward"]),
            backoff=bool(data.get("backoff")),
            error=data.get("error"),
            usage=Usage.from_dict(usage if isinstance(usage, Mapping) else None),
            calls=int(data.get("calls") or 0),
            bad_calls=int(data.get("bad_calls") or 0),
            repairs=dict(data.get("repairs") or {}),
            replaced_chars=int(data.get("replaced_chars") or 0),
            samples=tuple(data.get("samples") or ()),
            vote=Vote.from_dict(data.get("vote")),
            metadata=dict(data.get("metadata") or {}),
            trajectory=tuple(Episode.from_dict(e) for e in data.get("trajectory") or ()),
            wall_s=None if data.get("wall_s") is None else float(data["wall_s"]),
            retries=int(data.get("retries") or 0),
            request_cache={k: int(v or 0) for k, v in (data.get("request_cache") or {"hits": 0, "misses": 0}).items()},
            cache_write_failures=int(data.get("cache_write_failures") or 0),
            stop_reasons=dict(data.get("stop_reasons") or {}),
            cost_usd=data.get("cost_usd"),
            saved_usd=data.get("saved_usd", 0.0),  # version 1 before it was kept: nothing served from a cache
            worker=data.get("worker"),
            epoch=int(data.get("epoch") or 1),
            method=method,
            timeline=data.get("timeline") if isinstance(data.get("timeline"), Mapping) else None,
            version=RECORD_VERSION,  # upgraded: it now reads as the current version does
        )

    @property
    def first_observation(self) -> str | None:
        """What the model saw first in the example's first episode."""
        return self.trajectory[0].first_observation if self.trajectory else None

    def executed(self) -> list[StepAction]:
        """Every action the environment answered, over the example's episodes, in order."""
        return [a for e in self.trajectory for s in e.steps(text=False) for a in s.actions if a.observation is not None]

    @staticmethod
    def of(record: ExampleRecord | Mapping[str, Any]) -> ExampleRecord:
        """A record as it is, or a line's dict (a notebook's DataFrame row) read as one; a NaN (what
        pandas puts where a row has no value) reads as absent."""
        if isinstance(record, ExampleRecord):
            return record
        return ExampleRecord.from_dict({k: v for k, v in record.items() if not (isinstance(v, float) and v != v)})


_FIELDS = {f.name for f in fields(ExampleRecord)} - {"scores", "version"}


@dataclass(frozen=True)
class RunHeader:
    """What readers take from a run's ``run.json`` (the settings as composed, the model, the
    example ids, what the model did not apply), typed: ``mode``, ``runner``, ``task`` and
    ``protocol`` are read here once, not by string keys in every reader. Runs written before a
    field was kept read it as None (``endpoint``, ``sdk``, ``coverage``)."""

    run_id: str
    fingerprint: str
    started: str
    model_name: str
    config: Mapping[str, Any]
    n_examples: int
    example_ids: tuple[str, ...] = ()
    not_applied: tuple[str, ...] = ()
    endpoint: str | None = None  # host[:port]; None: no server, or a run made before it was recorded
    sdk: str | None = None
    coverage: Mapping[str, Any] | None = None
    epochs: int = 1  # attempts per example

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> RunHeader:
        return RunHeader(
            run_id=str(data["run_id"]),
            fingerprint=str(data.get("fingerprint") or ""),
            started=str(data.get("started") or ""),
            model_name=str(data.get("model_name") or ""),
            config=dict(data.get("config") or {}),
            n_examples=int(data.get("n_examples") or 0),
            example_ids=tuple(str(i) for i in data.get("example_ids") or ()),
            not_applied=tuple(data.get("not_applied") or ()),
            endpoint=data.get("endpoint"),
            sdk=data.get("sdk"),
            coverage=data.get("coverage"),
            epochs=int(data.get("epochs") or 1),
        )

    @staticmethod
    def read(run_dir: str | Path) -> RunHeader:
        return RunHeader.from_dict(json.loads((Path(run_dir) / "run.json").read_text(encoding="utf-8")))

    @property
    def task(self) -> str:
        return str((self.config.get("task") or {}).get("name") or "")

    @property
    def mode(self) -> str:
        return str((self.config.get("solve") or {}).get("mode") or "")

    @property
    def runner(self) -> str:
        return str((self.config.get("solve") or {}).get("runner") or "")

    @property
    def protocol(self) -> str | None:
        return self.config.get("protocol")

    @property
    def left_out(self) -> tuple[str, ...]:
        """Unreadable examples the run went on without (``coverage.left_out``)."""
        return tuple((self.coverage or {}).get("left_out") or ())


# --- the run's metrics (metrics.json) --------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """A mean of per-example scores with its 95% interval (Wilson's or the bootstrap)."""

    mean: float
    ci95: tuple[float, float]
    ci_method: str = "bootstrap"

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci95": list(self.ci95), "ci_method": self.ci_method}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> Score:
        low, high = data.get("ci95") or (data["mean"], data["mean"])
        return Score(float(data["mean"]), (float(low), float(high)), str(data.get("ci_method") or "bootstrap"))


@dataclass(frozen=True)
class GroupScore:
    """The primary metric over the examples of one group (an ALFWorld task type)."""

    n: int
    mean: float
    ci95: tuple[float, float]


@dataclass(frozen=True)
class Cost:
    """What a run cost in USD (``results._cost``); None is unknown, never a silent 0."""

    spent: float | None = 0.0
    saved: float | None = 0.0
    total: float | None = None
    per_example: float | None = None
    per_correct: float | None = None


def _json(key: str = "", *, omit: Callable[[Any], bool] | None = None, layout: str = "") -> dict[str, Any]:
    """Where a field of ``RunMetrics`` lives in metrics.json: ``key`` (dots nest; "": the field's
    name), ``omit`` (left out of the file when true of the metrics), ``layout`` (one of the two
    layouts the file has always had for a metric's own name: ``by_metric``, ``by_group``)."""
    return {"json": key, "omit": omit, "layout": layout}


def _place(f: Any) -> tuple[str, Callable[[Any], bool] | None, str]:
    """A ``RunMetrics`` field's key in metrics.json (its name unless ``_json`` says otherwise), when
    it is left out, and its layout."""
    return f.metadata.get("json") or f.name, f.metadata.get("omit"), f.metadata.get("layout", "")


def _when_none(name: str) -> Callable[[Any], bool]:
    return lambda metrics: getattr(metrics, name) is None


def _one_epoch(metrics: Any) -> bool:
    return bool(metrics.epochs <= 1)


@dataclass(frozen=True)
class RunMetrics:
    """A run's metrics, as ``results.summarize`` computes them from ``examples.jsonl`` and
    ``metrics.json`` holds them. The file's layout is read from the fields themselves (their
    types, and ``_json`` where a figure sits elsewhere than under its own name): ``to_dict``
    writes it, ``from_dict`` reads a file of any earlier run, a figure it lacks taking its
    default. A new figure is one field here, with its default."""

    run_id: str
    task: str
    model: str
    mode: str
    runner: str
    n: int
    n_planned: int
    primary_metric: str
    metrics: tuple[str, ...]  # the task's metric names, in table order
    # those of ``metrics`` the run has, each under its own name at the top of the file
    scores: Mapping[str, Score] = field(default_factory=dict, metadata=_json(layout="by_metric"))
    fingerprint: str = ""
    protocol: str | None = None
    endpoint: str | None = None
    sdk: str | None = None
    not_applied: tuple[str, ...] = ()
    usage: Usage = Usage()
    calls: int = 0
    left_out: tuple[str, ...] = ()
    reasons: Mapping[str, int] = field(default_factory=dict)
    routes: Mapping[str, int] = field(default_factory=dict)
    errors: int = 0
    errored_ids: tuple[str, ...] = ()
    retries: int = 0
    request_cache: Mapping[str, int] = field(default_factory=lambda: {"hits": 0, "misses": 0})
    replaced_chars: int = 0
    stop_reasons: Mapping[str, int] = field(default_factory=dict)
    refused: int = 0
    cache_write_failures: int = 0
    bad_calls: int = 0
    repairs: Mapping[str, int] = field(default_factory=dict)
    # FEVER: answers that named no label (None: not a label task)
    out_of_label_set: int | None = field(default=None, metadata=_json(omit=_when_none("out_of_label_set")))
    cost: Cost = field(default=Cost(), metadata=_json("cost_usd"))
    failure_labels: Mapping[str, int] = field(default_factory=dict)
    grounded_n: int = 0
    grounded: float | None = None
    grounded_accuracy: float | None = None
    mean_steps: float = 0.0
    wall_per_example_s: float | None = field(default=None, metadata=_json("wall.per_example_s"))
    wall_per_call_s: float | None = field(default=None, metadata=_json("wall.per_call_s"))
    mean_actions: float = 0.0
    actions: int = field(default=0, metadata=_json("actions.n"))
    invalid_rate: float = field(default=0.0, metadata=_json("actions.invalid_rate"))
    think_share: float = field(default=0.0, metadata=_json("actions.think_share"))
    # the primary metric by group (ALFWorld's task types), each group's mean under the metric's name
    by_group: Mapping[str, Mapping[str, GroupScore]] = field(default_factory=dict, metadata=_json(layout="by_group"))
    over_budget: int = 0  # examples not started because max_cost_usd would have been passed
    # epochs=k (k > 1): pass@j (some of j attempts right, the unbiased estimator) and pass^j (all j
    # right), for j = 1..k, each a mean over examples with its interval
    epochs: int = field(default=1, metadata=_json(omit=_one_epoch))
    pass_at: Mapping[int, Score] = field(default_factory=dict, metadata=_json("pass_at_k", omit=_one_epoch))
    pass_hat: Mapping[int, Score] = field(default_factory=dict, metadata=_json("pass_hat_k", omit=_one_epoch))
    # epochs=k (k > 1): the share of examples whose outcome differs between their attempts (trials)
    flips: float | None = field(default=None, metadata=_json("flip_share", omit=_one_epoch))
    # what the method adds to the summary (Method.summarize: its ``summary_type``, as JSON): "oracle_feedback":
    # true where the gold answer steered it, "reward_selected" > 0 where the environment's reward chose
    # answers. A file written before version 3 kept it under the mode's own name (read here as ``method``).
    method: Mapping[str, Any] | None = field(default=None, metadata=_json(omit=_when_none("method")))
    # judge= (grading.judge): the second reading's counts (misses accepted, hits rejected, unjudged),
    # who judged and its spend; its score is ``judged`` (a model) or ``rules`` (the heuristic) in ``scores``
    judge: Mapping[str, Any] | None = field(default=None, metadata=_json(omit=_when_none("judge")))

    @property
    def oracle_feedback(self) -> bool:
        """Whether the gold answer steered the run (Reflexion's oracle evaluator, LATS's oracle feedback,
        another method's ``oracle_feedback``)."""
        return bool(self.method and self.method.get("oracle_feedback"))

    @property
    def chosen_by_reward(self) -> bool:
        """Whether the environment's reward, scored against the hidden goal, chose some example's answer
        among candidates (LATS's ``lats.select=reward`` on WebShop or ALFWorld): oracle-like selection."""
        return bool(self.method and self.method.get("reward_selected"))

    @property
    def primary(self) -> Score | None:
        return self.scores.get(self.primary_metric)

    @property
    def cache_hits(self) -> int:
        return int(self.request_cache.get("hits") or 0)

    @property
    def cache_calls(self) -> int:
        """Calls the request cache saw (served or sent)."""
        return self.cache_hits + int(self.request_cache.get("misses") or 0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            key, omit, layout = _place(f)
            value = getattr(self, f.name)
            if omit is not None and omit(self):
                continue
            if layout == "by_metric":
                out.update({name: score.to_dict() for name, score in value.items()})
                continue
            if layout == "by_group":
                value = {
                    key: {v: {"n": g.n, self.primary_metric: g.mean, "ci95": list(g.ci95)} for v, g in groups.items()}
                    for key, groups in value.items()
                }
            *parents, last = key.split(".")
            place = out
            for parent in parents:
                place = place.setdefault(parent, {})
            place[last] = _to_json(value)
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> RunMetrics:
        hints = _metrics_hints()
        primary = str(data.get("primary_metric") or "")
        values: dict[str, Any] = {}
        for f in fields(RunMetrics):
            key, _, layout = _place(f)
            if layout == "by_metric":
                names = data.get("metrics") or ()
                values[f.name] = {n: Score.from_dict(data[n]) for n in names if isinstance(data.get(n), Mapping)}
                continue
            raw: Any = data
            for part in key.split("."):
                raw = raw.get(part) if isinstance(raw, Mapping) else None
            if layout == "by_group":
                values[f.name] = {
                    key: {
                        v: GroupScore(
                            int(g.get("n") or 0), float(g.get(primary) or 0.0), tuple(g.get("ci95") or (0.0, 0.0))
                        )
                        for v, g in (groups or {}).items()
                    }
                    for key, groups in (raw or {}).items()
                }
            elif raw is None and f.name == "method" and isinstance(data.get(str(data.get("mode"))), Mapping):
                values[f.name] = dict(data[str(data["mode"])])  # before version 3: under the mode's own name
            elif raw is None:
                values[f.name] = _default(f, hints[f.name])
            else:
                values[f.name] = _from_json(raw, hints[f.name])
        return RunMetrics(**values)

    @staticmethod
    def read(run_dir: str | Path) -> RunMetrics | None:
        """A run folder's ``metrics.json``, or None before the run has finished once."""
        path = Path(run_dir) / "metrics.json"
        return RunMetrics.from_dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None


# --- metrics.json from the fields' types ----------------------------------------------------


@functools.cache
def _metrics_hints() -> dict[str, Any]:
    return typing.get_type_hints(RunMetrics)


def _to_json(value: Any) -> Any:
    """A field's value as JSON: a record type by its own ``to_dict`` (or its fields), tuples as
    lists, mapping keys as text."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


def _default(f: Any, hint: Any) -> Any:
    """A figure an older file lacks: the field's default, or the empty value of its type."""
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return _from_json(None, hint)


def _from_json(raw: Any, hint: Any) -> Any:
    """``raw`` (JSON) read as ``hint``, the field's type; None or absent: the type's empty value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in args if a is not type(None)]
        return None if raw is None else _from_json(raw, inner[0])
    if origin is tuple:
        return tuple(_from_json(v, args[0]) for v in raw or ())
    if origin in (Mapping, dict, collections.abc.Mapping):
        key, value = args
        return {key(k): _from_json(v, value) for k, v in (raw or {}).items()}
    if hasattr(hint, "from_dict"):
        return hint.from_dict(raw or {})
    if is_dataclass(hint):
        make: Any = hint
        return make(**{f.name: (raw or {}).get(f.name, f.default) for f in fields(hint)})
    if hint in (int, float, str):
        return hint(raw or hint())
    return raw
