"""Watching a run in the terminal: the progress bar, live trajectories, a quiet console.

``show`` (a top-level setting) chooses what a run prints:
- ``summary`` (default): a progress bar with the running score, tokens and cost; the metrics
  table at the end.
- ``trajectories``: the same, plus every example's events as they happen, as the original
  ReAct notebooks printed them: the question and the gold answer, then each step's labelled
  thought, action (``Action 1: search[Ed Wood] ... executing``) and observation (shortened),
  the answer and whether it is right. Text is shown line by line as it streams. Each
  example's lines stay together (examples running beside it follow, whole); with concurrency
  above 1 each line also starts with the example's id. Lines go through the bar's ``write``,
  so the bar keeps its place at the bottom.
- ``none``: no bar, no table: only the line naming the results folder.

``quiet_console()`` silences what third-party libraries print into a run: the HTTP clients'
``HTTP Request: POST ...`` info lines, ``datasets``' progress bars and "Generating ... split"
logs; Python warnings are shown once each.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, Literal, TextIO, assert_never, get_args

from react_bench.events import (
    AgentEvent,
    AssistantTextDelta,
    AssistantThinkingDelta,
    EpisodeFinished,
    MethodStage,
    ParseError,
    RunProgress,
    StepFinished,
    StepStarted,
    ToolCalled,
    ToolExecutionFinished,
    ToolExecutionStarted,
)
from react_bench.record import ExampleRecord

Show = Literal["summary", "trajectories", "none"]
SHOWS: tuple[str, ...] = get_args(Show)
OBSERVATION_CHARS = 200
NOISY_LOGGERS = ("httpx", "httpx2", "httpcore", "anthropic", "openai", "urllib3", "datasets", "filelock", "fsspec")


def quiet_console() -> None:
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # datasets reads these when it is imported (a second of start-up: only when data is read)
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("DATASETS_VERBOSITY", "error")
    datasets = sys.modules.get("datasets")
    if datasets is not None:  # already imported: tell it directly
        datasets.disable_progress_bars()
        datasets.utils.logging.set_verbosity_error()
    warnings.simplefilter("once")
    warnings.filterwarnings("ignore", category=ResourceWarning)  # as Python's default: interpreter-exit noise


class ProgressBar:
    """tqdm with the running score, tokens and cost of the examples written so far."""

    def __init__(self, desc: str, total: int, initial: int, out: TextIO, *, enabled: bool):
        from tqdm import tqdm

        self._out = out
        self._bar = tqdm(
            total=total, initial=initial, desc=desc, unit="ex", file=out, disable=not enabled, dynamic_ncols=True
        )
        self._right = self._n = self._tokens = 0
        self._cost: float | None = 0.0
        self._figures = ""
        self._steps: dict[str, int] = {}  # the step in progress of each example in flight
        self._trials: dict[str, str] = {}  # mode=reflexion: "trial k/n" of each example in flight

    def heartbeat(self, example_id: str, step: int) -> None:
        """A step has started: shown at once, so a long example shows life before it is written."""
        self._steps[example_id] = step
        self._show(refresh=True)

    def stage(self, example_id: str, what: str, index: int, total: int) -> None:
        """A method's stage (``events.MethodStage``: a Reflexion trial, a LATS iteration) has started:
        its steps count from 1 again, so the line says which."""
        self._trials[example_id] = f"{what} {index}/{total}, "
        self._steps.pop(example_id, None)
        self._show(refresh=True)

    def _show(self, *, refresh: bool) -> None:
        live = ", ".join(f"{i[:8]} {self._trials.get(i, '')}step {k}" for i, k in list(self._steps.items())[-3:])
        text = "; ".join(t for t in (self._figures, f"now: {live}" if live else "") if t)
        self._bar.set_postfix_str(text, refresh=refresh)

    def update(self, record: ExampleRecord) -> None:
        self._n += 1
        self._right += record.correct
        self._tokens += record.usage.total_input_tokens + record.usage.output_tokens
        cost = record.cost_usd
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        cost_text = "unknown" if self._cost is None else f"${self._cost:.4f}"
        score = f"{100 * self._right / self._n:.1f}%"
        self._figures = f"score {score}, tokens {self._tokens}, cost {cost_text}"
        self._steps.pop(record.id, None)
        self._trials.pop(record.id, None)
        self._show(refresh=False)
        self._bar.update(1)

    def write(self, line: str) -> None:
        self._bar.write(line, file=self._out)  # above the bar, which keeps its place

    def close(self) -> None:
        self._bar.close()


class TrajectoryPrinter:
    """``on_event`` for ``evaluate``: prints each example's events as lines, as they happen.

    Each example's lines stay together: the example being printed streams live; lines of the
    examples running beside it wait in a buffer and follow, whole, once it has printed its
    result. Each block opens with the question and the gold answer (``begin``) and labels its
    lines as the paper's transcripts do (``Thought k:``, ``Action k:``, ``Observation k:``)."""

    def __init__(self, write: Callable[[str], None], *, prefix_ids: bool):
        self.write = write
        self.prefix_ids = prefix_ids
        self._partial: dict[str, str] = {}  # streamed text not yet ended by a newline, per example
        self._step: dict[str, int] = {}
        self._labelled: dict[str, bool] = {}  # whether this step's thought has its label yet
        self._current: str | None = None  # the example whose lines go out live
        self._waiting: list[str] = []  # the others, in the order they started
        self._buffers: dict[str, list[str]] = {}
        self._complete: set[str] = set()  # waiting examples that have printed their result

    def begin(self, example_id: str, question: str, gold: Any) -> None:
        self._line(example_id, f"=== {example_id}: {' '.join(question.split())}")
        self._line(example_id, f"    gold: {gold!r}")

    def __call__(self, example_id: str, event: AgentEvent) -> None:
        match event:
            case MethodStage(what=what, index=index, total=total, detail=detail):
                self._flush(example_id)
                self._line(example_id, f"=== {what} {index}/{total}" + (f" ({detail})" if detail else ""))
            case StepStarted(step=step):
                self._step[example_id], self._labelled[example_id] = step, False
                self._line(example_id, f"--- step {step}")
            case AssistantTextDelta(text=text) | AssistantThinkingDelta(thinking=text):
                self._stream(example_id, text, thinking=isinstance(event, AssistantThinkingDelta))
            case ToolCalled(name=name, arguments=arguments, text=text):
                self._flush(example_id)
                if text is not None:  # the text runner: its own "Action k: ..." line was shown as it streamed
                    self._line(example_id, f"{text.strip()} ... executing")
                else:
                    self._line(
                        example_id, f"{self._label(example_id, 'Action', _action(name, arguments))} ... executing"
                    )
            case ToolExecutionStarted():
                pass  # announced with the call above
            case ToolExecutionFinished(observation=observation, is_error=is_error):
                label = "Error" if is_error else "Observation"
                self._line(example_id, self._label(example_id, label, _short(observation)))
            case ParseError(message=message):
                self._flush(example_id)
                self._line(example_id, f"(parse error: {message})")
            case StepFinished():
                self._flush(example_id)
            case EpisodeFinished(answer=answer, reason=reason, error=error):
                self._flush(example_id)
                self._line(example_id, f"episode ends: {reason}, answer {answer!r}" + (f" ({error})" if error else ""))
            case RunProgress(prediction=prediction, correct=correct, done=done, total=total):
                verdict = "RIGHT" if correct else "wrong"
                self._line(example_id, f"=== answer {prediction!r}: {verdict}  [{done}/{total}]")
                self._finished(example_id)
            case _:
                assert_never(event)

    def _label(self, example_id: str, label: str, text: str) -> str:
        step = self._step.get(example_id)
        if step is None or text.startswith(f"{label} "):
            return text if step is not None else f"{label}: {text}"
        return f"{label} {step}: {text}"

    def _stream(self, example_id: str, text: str, *, thinking: bool) -> None:
        buffered = self._partial.get(example_id, "") + text
        *complete, rest = buffered.split("\n")
        for line in complete:
            self._text_line(example_id, line, thinking=thinking)
        self._partial[example_id] = rest

    def _text_line(self, example_id: str, line: str, *, thinking: bool = False) -> None:
        if not line.strip():
            return
        if thinking:
            self._line(example_id, f"(thinking) {line}")
            return
        if not self._labelled.get(
            example_id, True
        ):  # the step's first text: its thought (the prompt ends "Thought k:")
            self._labelled[example_id] = True
            if not line.lstrip().startswith(("Thought", "Action")):
                line = self._label(example_id, "Thought", line.strip())
        self._line(example_id, line)

    def _flush(self, example_id: str) -> None:
        rest = self._partial.pop(example_id, "")
        self._text_line(example_id, rest)

    def _line(self, example_id: str, text: str) -> None:
        line = f"[{example_id[:10]}] {text}" if self.prefix_ids else text
        if self._current is None and example_id not in self._waiting:
            self._current = example_id
        if example_id == self._current:
            self.write(line)
            return
        if example_id not in self._waiting:
            self._waiting.append(example_id)
        self._buffers.setdefault(example_id, []).append(line)

    def _finished(self, example_id: str) -> None:
        if example_id != self._current:
            self._complete.add(example_id)  # its whole block waits in its buffer for its turn
            return
        self._current = None
        while self._waiting:  # the next example's lines so far, then it streams live
            following = self._waiting.pop(0)
            for line in self._buffers.pop(following, []):
                self.write(line)
            if following in self._complete:
                self._complete.discard(following)
                continue
            self._current = following
            break


def _action(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the text runner would write it (the text runner's own text is shown as is)."""
    shown = ", ".join(str(v) for v in arguments.values())
    return f"{name}[{_short(shown, 80)}]"


def _short(text: str, limit: int = OBSERVATION_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check_show(value: str) -> Show:
    if value not in SHOWS:
        from react_bench.errors import ConfigError

        raise ConfigError(f"show={value}: choose one of {', '.join(SHOWS)}")
    match value:
        case "summary" | "trajectories" | "none":
            return value
        case _:  # pragma: no cover - checked above
            raise AssertionError(value)
