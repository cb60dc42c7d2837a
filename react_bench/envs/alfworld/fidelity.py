"""Format fidelity: a few-shot exemplar replayed in a game built from its own scene.

The paper's exemplars (and anyone's) were written on ALFWorld's official games, which do not reach
these machines. To check that their commands are ones this engine and grammar accept, the scene an
exemplar shows is rebuilt as a game of the package's domain: the receptacles its first observation
lists, each object where the exemplar first sees it (numbered as it is numbered there: the
package's demangler numbers the instances of a type in the sorted order of their ids, from the
highest down), instances it never sees (``creditcard 1`` when only 2-4 appear) in receptacles it
never looks into, openable receptacles closed unless the exemplar finds them open, the task's
targets from what it takes, puts and turns on, its own task sentence as the description. Then every
command is checked against the game's admissible commands at its point, sent, and the game's
answer compared with the exemplar's; the game must be won after the last command, not before.

``replay(text, task_type, folder)`` does it for one exemplar; ``tests/test_alfworld.py`` runs it
over every exemplar of ``react_alfworld_3prompts.json``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.envs.alfworld.engine import close_env, make_env, write_game_file
from react_bench.envs.alfworld.env import KINDS, first_observation, observed
from react_bench.envs.alfworld.generate import Item, Receptacle, Scene, Task, _constants, problem, traj_data

_NAMED = re.compile(r"\ban? ([a-z]+) (\d+)")
_SEEN = re.compile(
    r"^On the (?P<on>[a-z]+ \d+), you see (?P<a>.*)\.$|The (?P<in>[a-z]+ \d+) is open\. In it, you see (?P<b>.*)\.$",
    re.M,
)
_AT = re.compile(r"^(?:open|close) ([a-z]+ \d+)$|^take [a-z]+ \d+ from ([a-z]+ \d+)$")
_FACING = re.compile(r"^You are facing the (.*?)\. Next to it")
_TAKE = re.compile(r"^take ([a-z]+ \d+) from ([a-z]+ \d+)$")
_PUT = re.compile(r"^put ([a-z]+ \d+) in/on ([a-z]+ \d+)$")
_USE = re.compile(r"^use ([a-z]+ \d+)$")
KEYS = {kind: task_type for task_type, kind in KINDS.items()}  # prompt-file word -> task type


@dataclass
class Exemplar:
    """An exemplar read back: its room, task sentence and (command, observation) steps."""

    room: str
    task: str
    steps: list[tuple[str, str]]

    @classmethod
    def parse(cls, text: str) -> Exemplar:
        lines = text.strip("\n").split("\n")
        room, task = lines[0], lines[1].removeprefix("Your task is to: ")
        steps: list[tuple[str, str]] = []
        for line in lines[2:]:
            if line.startswith(">"):  # the paper's have a few ">go to ..." without the space
                steps.append((line[1:].strip(), ""))
            elif steps:
                command, answer = steps[-1]
                steps[-1] = (command, f"{answer}\n{line}" if answer else line)
        return cls(room, task, [(c, a) for c, a in steps if not c.startswith("think:")])


@dataclass
class Report:
    """What a replay found: commands not admissible where the exemplar used them (and the game did
    not answer ``Nothing happens.`` in the exemplar either), answers that differ, and the win."""

    inadmissible: list[str] = field(default_factory=list)
    different: list[tuple[str, str, str]] = field(default_factory=list)  # (command, exemplar's, game's)
    won: bool = False
    won_after: int = 0  # the number of commands after which the game was first won (0: never)
    commands: int = 0
    unknown: list[str] = field(default_factory=list)  # object names that are no type of the package


@dataclass
class Rebuilt:
    """An exemplar's scene in the generator's terms."""

    receptacles: list[Receptacle]
    items: list[Item]
    task: Task
    opened: frozenset[str]  # ids of the receptacles the exemplar finds open
    start: str  # the agent's location
    unknown: list[str]  # names the package's constants do not know (made types of their own)


def scene_of(exemplar: Exemplar, task_type: str) -> Rebuilt:
    """The receptacles, objects and task an exemplar shows (module docstring)."""
    c = _constants()
    types = {t.lower(): t for t in c.OBJECTS}
    listed = {name for name, _ in _NAMED.findall(exemplar.room)}
    counts: dict[str, int] = {}
    for name, k in _NAMED.findall(exemplar.room):
        counts[name] = max(counts.get(name, 0), int(k))
    where: dict[str, str] = {}  # an object -> the receptacle it is first seen in
    looked: set[str] = set()
    opened: set[str] = set()
    moved: set[str] = set()
    fixed: set[str] = set()
    arrived: set[str] = set()
    start = ""
    together: list[list[str]] = []  # receptacles that ``look`` shows at one place
    targets: dict[str, str] = {}
    for command, answer in exemplar.steps:
        target = command[6:] if command.startswith("go to ") else ""
        if not arrived and not start and (at := _AT.match(command)):
            start = at.group(1) or at.group(2)  # it acts on a receptacle before going anywhere: it starts there
        if target and target not in arrived and answer.startswith(f"The {target} is open."):
            opened.add(target)  # open on the first arrival: open from the start
        if target and target not in arrived and answer.startswith(f"On the {target},"):
            fixed.add(target)  # (a cabinet) not openable in that scene
        if target:
            arrived.add(target)
        if facing := _FACING.match(answer):
            together.append(re.split(r", and |, ", facing.group(1)))
        for seen in _SEEN.finditer(answer):
            holder, contents = seen.group("on") or seen.group("in"), seen.group("a") or seen.group("b")
            looked.add(holder)
            for name, k in _NAMED.findall(contents):
                counts[name] = max(counts.get(name, 0), int(k))
                if f"{name} {k}" not in moved:
                    where.setdefault(f"{name} {k}", holder)
        if take := _TAKE.match(command):
            where.setdefault(take.group(1), take.group(2))
            moved.add(take.group(1))
            targets.setdefault("object", take.group(1))
        if put := _PUT.match(command):
            targets["parent"] = put.group(2)
        if use := _USE.match(command):
            targets["toggle"] = use.group(1)
    unknown = sorted(name for name in counts if name not in types)
    types.update({name: name.capitalize() for name in unknown})
    receptacles: dict[str, Receptacle] = {}
    for name in sorted(listed):
        rtype = types[name]
        for k in range(1, counts[name] + 1):
            openable = rtype in c.OPENABLE_CLASS_SET and f"{name} {k}" not in fixed
            location = f"loc|{len(receptacles) + 1}|0|0|30"
            receptacles[f"{name} {k}"] = Receptacle(_instance_id(rtype, k, counts[name]), rtype, location, openable)
    for group in together:  # one location for receptacles seen together
        first = receptacles.get(group[0])
        for name in group[1:]:
            if first is not None and name in receptacles:
                receptacles[name].location = first.location
    unlooked = [r for name, r in receptacles.items() if name not in looked]
    items = []
    for name in sorted(set(counts) - listed):
        otype = types[name]
        for k in range(1, counts[name] + 1):
            holder = receptacles.get(where.get(f"{name} {k}", ""))
            if holder is None:  # never seen: somewhere the exemplar does not look into, that may hold it
                fits = [r for r in unlooked if otype in c.VAL_RECEPTACLE_OBJECTS.get(r.type, ())]
                holder = (fits or unlooked or list(receptacles.values()))[0]
            items.append(Item(_instance_id(otype, k, counts[name]), otype, holder))

    def kind(key: str) -> str:
        return types[targets[key].split()[0]] if key in targets else ""

    look = task_type == "look_at_obj_in_light"
    task = Task(task_type, kind("object"), "" if look else kind("parent"), kind("toggle") if look else "")
    return Rebuilt(
        list(receptacles.values()),
        items,
        task,
        frozenset(receptacles[n].id for n in opened),
        receptacles[start].location if start in receptacles else f"loc|{len(receptacles) + 1}|0|0|30",
        unknown,
    )


def _instance_id(otype: str, k: int, count: int) -> str:
    """An id the demangler numbers ``k`` among ``count`` instances (it numbers down in id order)."""
    prefix = {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"}.get(otype, otype)
    suffix = f"|{otype}" if otype in ("SinkBasin", "BathtubBasin") else ""
    return f"{prefix}|+{count - k:02d}.00|+00.00|+00.00{suffix}"


def build(exemplar: Exemplar, task_type: str, folder: Path) -> Path:
    """The exemplar's scene as a game folder (``initial_state.pddl``, ``traj_data.json``,
    ``game.tw-pddl`` with the exemplar's task sentence as the description)."""
    scene = scene_of(exemplar, task_type)
    folder.mkdir(parents=True, exist_ok=True)
    pddl = problem(scene.receptacles, scene.items, scene.start, scene.task, _constants(), opened=scene.opened)
    (folder / "initial_state.pddl").write_text(pddl, encoding="utf-8")
    data = traj_data(scene.task, Scene(0, (), {}), exemplar.task)
    (folder / "traj_data.json").write_text(json.dumps(data), encoding="utf-8")
    write_game_file(folder, 0, description=exemplar.task)
    return folder / "game.tw-pddl"


def replay(text: str, task_type: str, folder: Path) -> Report:
    """Replay one exemplar in a game of its own scene (module docstring)."""
    exemplar = Exemplar.parse(text)
    env: Any = make_env(build(exemplar, task_type, folder))
    report = Report(unknown=scene_of(exemplar, task_type).unknown)
    try:
        intro, infos = env.reset()
        if (room := first_observation(str(intro)).split("\n")[0]) != exemplar.room:
            report.different.append(("(the room)", exemplar.room, room))
        for command, answer in exemplar.steps:
            report.commands += 1
            if command not in infos["admissible_commands"] and answer != "Nothing happens.":
                report.inadmissible.append(command)
            obs, _, _, infos = env.step(command)
            if observed(str(obs)) != answer:
                report.different.append((command, answer, observed(str(obs))))
            report.won = bool(infos.get("won"))
            report.won_after = report.won_after or (report.commands if report.won else 0)
    finally:
        close_env(env)
    return report
