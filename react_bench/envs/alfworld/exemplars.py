"""The project's own ALFWorld exemplars: the expert's walkthroughs of generated *train* games,
played through the engine (every observation is what the game shows), with our own thoughts.

Three per task type (the paper's prompt file has three: a run takes two of them, ``prompt.pair``).
ReAct exemplars have ``think:`` steps where the paper's have them: the plan at the start, where to
look for the object, on finding it, after changing its state; Act exemplars are the same commands
without them. The texts are the paper's layout (the room and the task, then ``> command`` and its
observation per line); their words are ours.

ReAct-IM exemplars (the paper's Appendix B.2; no IM prompt was published, so these are written
from ours by its rule): the same episodes with Inner-Monologue-style thoughts, which only
decompose the goal (the plan, at the start) and name the current subgoal (``I need to find a
mug.``, ``I need to put it in/on coffeemachine.``). They never say that a subgoal is done ("Now I
have ..."), what comes next ("Next, ..."), or where an object is likely to be ("I will look in
..."): the reasoning ReAct's thoughts add and IM's lack. ``IM_FORBIDDEN`` lists those phrasings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from react_bench.envs.alfworld.env import KINDS, first_observation, observed

VERBS = {"clean": "clean it with sinkbasin", "heat": "heat it with microwave", "cool": "cool it with fridge"}


def _plan(kind: str, obj: str, target: str) -> str:
    if kind == "examine":
        return f"To solve the task, I need to find and take a {obj}, then find and use a {target}."
    if kind == "puttwo":
        return (
            f"To solve the task, I need to find and take the first {obj}, put it in/on {target}, "
            f"then find and take the second {obj}, put it in/on {target}."
        )
    if kind in VERBS:
        return f"To solve the task, I need to find and take a {obj}, then {VERBS[kind]}, then put it in/on {target}."
    return f"To solve the task, I need to find and take a {obj}, then put it in/on {target}."


def _next(kind: str, taken: str, target: str) -> str:
    if kind in VERBS:
        return f"I need to {VERBS[kind].replace('it', taken, 1)}"
    if kind == "examine":
        return f"I need to find a {target} and use it"
    return f"I need to put it in/on {target}"


def _places(commands: list[str]) -> str:
    visits = [c[len("go to ") :] for c in commands if c.startswith("go to ")]
    return ", ".join(dict.fromkeys(visits[:4])) or "the room"


# How the project's ReAct thoughts say what ReAct-IM's must not: a subgoal done, the next one,
# the likely places (the test of the IM exemplars reads them).
IM_FORBIDDEN = ("Now I", "Next,", "I will look in", "one by one", "likely")
STYLES = ("react", "act", "react_im")


def exemplar(gamefile: Path, walkthrough: list[str], thoughts: bool | str) -> str:
    """One episode of the expert's commands, as the text runner's prompt shows an episode:
    ``react`` (or True) with ReAct's thoughts, ``act`` (or False) without, ``react_im`` with IM's."""
    style = {True: "react", False: "act"}.get(thoughts, thoughts) if isinstance(thoughts, bool) else thoughts
    if style not in STYLES:
        raise ValueError(f"exemplar style {style!r}: one of {STYLES}")
    from react_bench.envs.alfworld.engine import close_env, make_env

    traj = json.loads((gamefile.parent / "traj_data.json").read_text(encoding="utf-8"))
    kind = KINDS[traj["task_type"]]
    p = traj["pddl_params"]
    obj, target = p["object_target"].lower(), (p["parent_target"] or p["toggle_target"]).lower()
    env = make_env(gamefile)
    try:
        intro, _ = env.reset()
        lines = [first_observation(str(intro))]
        commands = [c for c in walkthrough if c != "look"]
        im = style == "react_im"
        if style != "act":
            lines += [f"> think: {_plan(kind, obj, target)}", "OK."]
            if im:  # the current subgoal, and no more: not where to look
                lines += [f"> think: I need to find a {obj}.", "OK."]
            else:
                lines += [
                    f"> think: First I need to find a {obj}. I will look in {_places(commands)}, one by one.",
                    "OK.",
                ]
        for command in commands:
            obs, _, _, info = env.step(command)
            lines += [f"> {command}", observed(str(obs))]
            if style == "act":
                continue
            if command.startswith("take "):
                taken = command[len("take ") :].split(" from ")[0]
                if im:
                    lines += [f"> think: {_next(kind, taken, target)}.", "OK."]
                else:
                    lines += [f"> think: Now I have the {taken}. Next, {_next(kind, taken, target)}.", "OK."]
            elif command.split(" ")[0] in ("clean", "heat", "cool"):
                if im:
                    lines += [f"> think: I need to put it in/on {target}.", "OK."]
                else:
                    lines += [
                        f"> think: Now I {command.split(' ')[0]} the {obj}. Next, I need to put it in/on {target}.",
                        "OK.",
                    ]
        return "\n".join(lines) + "\n"
    finally:
        close_env(env)


def build(train: Path, per_type: int = 3) -> dict[str, Any]:
    """``{style: {task kind: [text, ...]}}`` for every style (``STYLES``) from the train games in ``train``."""
    from react_bench.envs.alfworld.generate import games

    chosen: dict[str, list[Path]] = {kind: [] for kind in KINDS.values()}
    for game in games(train):
        kind = KINDS.get(json.loads((game / "traj_data.json").read_text())["task_type"])
        if kind is not None and len(chosen[kind]) < per_type:
            chosen[kind].append(game)
    out: dict[str, Any] = {style: {} for style in STYLES}
    for kind, folders in chosen.items():
        for style in STYLES:
            texts = []
            for folder in folders:
                walkthrough = json.loads((folder / "game.tw-pddl").read_text())["walkthrough"]
                texts.append(exemplar(folder / "game.tw-pddl", walkthrough, style))
            out[style][kind] = texts
    return out
