"""The ``alfworld`` package's text engine, without its visual half.

ALFWorld's text environment is TextWorld's PDDL engine with ALFWorld's domain and grammar
(``alfworld/data/alfred.pddl``, ``alfred.twl2``), its demangler (ids -> ``cabinet 1``) and its
handcoded expert. They live in ``alfworld/agents/environment/alfred_tw_env.py``, whose package
``__init__`` also imports the THOR environment (torch, cv2, ai2thor): the module is therefore
loaded here by its file, so the text path needs only ``textworld[pddl]`` and ``alfworld``
installed without dependencies (``.ci/install_alfworld.sh``).

The package version is 0.3.5: the grammar the ReAct paper's prompts were written against
(``put X in/on Y``, ``You arrive at loc N. On the ..., you see ...``). 0.4.x renamed actions
(``move X to Y``) and its expert still expects ``put``; ``check_version`` refuses it.

Importing ``alfworld`` sets ``$ALFWORLD_DATA`` and creates that folder; ``alfworld_module`` points
it under this project's cache root for the import and puts the variable back.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import random
from pathlib import Path
from types import ModuleType
from typing import Any

from react_bench.errors import ConfigError
from react_bench.paths import cache_dir

SUPPORTED = "0.3.5"
INSTALL_HINT = (
    "ALFWorld's text engine is not installed: run `bash .ci/install_alfworld.sh .venv/bin/pip` (or `make setup`)"
)


@functools.cache
def package_dir() -> Path:
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(INSTALL_HINT)
    return Path(next(iter(spec.submodule_search_locations)))


def alfworld_module(name: str) -> ModuleType:
    """A module of the ``alfworld`` package. Its ``__init__`` creates ``$ALFWORLD_DATA`` (default
    ``~/.cache/alfworld``) and sets the variable for the whole process: the folder is ours
    (``<cache>/alfworld``) and the variable is put back as it was, so that it still says only
    what the user set (the task reads it for the official data)."""
    before = os.environ.get("ALFWORLD_DATA")
    if before is None:
        os.environ["ALFWORLD_DATA"] = str(cache_dir() / "alfworld")
    try:
        return importlib.import_module(name)
    finally:
        if before is None:
            os.environ.pop("ALFWORLD_DATA", None)
        else:
            os.environ["ALFWORLD_DATA"] = before


@functools.cache
def tw_env() -> ModuleType:
    """``alfworld.agents.environment.alfred_tw_env``, loaded by file (module docstring)."""
    check_version()
    alfworld_module("alfworld.agents.expert")
    path = package_dir() / "agents" / "environment" / "alfred_tw_env.py"
    spec = importlib.util.spec_from_file_location("react_bench_alfred_tw_env", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_version() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("alfworld")
    except PackageNotFoundError:
        raise ConfigError(INSTALL_HINT) from None
    if found != SUPPORTED:
        raise ConfigError(
            f"alfworld {found} is installed; the paper's text format is alfworld {SUPPORTED}'s "
            f"(0.4.x changed its actions): run `bash .ci/install_alfworld.sh .venv/bin/pip`"
        )


def domain_and_grammar() -> tuple[str, str]:
    data = package_dir() / "data"
    return (data / "alfred.pddl").read_text(encoding="utf-8"), (data / "alfred.twl2").read_text(encoding="utf-8")


def write_game_file(folder: Path, seed: int, description: str | None = None) -> str:
    """``game.tw-pddl`` of a game folder (domain, grammar with the task's description, problem),
    as ``alfworld-play-tw`` writes it; returns the description. The description template is chosen
    with the global ``random`` (the package's way), seeded here, unless ``description`` is given."""
    misc = alfworld_module("alfworld.agents.utils.misc")
    traj = json.loads((folder / "traj_data.json").read_text(encoding="utf-8"))
    domain, grammar = domain_and_grammar()
    state = random.getstate()
    random.seed(seed)
    try:
        description = description or misc.get_templated_task_desc(traj)
    finally:
        random.setstate(state)
    game = {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", description),
        "pddl_problem": (folder / "initial_state.pddl").read_text(encoding="utf-8"),
    }
    previous = folder / "game.tw-pddl"
    if previous.exists():
        game = {**json.loads(previous.read_text(encoding="utf-8")), **game}
    previous.write_text(json.dumps(game), encoding="utf-8")
    return description


def make_env(gamefile: Path, expert: bool = False, max_steps: int = 10_000) -> Any:
    """A TextWorld gym environment of one game, demangled (``cabinet 1``), with the handcoded expert
    when asked (its next command in ``extra.expert_plan``)."""
    import textworld
    import textworld.gym

    module = tw_env()
    cache_translations()
    cache_template_parses()
    extras = ["gamefile"] + (["expert_plan"] if expert else [])
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=extras)
    wrappers = [module.AlfredDemangler(), module.AlfredInfos]
    if expert:
        wrappers.append(module.AlfredExpert(expert_type=module.AlfredExpertType.HANDCODED))
    env_id = textworld.gym.register_game(str(gamefile), infos, max_episode_steps=max_steps, wrappers=wrappers)
    return textworld.gym.make(env_id)


def close_env(env: Any) -> None:
    """Close a game's TextWorld environment and free what its copy of the planner library holds
    (the grounded task and its state; TextWorld never does). The library itself stays loaded:
    unloading it (``dlclose``) makes the next game's load crash. What stays is about 4 MB a game
    (measured over 30 loads here), so a 134-game run keeps about half a GB more than it started with."""
    inner = getattr(env, "batch_env", env)
    libraries = []
    for wrapped in getattr(inner, "envs", [inner]):
        while wrapped is not None and not hasattr(wrapped, "downward_lib"):
            wrapped = getattr(wrapped, "_wrapped_env", None)
        if wrapped is not None and getattr(wrapped, "downward_lib", None) is not None:
            libraries.append(wrapped)
    env.close()
    for pddl_env in libraries:
        library, pddl_env.downward_lib = pddl_env.downward_lib, None
        library.cleanup()  # the task and state it holds (dlclose would crash the next load: the library is kept)


def play_expert(folder: Path, seed: int, max_steps: int) -> tuple[list[str] | None, str]:
    """Write the game file, play the handcoded expert: (its commands if it won within
    ``max_steps``, else None; the task's description)."""
    description = write_game_file(folder, seed)
    env = make_env(folder / "game.tw-pddl", expert=True, max_steps=max_steps + 1)
    state = random.getstate()
    random.seed(seed)
    try:
        obs, info = env.reset()
        commands: list[str] = []
        for _ in range(max_steps):
            plan = info.get("extra.expert_plan") or []
            if not plan:
                return None, description
            commands.append(plan[0])
            obs, _, done, info = env.step(plan[0])
            if done:
                return (commands if info.get("won") else None), description
        return None, description
    except Exception:  # the expert times out or fails on a game it cannot solve: not kept
        return None, description
    finally:
        random.setstate(state)
        close_env(env)


TRANSLATIONS = "sas"  # <cache>/alfworld/sas/<sha256>.pickle


@functools.cache
def cache_translations() -> None:
    """Translate each PDDL problem once. TextWorld's ``PddlState`` translates the problem to SAS
    (Fast Downward's translator, twice) at every reset, which is most of a reset's cost (0.7-3 s
    here); the translation depends only on the domain and the problem, so it is kept, in memory and
    under ``<cache>/alfworld/sas``, keyed by their hash, and a reset reloads it (the C library
    state is loaded from the SAS text each time, as before)."""
    import hashlib
    import pickle

    import textworld.envs.pddl.logic as pddl_logic

    translate = pddl_logic.fast_downward.pddl2sas
    memory: dict[str, Any] = {}
    folder = cache_dir() / "alfworld" / TRANSLATIONS

    def cached(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        key = hashlib.sha256(f"{optimize}\0{domain}\0{problem}".encode()).hexdigest()
        if key in memory:
            return memory[key]
        path = folder / f"{key}.pickle"
        try:
            result = pickle.loads(path.read_bytes())
        except (OSError, pickle.PickleError, EOFError, AttributeError, ValueError):
            result = translate(domain, problem, verbose=verbose, optimize=optimize)
            try:
                folder.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(pickle.dumps(result))
                os.replace(tmp, path)
            except OSError:
                pass  # a cache that cannot be written only costs time
        if len(memory) > 64:
            memory.clear()
        memory[key] = result
        return result

    pddl_logic.fast_downward.pddl2sas = cached


@functools.cache
def cache_template_parses() -> None:
    """Parse each grammar template once. TextWorld derives every applicable action's command and
    the feedback at every step, parsing the same template strings with TatSu each time (most of
    a step's cost: 40-100 ms here); the parse depends only on the string, so it is kept (and
    copied for each use, since a derivation mutates its symbols). Likewise the rules'
    conditions (``Rule.parse_conjunctive_query``), which are only read."""
    import copy

    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    parse = textgen._parse_and_convert
    parsed: dict[tuple[Any, ...], Any] = {}

    def cached(text: Any, rule_name: str = "symbols", **kwargs: Any) -> Any:
        key = (text, rule_name)
        if key not in parsed:
            parsed[key] = parse(text, rule_name=rule_name, **kwargs)
        return copy.deepcopy(parsed[key])

    textgen._parse_and_convert = cached
    query = Rule.parse_conjunctive_query.__func__
    queries: dict[str, Any] = {}

    def cached_query(cls: type, condition: str) -> Any:
        if condition not in queries:
            queries[condition] = query(cls, condition)
        return queries[condition]

    Rule.parse_conjunctive_query = classmethod(cached_query)
