"""ALFWorld as an environment: one game per episode, as the paper's notebook played it.

From the ReAct notebook (github:ysymyth/ReAct, alfworld.ipynb): the first observation is the
game's intro after its first blank line (the room and the task); a command starting ``think:``
is answered ``OK.`` (the notebook sent it to the game, which answered ``Nothing happens.``, and
showed ``OK.``; here the game is not asked: the game state is the same either way); an
observation starting ``You arrive at loc `` is cut after its first ``. `` (``You arrive at loc
12. On the countertop 1, ...`` -> ``On the countertop 1, ...``); the episode ends when the game is
won (reward 1). Every other text is sent to the game as written; what it cannot do it answers
``Nothing happens.`` (an ``is_error`` observation here).

The tool-use runner gets the game's command forms as tools (``go_to(receptacle)``,
``take(object, receptacle)``, ...: the grammar of ``alfred.twl2``); a call becomes the command text
the text runner would write (``take apple 1 from countertop 1``). The tools' descriptions show the
command forms, not the admissible commands of the moment: the text runner never saw that list
either (the paper's prompts do not show it), so both runners play with the same information.

An episode loads its game's engine (TextWorld's PDDL environment, ``engine.make_env``) at reset,
in a worker thread (0.1-0.7 s here once the game's translation is cached), and unloads it at its
end (``close``, which the solver calls after every episode).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.environment import UNPARSED, Action, EpisodeAbort, Example, Observation, run_blocking
from react_bench.models.base import ToolSpec
from react_bench.runners.formats import LineFormat

NOTHING = "Nothing happens."
# The six task types, each by the word the prompt files name it with (``react_{kind}_{i}``).
KINDS = {
    "pick_and_place_simple": "put",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "look_at_obj_in_light": "examine",
    "pick_two_obj_and_place": "puttwo",
}


def _tool(name: str, form: str, description: str, *params: str) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {
            p: {
                "type": "string",
                "description": f"The {p}, as the observations name it (e.g. "
                f"'{'apple 1' if p == 'object' else 'countertop 1'}').",
            }
            for p in params
        },
        "required": list(params),
        "additionalProperties": False,
    }
    return ToolSpec(name, f"`{form}`: {description}", schema)


# (tool name, the command form with {param} slots, what it does, its parameters)
COMMANDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("go_to", "go to {receptacle}", "Walk to a receptacle and see what is on or in it.", ("receptacle",)),
    ("open", "open {receptacle}", "Open a receptacle that is closed.", ("receptacle",)),
    ("close", "close {receptacle}", "Close an open receptacle.", ("receptacle",)),
    ("take", "take {object} from {receptacle}", "Pick up an object (hands must be empty).", ("object", "receptacle")),
    (
        "put",
        "put {object} in/on {receptacle}",
        "Put the object you hold in or on a receptacle.",
        ("object", "receptacle"),
    ),
    (
        "clean",
        "clean {object} with {receptacle}",
        "Clean the object you hold with a sinkbasin.",
        ("object", "receptacle"),
    ),
    ("heat", "heat {object} with {receptacle}", "Heat the object you hold with a microwave.", ("object", "receptacle")),
    ("cool", "cool {object} with {receptacle}", "Cool the object you hold with a fridge.", ("object", "receptacle")),
    ("use", "use {object}", "Turn on (or off) an object such as a desklamp.", ("object",)),
    ("examine", "examine {object}", "Look closely at an object or a receptacle.", ("object",)),
    ("look", "look", "Look around the room.", ()),
    ("inventory", "inventory", "Say what you are carrying.", ()),
)
ALFWORLD_ACTIONS: tuple[ToolSpec, ...] = tuple(
    _tool(name, form, text, *params) for name, form, text, params in COMMANDS
)
_FORMS = [(name, re.split(r"\{(\w+)\}", form), form) for name, form, _, _ in COMMANDS]


def _form_match(pieces: list[str], text: str) -> dict[str, str] | None:
    """``text`` read by a command form split into literals and slots (``[lit, slot, lit, ...]``):
    what ``^lit(?P<slot>.+?)lit...$`` would match (each slot one or more characters, no newline,
    the earliest separator first), found with ``str.find`` in linear time where the lazy regex
    was quadratic on a long line."""
    if text.endswith("\n"):  # ``$`` also matches before a final newline
        text = text[:-1]
    if "\n" in text or not text.startswith(pieces[0]):
        return None
    found, at = {}, len(pieces[0])
    for k in range(1, len(pieces), 2):
        slot, literal, last = pieces[k], pieces[k + 1], k + 2 >= len(pieces)
        if last:
            end = len(text) - len(literal)
            if end <= at or not text.endswith(literal):
                return None
        else:
            end = text.find(literal, at + 1) if literal else at + 1
            if end == -1:
                return None
        found[slot], at = text[at:end], end + len(literal)
    return found if at == len(text) else None


def alfworld_action(text: str, actions: Sequence[ToolSpec] = ALFWORLD_ACTIONS) -> Action:
    """A command line as the game reads it: ``think: ...``, or one of the command forms; any other
    text is still sent to the game as written (the unparsed action: the game says nothing happens)."""
    if text.startswith("think:"):
        return Action("think", {"thought": text[len("think:") :].strip()}, text)
    for name, pieces, _ in _FORMS:
        if (slots := _form_match(pieces, text)) is not None:
            return Action(name, slots, text)
    return Action(UNPARSED, {}, text)


def command_of(action: Action) -> str | None:
    """The command text of an action (its own text, or the form filled with its arguments)."""
    if action.text is not None:
        return action.text
    form = next((f for name, _, f in _FORMS if name == action.name), None)
    if form is None:
        return None
    try:
        return form.format(**{k: str(v) for k, v in action.arguments.items()})
    except KeyError:
        return None


def first_observation(intro: str) -> str:
    """The notebook's: the intro after its first blank line (the room and the task)."""
    return "\n".join(intro.split("\n\n")[1:])


