"""Generated ALFWorld games, from what the ``alfworld`` package itself ships: the offline default.

ALFWorld's official games (json_2.1.1) are a download that does not reach these machines. This
module writes games in the same layout, from the package's per-floor-plan layouts
(``alfworld/gen/layouts/FloorPlan*-objects.json``: the object and receptacle types of a scene,
``-openable.json``: its receptacles with the points they are used from, ``-layout.npy``: its
reachable floor points), its object/receptacle constants (``alfworld/gen/constants.py``: which
receptacles hold which objects, which objects can be cleaned, heated, cooled, toggled) and its
goal library (``alfworld/gen/goal_library.py``: each task type's PDDL goal and descriptions).

A game is a folder ``<split>/<task_type>-<Object>-None-<Receptacle>-<scene>/trial_<seed>_<k>/``
holding ``initial_state.pddl`` (a PDDL problem of the package's domain, names mangled as the
package's own generator mangles them: ``|`` ``+`` ``-`` ``.``), ``traj_data.json`` (the task type
and its targets, the scene) and ``game.tw-pddl`` (domain, grammar with the task's description,
problem, ``solvable`` and the expert's ``walkthrough``): the files ``AlfredTWEnv`` and
``alfworld-play-tw`` read. Only games that the package's handcoded expert solves within the
50-step cap are kept. The eval split (``valid_unseen``) uses the package's test floor plans
(kitchens 1-6, living rooms 201-206, bedrooms 301-306, bathrooms 401-406), never seen in
``train``; all six task types (pick and place, look in light, clean, heat, cool, pick two), about
equally many each: each round of attempts aims only at the types still short of their share.
Deterministic by seed, whatever the number of worker processes (the goal descriptions use the
global ``random``, seeded per game; rounds are a fixed 8 attempts).

What a generated scene simplifies: objects lie in receptacles that may hold them; openable
receptacles start closed; non-openable receptacles (countertops, tables, shelves, ...) get 1-3
instances at reachable points of the floor plan; a desk lamp stands on a side table, desk or
dresser; movable receptacles (bowls, mugs, pans) are plain objects (nothing is put inside them).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from react_bench.envs.alfworld.engine import alfworld_module, package_dir, play_expert
from react_bench.envs.alfworld.env import KINDS

GENERATOR_VERSION = 2
TASK_TYPES = tuple(KINDS)
MAX_STEPS = 50
BATCH = 8  # attempts per round, whatever the workers: the games depend on the seed alone
# task type -> the receptacle type its state change needs
APPLIANCE = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
ABILITY = {
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}
LAMP_HOLDERS = ("SideTable", "Desk", "Dresser")
DOMAIN_OTYPES = {"ButterKnife", "Knife"}  # type constants alfred.pddl names
DOMAIN_RTYPES = {"Fridge", "Microwave", "SinkBasin", "Sink"}
SEVERAL = {"CounterTop": 3, "Shelf": 3, "SideTable": 2, "StoveBurner": 4, "ArmChair": 2, "DiningTable": 1}


def _constants() -> Any:
    return alfworld_module("alfworld.gen.constants")


def mangle(name: str) -> str:
    """The package generator's mangling of ids for PDDL (``fix_pddl_str_chars``)."""
    for old, new in (("-", "_minus_"), ("#", "-"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        name = name.replace(old, new)
    return name


def room_type(number: int) -> str:
    return {0: "Kitchen", 2: "LivingRoom", 3: "Bedroom", 4: "Bathroom"}[number // 100]


@dataclass(frozen=True)
class Scene:
    number: int
    types: tuple[str, ...]
    openable: dict[str, tuple[float, float, int, int]] = field(hash=False)
    points: tuple[tuple[float, float], ...] = ()


def scenes() -> dict[int, Scene]:
    folder = package_dir() / "gen" / "layouts"
    found = {}
    for objects in sorted(folder.glob("FloorPlan*-objects.json")):
        number = int(re.findall(r"\d+", objects.name)[0])
        openable_file = folder / f"FloorPlan{number}-openable.json"
        layout_file = folder / f"FloorPlan{number}-layout.npy"
        if not (openable_file.exists() and layout_file.exists()):
            continue
        openable = {k: tuple(v) for k, v in json.loads(openable_file.read_text()).items()}
        points = tuple((float(x), float(z)) for x, z in np.load(layout_file).tolist())
        found[number] = Scene(number, tuple(json.loads(objects.read_text())), openable, points)
    return found


@dataclass
class Receptacle:
    id: str  # e.g. "Cabinet|+00.02|+02.01|+01.31", "Sink|+01.00|+00.90|-00.50|SinkBasin"
    type: str
    location: str  # "loc|x|z|rotation|horizon"
    openable: bool


@dataclass
class Item:
    id: str
    type: str
    receptacle: Receptacle


def _coords(rng: random.Random) -> str:
    return "|".join(f"{rng.uniform(-3, 3):+06.2f}" for _ in range(3))


def _location(rng: random.Random, point: tuple[float, float], taken: set[str]) -> str:
    while True:
        x, z = point
        loc = f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{rng.choice((0, 90, 180, 270))}|{rng.choice((30, 60, 0))}"
        if loc not in taken:
            taken.add(loc)
            return loc
        point = (x + 0.25, z)


def _receptacles(scene: Scene, rng: random.Random, c: Any) -> list[Receptacle]:
    taken: set[str] = set()
    out = []
    for rid, (x, z, rot, horizon) in sorted(scene.openable.items()):
        rtype = rid.split("|")[0]
        if rtype in c.RECEPTACLES and rtype not in c.MOVABLE_RECEPTACLES_SET:
            loc = f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{int(rot)}|{int(horizon)}"
            loc = loc if loc not in taken else _location(rng, (x, z), taken)
            taken.add(loc)
            out.append(Receptacle(rid, rtype, loc, rtype in c.OPENABLE_CLASS_SET))
    placed_types = {r.type for r in out}
    for rtype in sorted(set(scene.types)):
        if rtype not in c.RECEPTACLES or rtype in c.MOVABLE_RECEPTACLES_SET or rtype in placed_types:
            continue
        if rtype in c.OPENABLE_CLASS_SET or rtype == "BathtubBasin" and "Bathtub" not in scene.types:
            continue  # an openable type without positions in the layout: left out
        for _ in range(rng.randint(1, SEVERAL.get(rtype, 1))):
            suffix = {"SinkBasin": "|SinkBasin", "BathtubBasin": "|BathtubBasin"}.get(rtype, "")
            prefix = {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"}.get(rtype, rtype)
            loc = _location(rng, rng.choice(scene.points), taken)
            out.append(Receptacle(f"{prefix}|{_coords(rng)}{suffix}", rtype, loc, False))
    return out


def _items(scene: Scene, receptacles: list[Receptacle], rng: random.Random, c: Any) -> list[Item]:
    items = []
    for otype in sorted(set(scene.types)):
        if otype in c.RECEPTACLES and otype not in c.MOVABLE_RECEPTACLES_SET:
            continue
        if otype in ("DeskLamp", "FloorLamp"):
            holders = [r for r in receptacles if r.type in LAMP_HOLDERS]
            if otype == "DeskLamp" and holders:
                items.append(Item(f"DeskLamp|{_coords(rng)}", "DeskLamp", rng.choice(holders)))
            continue
        holders = [r for r in receptacles if otype in c.VAL_RECEPTACLE_OBJECTS.get(r.type, ())]
        for _ in range(rng.randint(1, 3) if holders else 0):
            items.append(Item(f"{otype}|{_coords(rng)}", otype, rng.choice(holders)))
    return items


@dataclass(frozen=True)
class Task:
    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""


def _tasks(receptacles: list[Receptacle], items: list[Item], c: Any) -> list[Task]:
    """Every (task type, object, receptacle or lamp) the scene allows."""
    rtypes = {r.type for r in receptacles}
    counts: dict[str, int] = {}
    for item in items:
        counts[item.type] = counts.get(item.type, 0) + 1
    movable = [t for t in sorted(counts) if t != "DeskLamp"]
    out = []
    for task_type in TASK_TYPES:
        for otype in movable:
            if task_type == "look_at_obj_in_light":
                if "DeskLamp" in counts:
                    out.append(Task(task_type, otype, toggle_target="DeskLamp"))
                continue
            if task_type in APPLIANCE and (
                APPLIANCE[task_type] not in rtypes or otype not in c.VAL_ACTION_OBJECTS[ABILITY[task_type]]
            ):
                continue
            if task_type == "pick_two_obj_and_place" and counts[otype] < 2:
                continue
            for rtype in sorted(rtypes):
                if otype in c.VAL_RECEPTACLE_OBJECTS.get(rtype, ()) and rtype not in APPLIANCE.values():
                    out.append(Task(task_type, otype, parent_target=rtype))
    return out


def problem(
    receptacles: list[Receptacle],
    items: list[Item],
    agent_loc: str,
    task: Task,
    c: Any,
    opened: frozenset[str] = frozenset(),
) -> str:
    """The PDDL problem of a game, in the package domain's terms (``#`` marks a type until mangling);
    openable receptacles start closed, but those in ``opened``."""
    glib = alfworld_module("alfworld.gen.goal_library")
    # the types of what is in the scene, and those the domain names (its clean/heat/cool/slice rules)
    otypes = sorted({i.type for i in items} | {task.object_target} | DOMAIN_OTYPES)
    rtypes = sorted({r.type for r in receptacles} | ({task.parent_target} - {""}) | DOMAIN_RTYPES - set(otypes))
    locations = sorted({r.location for r in receptacles} | {agent_loc})
    objects = ["agent1 # agent"] + [f"{t}Type # otype" for t in otypes] + [f"{t}Type # rtype" for t in rtypes]
    objects += [f"{i.id} # object" for i in items] + [f"{r.id} # receptacle" for r in receptacles]
    objects += [f"{loc} # location" for loc in locations]
    init = [f"(receptacleType {r.id} {r.type}Type)" for r in receptacles]
    init += [f"(openable {r.id})" for r in receptacles if r.openable]
    init += [f"(opened {r.id})" for r in receptacles if r.id in opened]
    init += [f"(objectType {i.id} {i.type}Type)" for i in items]
    actions = c.VAL_ACTION_OBJECTS
    for i in items:
        if i.type not in ("DeskLamp", "FloorLamp"):
            init.append(f"(pickupable {i.id})")
        for ability, predicate in (
            ("Cleanable", "cleanable"),
            ("Heatable", "heatable"),
            ("Coolable", "coolable"),
            ("Toggleable", "toggleable"),
            ("Sliceable", "sliceable"),
        ):
            if i.type in actions[ability]:
                init.append(f"({predicate} {i.id})")
        init.append(f"(inReceptacle {i.id} {i.receptacle.id})")
        init.append(f"(objectAtLocation {i.id} {i.receptacle.location})")
    present = {i.type for i in items}
    init += [
        f"(canContain {rt}Type {ot}Type)"
        for rt in sorted({r.type for r in receptacles})
        for ot in sorted(present)
        if ot in c.VAL_RECEPTACLE_OBJECTS.get(rt, ())
    ]
    init += [f"(receptacleAtLocation {r.id} {r.location})" for r in receptacles]
    init.append(f"(atLocation agent1 {agent_loc})")
    goal = glib.gdict[task.task_type]["pddl"].format(
        obj=task.object_target, recep=task.parent_target, toggle=task.toggle_target, mrecep=""
    )
    text = (
        "(define (problem plan_generated)\n    (:domain alfred)\n    (:objects\n        "
        + "\n        ".join(objects)
        + "\n        )\n    (:init\n        "
        + "\n        ".join(init)
        + "\n        )\n"
        + goal
    )
    return mangle(text)


def traj_data(task: Task, scene: Scene, description: str) -> dict[str, Any]:
    return {
        "task_type": task.task_type,
        "pddl_params": {
            "object_target": task.object_target,
            "parent_target": task.parent_target,
            "toggle_target": task.toggle_target,
            "mrecep_target": "",
            "object_sliced": False,
        },
        "scene": {"floor_plan": f"FloorPlan{scene.number}", "scene_num": scene.number},
        "turk_annotations": {"anns": [{"task_desc": description}]},
        "generated_by": f"react_bench.envs.alfworld.generate v{GENERATOR_VERSION}",
    }


def generate_game(scene: Scene, seed: int, folder: Path, wanted: tuple[str, ...] = TASK_TYPES) -> bool:
    """One game of ``scene`` into ``folder`` (``seed`` picks everything), of one of the ``wanted``
    task types; False if none was kept."""
    c = _constants()
    rng = random.Random(f"alfworld-{GENERATOR_VERSION}-{scene.number}-{seed}")
    receptacles = _receptacles(scene, rng, c)
    items = _items(scene, receptacles, rng, c)
    placed = {(i.type, i.receptacle.type) for i in items}
    tasks = [
        t for t in _tasks(receptacles, items, c) if (t.object_target, t.parent_target) not in placed
    ]  # not done yet
    if not tasks or not receptacles:
        return False
    by_type: dict[str, list[Task]] = {}
    for task in tasks:
        if task.task_type in wanted:
            by_type.setdefault(task.task_type, []).append(task)
    if not by_type:
        return False
    task_type = rng.choice(sorted(by_type))
    task = rng.choice(by_type[task_type])
    taken = {r.location for r in receptacles}
    agent_loc = _location(rng, rng.choice(scene.points), taken)
    pddl = problem(receptacles, items, agent_loc, task, c)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial_state.pddl").write_text(pddl, encoding="utf-8")
    (folder / "traj_data.json").write_text(json.dumps(traj_data(task, scene, ""), indent=1), encoding="utf-8")
    walkthrough, description = play_expert(folder, seed, MAX_STEPS)
    data = json.loads((folder / "traj_data.json").read_text())
    data["turk_annotations"]["anns"][0]["task_desc"] = description
    (folder / "traj_data.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    game = json.loads((folder / "game.tw-pddl").read_text())
    game.update(solvable=walkthrough is not None, walkthrough=walkthrough or [])
    (folder / "game.tw-pddl").write_text(json.dumps(game), encoding="utf-8")
    return walkthrough is not None


def split_scenes(split: str) -> list[Scene]:
    test = set(_constants().TEST_SCENE_NUMBERS)
    found = scenes()
    return [s for n, s in sorted(found.items()) if (n in test) == (split == "valid_unseen")]


def games(root: Path) -> Iterator[Path]:
    """Game folders under ``root`` (those with a ``traj_data.json`` and a ``game.tw-pddl``)."""
    for traj in sorted(root.rglob("traj_data.json")):
        if (traj.parent / "game.tw-pddl").exists():
            yield traj.parent


def _attempt(job: tuple[int, int, str, tuple[str, ...]]) -> tuple[bool, str]:
    """One generation attempt (a worker process's job): (kept, the folder it wrote)."""
    number, seed, folder, wanted = job
    ok = generate_game(scenes()[number], seed, Path(folder), wanted)
    return ok, folder


def generate_split(root: Path, split: str, n: int, seed: int = 0, progress: bool = True, workers: int = 0) -> int:
    """``n`` kept games of ``split`` under ``root/<split>``, each task type ``n / 6`` times (rounded
    up), generated by ``workers`` processes (0: one per CPU); returns how many were kept."""
    import os
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    from tqdm import tqdm

    target = root / split
    staging = target / ".staging"
    quota = -(-n // len(TASK_TYPES))
    per_type = {t: 0 for t in TASK_TYPES}
    candidates = split_scenes(split)
    workers = workers or os.cpu_count() or 1
    kept, attempt = 0, 0
    bar = tqdm(total=n, desc=f"generating ALFWorld {split} games", disable=not progress, unit="game")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        while kept < n and attempt < 40 * n:
            wanted = tuple(t for t in TASK_TYPES if per_type[t] < quota)  # each attempt aims at a type still short
            jobs = [
                (
                    candidates[(attempt + i) % len(candidates)].number,
                    seed * 100_000 + attempt + i,
                    str(staging / f"{attempt + i}"),
                    wanted,
                )
                for i in range(BATCH)
            ]
            attempt += len(jobs)
            for ok, folder in pool.map(_attempt, jobs):
                game = Path(folder)
                if ok and kept < n:
                    data = json.loads((game / "traj_data.json").read_text())
                    task_type, p = data["task_type"], data["pddl_params"]
                    if per_type[task_type] < quota:  # keep the split balanced
                        scene = data["scene"]["scene_num"]
                        target_of = p["parent_target"] or p["toggle_target"]
                        final = (
                            target
                            / f"{task_type}-{p['object_target']}-None-{target_of}-{scene}"
                            / f"trial_{seed}_{game.name}"
                        )
                        final.parent.mkdir(parents=True, exist_ok=True)
                        game.rename(final)
                        per_type[task_type] += 1
                        kept += 1
                        bar.update(1)
                        continue
                shutil.rmtree(game, ignore_errors=True)
    bar.close()
    shutil.rmtree(staging, ignore_errors=True)
    return kept
