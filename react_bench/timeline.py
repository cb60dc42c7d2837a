"""When each part of an example happened: its model calls, its tool executions, its method's stages.

A ground-floor module (it imports nothing of the package). ``episode.solve_example`` opens a
``timeline_scope`` around each example, as it opens the recording and counting scopes; the layers
that see a part begin and end it here, through the context variable, so concurrent examples never
mix their times:

- a model call: ``models.replay.RecordingModel``, from the moment the call is asked to its
  response (retries and the request cache inside it); the mark holds the recorded call itself,
  so the record can say which call of the cassette line it is (``call_times``);
- a tool execution: ``loop.execute_all``, around ``env.step``, by the call's id and name with the
  sizes of its arguments and its observation (never their text) and whether it failed;
- a method's stage (Reflexion's trial, LATS's search iteration, best-of-k's candidate):
  ``methods.core.announce``, which also tells the run's sinks.

Times are seconds since the example began (``time.monotonic``), with the wall-clock start kept
once (``started``, Unix seconds), so a record's times are comparable within it and placeable in
the world. The record keeps them as ``ExampleRecord.timeline`` (``to_dict``), which is what
``react_bench.tracing`` makes spans of, live or afterwards. Outside a scope nothing is kept.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallMark:
    """A model call: asked at ``start``, answered (or failed) at ``end``; ``call``: what was recorded."""

    start: float
    end: float | None = None
    call: Any = None


@dataclass
class ToolMark:
    """A tool execution of one action."""

    call_id: str
    name: str
    step: int
    start: float
    end: float | None = None
    arguments_chars: int = 0
    observation_chars: int = 0
    is_error: bool = False


@dataclass
class StageMark:
    """A method's stage began: ``what`` ``index`` of ``total``."""

    what: str
    index: int
    total: int
    start: float


@dataclass
class Timeline:
    started: float = field(default_factory=time.time)  # Unix seconds: where the example sits in the world
    origin: float = field(default_factory=time.monotonic)
    calls: list[CallMark] = field(default_factory=list)
    tools: list[ToolMark] = field(default_factory=list)
    stages: list[StageMark] = field(default_factory=list)
    ended: float | None = None

    def now(self) -> float:
        return time.monotonic() - self.origin

    def call_times(self, calls: list[Any]) -> list[list[float] | None]:
        """``[start, end]`` of each recorded call, in the cassette's order; None for a call made before
        this timeline (a Reflexion trial taken from the run's log on resume)."""
        by_call = {id(m.call): m for m in self.calls if m.call is not None and m.end is not None}
        out: list[list[float] | None] = []
        for call in calls:
            mark = by_call.get(id(call))
            out.append(None if mark is None or mark.end is None else [_r(mark.start), _r(mark.end)])
        return out

    def to_dict(self, calls: list[Any]) -> dict[str, Any]:
        """The record's ``timeline``: calls by their place in the cassette line, tools in the order
        they were executed, stages in the order they began."""
        return {
            "started": round(self.started, 6),
            "wall_s": _r(self.ended if self.ended is not None else self.now()),
            "calls": self.call_times(calls),
            "tools": [
                {
                    "id": t.call_id,
                    "name": t.name,
                    "step": t.step,
                    "t": [_r(t.start), _r(t.end if t.end is not None else t.start)],
                    "arguments_chars": t.arguments_chars,
                    "observation_chars": t.observation_chars,
                    "is_error": t.is_error,
                }
                for t in self.tools
            ],
            "stages": [{"what": s.what, "index": s.index, "total": s.total, "t": _r(s.start)} for s in self.stages],
        }


def _r(seconds: float) -> float:
    return round(seconds, 6)


_TIMELINE: ContextVar[Timeline | None] = ContextVar("react_bench_timeline", default=None)


@contextmanager
def timeline_scope() -> Iterator[Timeline]:
    timeline = Timeline()
    token = _TIMELINE.set(timeline)
    try:
        yield timeline
    finally:
        timeline.ended = timeline.now()
        _TIMELINE.reset(token)


def call_started() -> CallMark | None:
    timeline = _TIMELINE.get()
    if timeline is None:
        return None
    mark = CallMark(timeline.now())
    timeline.calls.append(mark)
    return mark


def call_ended(mark: CallMark | None, call: Any) -> None:
    timeline = _TIMELINE.get()
    if mark is not None and timeline is not None:
        mark.end, mark.call = timeline.now(), call


def tool_started(call_id: str, name: str, step: int, arguments: Mapping[str, Any]) -> ToolMark | None:
    timeline = _TIMELINE.get()
    if timeline is None:
        return None
    size = sum(len(str(v)) for v in arguments.values())
    mark = ToolMark(call_id, name, step, timeline.now(), arguments_chars=size)
    timeline.tools.append(mark)
    return mark


def tool_ended(mark: ToolMark | None, observation: str, is_error: bool) -> None:
    timeline = _TIMELINE.get()
    if mark is not None and timeline is not None:
        mark.end, mark.observation_chars, mark.is_error = timeline.now(), len(observation), is_error


def stage_began(what: str, index: int, total: int) -> None:
    timeline = _TIMELINE.get()
    if timeline is not None:
        timeline.stages.append(StageMark(what, index, total, timeline.now()))
