"""The project's own ALFWorld exemplars: the expert's walkthroughs of generated *train* games,
played through the engine (every observation is what the game shows), with our own thoughts.

Three per task type (the paper's prompt file has three: a run takes two of them, ``prompt.pair``).
ReAct exemplars have ``think:`` steps where the paper's have them: the plan at the start, where to
look for the object, on finding it, after changing its state; Act exemplars are the same commands
without them. The texts are the paper's layout (the room and the task, then ``> command`` and its
observation per line); their words are ours.
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


def exemplar(gamefile: Path, walkthrough: list[str], thoughts: bool) -> str:
    """One episode of the expert's commands, as the text runner's prompt shows an episode."""
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
        if thoughts:
            lines += [f"> think: {_plan(kind, obj, target)}", "OK."]
            lines += [f"> think: First I need to find a {obj}. I will look in {_places(commands)}, one by one.", "OK."]
        for command in commands:
            obs, _, _, info = env.step(command)
            lines += [f"> {command}", observed(str(obs))]
            if not thoughts:
                continue
            if command.startswith("take "):
                taken = command[len("take ") :].split(" from ")[0]
                lines += [f"> think: Now I have the {taken}. Next, {_next(kind, taken, target)}.", "OK."]
            elif command.split(" ")[0] in ("clean", "heat", "cool"):
                lines += [
                    f"> think: Now I {command.split(' ')[0]} the {obj}. Next, I need to put it in/on {target}.",
                    "OK.",
                ]
        return "\n".join(lines) + "\n"
    finally:
        close_env(env)


def build(train: Path, per_type: int = 3) -> dict[str, Any]:
    """``{"react": {prefix: [text, ...]}, "act": {...}}`` from the train games in the folder ``train``."""
    from react_bench.envs.alfworld.generate import games

    chosen: dict[str, list[Path]] = {kind: [] for kind in KINDS.values()}
    for game in games(train):
        kind = KINDS.get(json.loads((game / "traj_data.json").read_text())["task_type"])
        if kind is not None and len(chosen[kind]) < per_type:
            chosen[kind].append(game)
    out: dict[str, Any] = {"react": {}, "act": {}}
    for kind, folders in chosen.items():
        for style, thoughts in (("react", True), ("act", False)):
            texts = []
            for folder in folders:
                walkthrough = json.loads((folder / "game.tw-pddl").read_text())["walkthrough"]
                texts.append(exemplar(folder / "game.tw-pddl", walkthrough, thoughts))
            out[style][kind] = texts
    return out
