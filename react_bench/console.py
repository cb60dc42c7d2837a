"""Watching a run in the terminal: the progress bar, live trajectories, a quiet console.

``show`` (a top-level setting) chooses what a run prints:
- ``summary`` (default): a progress bar with the running score, tokens and cost; the metrics
  table at the end.
- ``trajectories``: the same, plus every example's events as they happen, as the original
  ReAct notebooks printed them: the step, the thought, the action (``search[Ed Wood] ...
  executing``), the observation (shortened), the answer and whether it is right. Text is
  shown line by line as it streams. With concurrency above 1 each line starts with the
  example's id, so interleaved examples stay readable. Lines go through the bar's
  ``write``, so the bar keeps its place at the bottom.
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
    ParseError,
    RunProgress,
    StepFinished,
    StepStarted,
    ToolCalled,
    ToolExecutionFinished,
    ToolExecutionStarted,
)

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
        self._bar = tqdm(total=total, initial=initial, desc=desc, unit="ex", file=out, disable=not enabled,
                         dynamic_ncols=True)  # fmt: skip
        self._right = self._n = self._tokens = 0
        self._cost: float | None = 0.0

    def update(self, record: dict[str, Any]) -> None:
        self._n += 1
        self._right += bool(record.get("correct"))
        usage = record.get("usage") or {}
        self._tokens += sum(int(v or 0) for v in usage.values())
        cost = record.get("cost_usd")
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        cost_text = "unknown" if self._cost is None else f"${self._cost:.4f}"
        score = f"{100 * self._right / self._n:.1f}%"
        self._bar.set_postfix_str(f"score {score}, tokens {self._tokens}, cost {cost_text}", refresh=False)
        self._bar.update(1)

    def write(self, line: str) -> None:
        self._bar.write(line, file=self._out)  # above the bar, which keeps its place

    def close(self) -> None:
        self._bar.close()


class TrajectoryPrinter:
    """``on_event`` for ``evaluate``: prints each example's events as lines, as they happen."""

    def __init__(self, write: Callable[[str], None], *, prefix_ids: bool):
        self.write = write
        self.prefix_ids = prefix_ids
        self._partial: dict[str, str] = {}  # streamed text not yet ended by a newline, per example

    def __call__(self, example_id: str, event: AgentEvent) -> None:
        match event:
            case StepStarted(step=step):
                self._line(example_id, f"--- step {step}")
            case AssistantTextDelta(text=text) | AssistantThinkingDelta(thinking=text):
                self._stream(example_id, text, thinking=isinstance(event, AssistantThinkingDelta))
            case ToolCalled(name=name, arguments=arguments, text=text):
                self._flush(example_id)
                self._line(
                    example_id, f"{text.strip() if text is not None else _action(name, arguments)} ... executing"
                )
            case ToolExecutionStarted():
                pass  # announced with the call above
            case ToolExecutionFinished(observation=observation, is_error=is_error):
                label = "Error" if is_error else "Observation"
                self._line(example_id, f"{label}: {_short(observation)}")
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
            case _:
                assert_never(event)

    def _stream(self, example_id: str, text: str, *, thinking: bool) -> None:
        buffered = self._partial.get(example_id, "") + text
        *complete, rest = buffered.split("\n")
        for line in complete:
            if line.strip():
                self._line(example_id, f"(thinking) {line}" if thinking else line)
        self._partial[example_id] = rest

    def _flush(self, example_id: str) -> None:
        rest = self._partial.pop(example_id, "")
        if rest.strip():
            self._line(example_id, rest)

    def _line(self, example_id: str, text: str) -> None:
        self.write(f"[{example_id[:10]}] {text}" if self.prefix_ids else text)


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