def observed(text: str) -> str:
    """The notebook's ``process_ob``: ``You arrive at loc N. `` cut from an arrival."""
    if text.startswith("You arrive at loc "):
        return text[text.find(". ") + 2 :]
    return text


def alfworld_format() -> LineFormat:
    """The notebook's prompt: two examples, ``\\nHere is the task.\\n``, the first observation, then
    ``> {command}\\n{observation}\\n`` per step, the prompt ending in ``>``; stop ``\\n``; the
    completion stripped."""
    return LineFormat(
        alfworld_action, ">", "\nHere is the task.\n{observation}\n", episode_start="You are in the middle of a room."
    )


class ALFWorldEnv:
    def __init__(self) -> None:
        self.game: Game | None = None

    def actions(self) -> tuple[ToolSpec, ...]:
        return ALFWORLD_ACTIONS

    async def reset(self, example: Example) -> Observation:
        gamefile = Path(str(example.metadata.get("gamefile") or ""))
        if not gamefile.is_file():
            raise EpisodeAbort(f"no game file {gamefile} for example {example.id}")
        self.close()
        self.game = Game(gamefile)
        try:
            intro = await run_blocking(self.game.reset)
        except Exception as exc:  # PDDL or grammar the engine cannot parse: this game's fault, not the run's
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise EpisodeAbort(f"the engine cannot load {gamefile}: {type(exc).__name__}: {first}") from exc
        return Observation(first_observation(intro))

    async def step(self, action: Action) -> Observation:
        if self.game is None:
            raise EpisodeAbort("the game was not reset")
        if action.name == "think":
            return Observation("OK.")
        command = command_of(action)
        if command is None:
            return Observation(NOTHING, is_error=True)
        text, won = await run_blocking(self.game.step, command)
        if won:
            return Observation(observed(text), done=True, reward=1.0)
        return Observation(observed(text), is_error=text == NOTHING)

    def close(self) -> None:
        """The episode is over: the engine's planner library is unloaded (each engine maps its own
        copy of it, 33 MB)."""
        if self.game is not None:
            self.game.close()
            self.game = None


ENGINE = threading.Lock()
"""One engine call at a time in a process. The engine is not thread-safe: TextWorld's TatSu
parsers and Fast Downward's translator keep module-level state, and two games reset at once in
worker threads fail (``IndexError: pop from empty list``, ``FailedToken``; two of three episodes
whenever all of a run's episodes start together, as in batch rounds). The calls hold the GIL
almost throughout, so the lock costs next to nothing."""


@dataclass
class Game:
    """One game's engine for one episode; its calls hold ``ENGINE``."""

    gamefile: Path
    env: Any = None

    def reset(self) -> str:
        from react_bench.envs.alfworld.engine import make_env

        with ENGINE:
            if self.env is None:
                self.env = make_env(self.gamefile)
            obs, _ = self.env.reset()
        return str(obs)

    def step(self, command: str) -> tuple[str, bool]:
        with ENGINE:
            obs, _, done, info = self.env.step(command)
        return str(obs), bool(info.get("won"))

    def close(self) -> None:
        if self.env is not None:
            from react_bench.envs.alfworld.engine import close_env

            with ENGINE:
                close_env(self.env)
            self.env = None


@dataclass
class ALFWorldFactory:
    """One ``ALFWorldEnv`` per episode (its engine is loaded at reset and unloaded at its end; the
    translation and template caches of ``engine`` make that cheap)."""

    def __call__(self) -> ALFWorldEnv:
        return ALFWorldEnv()

    def close(self) -> None:
        pass
