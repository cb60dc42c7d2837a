"""Text formats: how the text runner writes a benchmark's episode as a prompt and reads actions back.

A task brings its format (the loop and the runners know none by name). Two families cover the
paper's four benchmarks:

- ``NumberedFormat`` (HotpotQA, FEVER): ``Question: q`` then ``Thought i: ... / Action i: ... /
  Observation i: ...``; the prompt ends with ``Thought i:`` (Act: ``Action i:``), the completion
  is cut at ``\\nObservation i:`` and parsed by the paper's or the robust parser
  (``runners.parsing``); a failed split is re-asked with ``Thought i: {thought}\\nAction i:`` and
  stop ``\\n`` (a bad call). Observations have literal backslash-n pairs removed, as the
  original notebooks did. At the step cap ``wrap_up`` asks for ``Action i: Finish[``.
- ``LineFormat`` (ALFWorld, WebShop): the observation, then one action per line after a prompt
  marker (ALFWorld ``>``, WebShop ``Action:``), stop ``\\n``, the completion stripped (WebShop:
  only leading spaces, as its notebook did); thoughts are actions the environment answers
  ``OK.`` (``think: ...``, ``think[...]``); no re-ask, no wrap-up.

A prompt is ``instruction + exemplars`` (shared by every example of a run), ``opening(first
observation)``, one ``piece`` per finished step, then ``suffix(step)``. The text the model wrote
becomes an ``environment.Action`` through the environment's ``grammar`` (given the actions the
environment offers), which also says how the action was executed (``Action.text``).

``exemplar_episodes`` reads a format's own exemplars back into steps, so that the tool-use
runner can send the same exemplars as native turns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from react_bench.environment import UNPARSED, Action, action_parameter
from react_bench.models.base import ToolSpec
from react_bench.models.stopping import REASK_STOP, step_stop
from react_bench.runners.parsing import ParsedStep, ParserName, parse_act, parse_step, reask_suffix

Style = Literal["react", "act"]
# (the text the model wrote, the actions the environment offers) -> the action to execute
Grammar = Callable[[str, Sequence[ToolSpec]], Action]


@dataclass(frozen=True)
class ExemplarStep:
    thought: str  # "" when the exemplar step has none
    action: str  # as written in the exemplar
    observation: str | None  # None: the exemplar ends without one (an answer action)


@dataclass(frozen=True)
class ExemplarEpisode:
    opening: str  # what the agent was told first ("Question: ...", a room and a task)
    steps: tuple[ExemplarStep, ...]


class TextFormat(Protocol):
    @property
    def label(self) -> str:
        """How an example's input is introduced in single-call prompts ("Question"); "" if none."""
        ...

    @property
    def grammar(self) -> Grammar: ...

    def opening(self, first: str) -> str: ...

    def suffix(self, step: int, style: Style) -> str: ...

    def stops(self, step: int) -> tuple[str, ...]: ...

    def parse(self, completion: str, step: int, style: Style, parser: ParserName) -> ParsedStep: ...

    def reask(self, step: int, style: Style, thought: str) -> str | None: ...

    def turn(self, step: int, style: Style, thought: str, action: str) -> str: ...

    def piece(self, step: int, turn: str, observation: str) -> str: ...

    def wrap_up(self, step: int) -> tuple[str, tuple[str, ...], str] | None: ...

    def exemplar_episodes(self, exemplars: str) -> list[ExemplarEpisode]: ...

    def exemplar_starts(self, exemplars: str) -> list[int]:
        """Where each exemplar episode of ``exemplars`` begins (character offsets), for ``shots=k``."""
        ...


def bracket_grammar(text: str, actions: Sequence[ToolSpec]) -> Action:
    """``name[argument]`` for any single-parameter action the environment offers, and
    ``think[...]`` (a thought the environment answers); taken as written, stripped."""
    params = {spec.name: action_parameter(spec) or "input" for spec in actions}
    params.setdefault("think", "thought")
    stripped = text.strip()
    name, bracket, rest = stripped.partition("[")
    if bracket and rest.endswith("]") and name in params:
        return Action(name, {params[name]: rest[:-1]}, stripped)
    return Action(UNPARSED, {}, stripped)


def _line_starts(text: str, opens: Callable[[str], bool]) -> list[int]:
    """The offsets of the lines of ``text`` for which ``opens`` holds."""
    starts, at = [], 0
    for line in text.splitlines(keepends=True):
        if opens(line.rstrip("\r\n")):
            starts.append(at)
        at += len(line)
    return starts


def paper_observation(text: str) -> str:
    # The original code removes literal backslash-n pairs (not newlines) from observations.
    return text.replace("\\n", "")


_STEP = re.compile(r"^(Thought|Action|Observation) (\d+): ?(.*)$")


@dataclass(frozen=True)
class NumberedFormat:
    """The paper's HotpotQA / FEVER format (module docstring)."""

    grammar: Grammar
    label: str = "Question"
    answer_action: str | None = "Finish"  # the wrap-up's action; None: no wrap-up
    answer_observation: str = ""  # the answer action's observation where an exemplar ends without one

    def opening(self, first: str) -> str:
        return f"{self.label}: {first}\n"

    def suffix(self, step: int, style: Style) -> str:
        return f"Action {step}:" if style == "act" else f"Thought {step}:"

    def stops(self, step: int) -> tuple[str, ...]:
        return (step_stop(step),)

    def parse(self, completion: str, step: int, style: Style, parser: ParserName) -> ParsedStep:
        return parse_act(completion, step, parser) if style == "act" else parse_step(completion, step, parser)

    def reask(self, step: int, style: Style, thought: str) -> str | None:
        return reask_suffix(step, thought) if style == "react" else self.suffix(step, style)

    def turn(self, step: int, style: Style, thought: str, action: str) -> str:
        if style == "act":
            return f"Action {step}: {action}"
        return f"Thought {step}: {thought}\nAction {step}: {action}"

    def piece(self, step: int, turn: str, observation: str) -> str:
        return f"{turn}\nObservation {step}: {paper_observation(observation)}\n"

    def wrap_up(self, step: int) -> tuple[str, tuple[str, ...], str] | None:
        """(suffix, stops, the text that closes the answer) of the call at the step cap."""
        if self.answer_action is None:
            return None
        return f"Action {step}: {self.answer_action}[", ("]", "\n"), "]"

    def exemplar_starts(self, exemplars: str) -> list[int]:
        return _line_starts(exemplars, lambda line: line.startswith(f"{self.label}: "))

    def exemplar_episodes(self, exemplars: str) -> list[ExemplarEpisode]:
        episodes: list[tuple[str, list[ExemplarStep]]] = []
        thought = ""
        for line in exemplars.splitlines():
            if line.startswith(f"{self.label}: "):
                episodes.append((line, []))
                thought = ""
                continue
            match = _STEP.match(line)
            if not (match and episodes):
                continue
            kind, text = match.group(1), match.group(3)
            steps = episodes[-1][1]
            if kind == "Thought":
                thought = text
            elif kind == "Action":
                steps.append(ExemplarStep(thought, text, None))
                thought = ""
            elif steps and steps[-1].observation is None:
                steps[-1] = ExemplarStep(steps[-1].thought, steps[-1].action, text)
        return [ExemplarEpisode(opening, tuple(self._answered(s) for s in steps)) for opening, steps in episodes]

    def _answered(self, step: ExemplarStep) -> ExemplarStep:
        """An exemplar ends with its answer action and no observation: the environment's own."""
        if step.observation is not None:
            return step
        answers = self.answer_action is not None and step.action.lower().startswith(f"{self.answer_action.lower()}[")
        return ExemplarStep(step.thought, step.action, self.answer_observation if answers else "")


@dataclass(frozen=True)
class LineFormat:
    """One action per line after ``marker`` (ALFWorld, WebShop; module docstring)."""

    grammar: Grammar
    marker: str  # ALFWorld ">", WebShop "Action:"
    opening_template: str  # "{observation}" is the first observation
    observation_label: str = ""  # WebShop "Observation: "
    step_gap: str = ""  # after each observation (WebShop: a blank line)
    strip: Literal["both", "leading_spaces"] = "both"
    episode_start: str = ""  # the line that starts an exemplar episode (several exemplars in one text)
    label: str = ""

    def opening(self, first: str) -> str:
        return self.opening_template.format(observation=first)

    def suffix(self, step: int, style: Style) -> str:
        return self.marker

    def stops(self, step: int) -> tuple[str, ...]:
        return (REASK_STOP,)

    def parse(self, completion: str, step: int, style: Style, parser: ParserName) -> ParsedStep:
        action = completion.strip() if self.strip == "both" else completion.lstrip(" ")
        return ParsedStep(thought="", action=action)  # never None: an empty action is the environment's to answer

    def reask(self, step: int, style: Style, thought: str) -> str | None:
        return None

    def turn(self, step: int, style: Style, thought: str, action: str) -> str:
        return action

    def piece(self, step: int, turn: str, observation: str) -> str:
        return f"{self.marker} {turn}\n{self.observation_label}{observation}\n{self.step_gap}"

    def wrap_up(self, step: int) -> tuple[str, tuple[str, ...], str] | None:
        return None

    def exemplar_starts(self, exemplars: str) -> list[int]:
        """As ``exemplar_episodes`` splits: the first line opens an episode, and so does every
        line that starts with ``episode_start`` (where one is set) and is not an action."""
        prefix = f"{self.marker} "
        starts = _line_starts(
            exemplars,
            lambda line: (
                bool(self.episode_start) and line.startswith(self.episode_start) and not line.startswith(prefix)
            ),
        )
        return starts if starts[:1] == [0] or not exemplars.strip() else [0, *starts]

    def exemplar_episodes(self, exemplars: str) -> list[ExemplarEpisode]:
        episodes: list[tuple[list[str], list[ExemplarStep]]] = []
        prefix = f"{self.marker} "
        for line in exemplars.splitlines():
            starts = not episodes or (self.episode_start and line.startswith(self.episode_start))
            if starts and not line.startswith(prefix):
                episodes.append(([line], []))
                continue
            opening, steps = episodes[-1]
            if line.startswith(prefix) or line == self.marker:
                steps.append(ExemplarStep("", line[len(prefix) :].strip(), None))
            elif steps:
                last = steps[-1]
                text = line[len(self.observation_label) :] if last.observation is None else line
                if last.observation is None and self.observation_label and not line.startswith(self.observation_label):
                    text = line
                observation = text if last.observation is None else f"{last.observation}\n{text}"
                steps[-1] = ExemplarStep(last.thought, last.action, observation)
            else:
                opening.append(line)
        return [
            ExemplarEpisode("\n".join(opening).strip("\n"), tuple(_trimmed(s) for s in steps))
            for opening, steps in episodes
        ]


def _trimmed(step: ExemplarStep) -> ExemplarStep:
    observation = None if step.observation is None else step.observation.strip("\n")
    return ExemplarStep(step.thought, step.action, observation)
