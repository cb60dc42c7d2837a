"""``task=alfworld``: household games on ALFWorld's text engine (Shridhar et al., 2021), as the ReAct
paper's notebook played them (github:ysymyth/ReAct, alfworld.ipynb).

- **Games.** The official data by path: ``data_dir=`` (the top-level setting, as for every task;
  or ``$ALFWORLD_DATA``) pointing at a download that holds ``json_2.1.1/<split>`` (``valid_unseen``:
  the paper's 134 out-of-distribution games; ``valid_seen``; ``train``); ``alfworld.split`` picks
  the split. Every game folder is checked before the run (``check_game``): a file that is not a
  JSON object, or lacks what the engine loads, is a one-line ``DataError`` naming it (exit 2), or
  with ``alfworld.skip_bad_games=true`` left out and counted. Games are read as
  ``AlfredTWEnv`` reads them: folders with ``traj_data.json`` and a ``game.tw-pddl`` marked
  ``solvable``, of the six task types, not ``movable`` or ``Sliced``. Without a data folder, the
  generated games (``envs/alfworld/generate.py``): ``alfworld.games`` eval games on held-out floor
  plans and ``alfworld.train_games`` train games, built once under
  ``<cache>/alfworld/generated-v<version>-seed<seed>-<games>-<train games>/json_2.1.1/<split>`` (the official
  layout, so the package's own tools load them too) with a ``summary.json`` (task types, plan
  lengths); the project's exemplars are walked on the train games (``exemplars.json`` beside them).
- **Examples** are games: the id is the game's folder under its split
  (``pick_and_place_simple-Apple-None-Fridge-1/trial_0_12``), the input shown in results is its task
  (``put some apple on fridge``), ``task_type`` the breakdown.
- **Protocol** (``protocol=paper``): 50 steps (the notebook's loop allowed 49 actions; the paper's
  text says 50), stop ``\\n``, greedy decoding, 100 tokens; the prompt is
  ``Interact with a household to solve a task. Here are two examples.\\n`` (the notebook's line),
  two exemplars of the game's task type, ``\\nHere is the task.\\n``, the first observation and
  ``\\n>``. Success is the game's ``won``.
- **Exemplars**: ours (three per type, walked by the expert on generated train games), or the
  paper's by path: ``prompt.file=../shared/data/prompts/react_alfworld_3prompts.json`` (keys
  ``react_<type>_<k>``, ``act_<type>_<k>`` for Act). ``prompt.pair=[1,0]`` (the notebook's) picks
  which two of the three, in order; the paper reports the best and the mean over the six orderings
  (``experiment=alfworld_orderings``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from react_bench.environment import Example
from react_bench.envs.alfworld.env import KINDS, ALFWorldFactory, alfworld_format
from react_bench.errors import ConfigError, settings_of
from react_bench.models.base import OPERATIONAL
from react_bench.paths import cache_dir
from react_bench.prompts import PaperPrompts, PromptSpec, _read
from react_bench.runners.formats import LineFormat
from react_bench.runners.parsing import first_closed
from react_bench.settings import default
from react_bench.tasks.base import Coverage, DataError, Pool, TaskConfig, TaskInfo, select

INSTRUCTION = "Interact with a household to solve a task. Here are two examples.\n"  # the notebook's
SPLITS = ("valid_unseen", "valid_seen", "train")
PAIRS = ((0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1))
# Yao et al. (2022), Table 3 (PaLM-540B; success rates in %, per task type and overall), as
# transcribed from the paper (arXiv:2210.03629v3): Pick, Clean, Heat, Cool, Look, Pick 2, All.
TABLE3_SOURCE = "Yao et al. (2022), Table 3 (PaLM-540B, 134 unseen games)"
TABLE3 = {
    "Act (best of 6)": (88, 42, 74, 67, 72, 41, 45),
    "ReAct (avg)": (65, 39, 83, 76, 55, 24, 57),
    "ReAct (best of 6)": (92, 58, 96, 86, 78, 41, 71),
    "ReAct-IM (avg)": (55, 59, 60, 55, 23, 24, 48),
    "ReAct-IM (best of 6)": (62, 68, 87, 57, 39, 33, 53),
    "BUTLER (best of 8)": (46, 39, 74, 100, 22, 24, 37),
}
TABLE3_COLUMNS = (
    "pick_and_place_simple",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)


@dataclass(frozen=True)
class AlfworldConfig:
    """The ``alfworld`` section of ``configs/eval.yaml``."""

    split: str = default("alfworld.split")  # the defaults: react_bench/settings.py
    games: int = default("alfworld.games")  # generated eval games (the official valid_unseen has 134)
    train_games: int = default("alfworld.train_games")  # generated train games (the project's exemplars)
    seed: int = default("alfworld.seed")
    # A game folder whose files cannot be read is refused before the run (exit 2, naming the
    # first bad file); true: the run goes on without them, and says how many it left out.
    skip_bad_games: bool = field(default=default("alfworld.skip_bad_games"), metadata=OPERATIONAL)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ConfigError(f"alfworld.split={self.split!r}: choose one of {', '.join(SPLITS)}")
        if self.games < 1 or self.train_games < 18:
            raise ConfigError("alfworld.games must be at least 1 and alfworld.train_games at least 18 (3 per type)")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> AlfworldConfig:
        return settings_of(cls, values, "alfworld")


def generated_root(env: AlfworldConfig) -> Path:
    """Where the generated games of ``env`` lie (``<root>/json_2.1.1/<split>``)."""
    from react_bench.envs.alfworld.generate import GENERATOR_VERSION

    return cache_dir() / "alfworld" / f"generated-v{GENERATOR_VERSION}-seed{env.seed}-{env.games}-{env.train_games}"


def generated_split(env: AlfworldConfig, split: str) -> Path:
    """The generated games of ``split`` (``valid_unseen``: ``env.games``; ``train``: ``env.train_games``),
    built on first use (into a folder of its own, renamed into place when complete) with a
    summary of their task types and plan lengths in ``<root>/summary.json``."""
    import shutil

    from react_bench.envs.alfworld.generate import games, generate_split

    n = env.games if split == "valid_unseen" else env.train_games
    folder = generated_root(env) / "json_2.1.1" / split
    if (folder / ".complete").exists():
        return folder
    building = folder.with_name(f"{folder.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    kept = generate_split(building, split, n, seed=env.seed)
    if kept < n:
        raise DataError(f"alfworld: only {kept} of {n} {split} games could be generated")
    lengths: dict[str, list[int]] = {}
    for game in games(building / split):
        task_type = json.loads((game / "traj_data.json").read_text())["task_type"]
        lengths.setdefault(task_type, []).append(len(json.loads((game / "game.tw-pddl").read_text())["walkthrough"]))
    summary = {
        t: {"games": len(v), "plan_min": min(v), "plan_mean": round(sum(v) / len(v), 1), "plan_max": max(v)}
        for t, v in sorted(lengths.items())
    }
    (building / split / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (building / split / ".complete").write_text("", encoding="utf-8")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        (building / split).rename(folder)
    except OSError:  # another process finished first: its games are the same
        pass
    shutil.rmtree(building, ignore_errors=True)
    return folder


def own_exemplars(env: AlfworldConfig) -> dict[str, Any]:
    """The project's exemplars, from the generated train games (built once, kept beside them)."""
    from react_bench.envs.alfworld import exemplars

    train = generated_split(env, "train")
    path = train / "exemplars.json"
    if path.exists() and set(json.loads(path.read_text(encoding="utf-8"))) < set(exemplars.STYLES):
        path.unlink()  # written before a style was added (ReAct-IM): built again, whole
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(exemplars.build(train)), encoding="utf-8")
        os.replace(tmp, path)
    return json.loads(path.read_text(encoding="utf-8"))


_TASK_OPENING = re.compile(re.escape("Your task is to: "))


def _description(game: Mapping[str, Any]) -> str:
    """The task line of a game's grammar (``Your task is to: (.*?)\\."``, read in linear time: a
    game file is not trusted)."""
    return first_closed(str(game.get("grammar", "")), _TASK_OPENING, '."') or ""


_GAME_TEXTS = ("pddl_domain", "grammar", "pddl_problem")  # what the engine loads from game.tw-pddl


def _json_object(path: Path) -> dict[str, Any] | str:
    """The file's JSON object, or why it is not one (a reason that names the file)."""
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        return f"{path}: not UTF-8 text (a binary file?)"
    except ValueError as exc:
        return f"{path}: not JSON ({type(exc).__name__}: {str(exc)[:120]})"
    except RecursionError:  # arrays or objects nested past the parser's depth
        return f"{path}: JSON nested too deep to read"
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc})"
    return value if isinstance(value, dict) else f"{path}: a JSON {type(value).__name__}, not an object"


def check_game(game: Path) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """A game folder's ``traj_data.json`` and ``game.tw-pddl`` as objects, or why the folder
    cannot be played (naming the file): each must be a JSON object, the trajectory with a
    ``task_type``, the game with the PDDL domain, grammar and problem the engine loads."""
    traj = _json_object(game / "traj_data.json")
    if isinstance(traj, str):
        return traj
    if not isinstance(traj.get("task_type"), str):
        return f"{game / 'traj_data.json'}: no task_type"
    played = _json_object(game / "game.tw-pddl")
    if isinstance(played, str):
        return played
    missing = [key for key in _GAME_TEXTS if not isinstance(played.get(key), str) or not played[key].strip()]
    if missing:
        return f"{game / 'game.tw-pddl'}: no {', '.join(missing)}"
    return traj, played


class AlfworldTask:
    info: ClassVar[TaskInfo] = TaskInfo(
        name="alfworld",
        title="ALFWorld",
        metrics=("success",),
        primary_metric="success",
        column="ALFWorld success",
        paper={
            "PaLM-540B best of 6": {"react": 71.0, "act": 45.0, "react_im": 53.0},
            "PaLM-540B mean of 6": {"react": 57.0, "react_im": 48.0},
        },
        paper_table=TABLE3_SOURCE,
        answers=False,
        groups=("task_type",),
        shown_groups=("task_type",),
        # Reflexion's own ALFWorld protocol (Shinn et al., 2023): 12 trials, the heuristic halt
        protocol={"max_steps": 50, "reflexion": {"trials": 12, "halt": True}},
        # alfworld.ipynb: its opening line (the task's own words are the notebook's), then the
        # game type's react_<type>_1 + react_<type>_0 (prompt.pair picks others)
        paper_prompts=PaperPrompts("react/alfworld_3prompts.json", {"react": None, "act": None}, instruction=None),
    )
    env_group: ClassVar[str | None] = "alfworld"

    def __init__(self) -> None:
        self.coverage: Coverage | None = None
        self.games = AlfworldConfig()  # the settings of the last examples() (the prompts' exemplars follow them)

    def env_config(self, values: Mapping[str, Any], protocol: str) -> AlfworldConfig:
        return AlfworldConfig.from_mapping(values)

    def split_folder(self, config: TaskConfig, env: AlfworldConfig) -> Path:
        given = config.data_dir or os.environ.get("ALFWORLD_DATA")
        if given:
            root = Path(given).expanduser()
            for folder in (root / "json_2.1.1" / env.split, root / env.split, root):
                if folder.is_dir() and folder.name == env.split:
                    return folder
            raise DataError(
                f"alfworld: no {env.split} games under {root} (expected {root}/json_2.1.1/{env.split}); "
                "unset data_dir and $ALFWORLD_DATA for the generated games"
            )
        if env.split == "valid_seen":
            raise ConfigError(
                "alfworld.split=valid_seen needs the official data (data_dir=); the generated "
                "games have valid_unseen and train"
            )
        return generated_split(env, env.split)

    def examples(self, config: TaskConfig, env_config: AlfworldConfig | None = None) -> list[Example]:
        env = self.games = env_config if env_config is not None else AlfworldConfig()
        if config.split in ("paper500", "lats100"):
            raise ConfigError(f"task=alfworld has no {config.split} split: alfworld.split chooses the games")
        folder = self.split_folder(config, env)
        examples, bad = [], []
        for traj_file in sorted(folder.rglob("traj_data.json")):
            game = traj_file.parent
            gamefile = game / "game.tw-pddl"
            if "movable" in str(game) or "Sliced" in str(game) or not gamefile.exists():
                continue
            checked = check_game(game)
            if isinstance(checked, str):
                bad.append(checked)
                continue
            traj, played = checked
            if traj["task_type"] not in KINDS or not played.get("solvable"):
                continue
            examples.append(
                Example(
                    str(game.relative_to(folder)),
                    _description(played),
                    "",
                    {
                        "task_type": traj["task_type"],
                        "gamefile": str(gamefile.resolve()),
                        "scene": (traj.get("scene") or {}).get("scene_num"),
                    },
                )
            )
        if bad and not env.skip_bad_games:
            raise DataError(
                f"alfworld: {len(bad)} game(s) cannot be read; the first: {bad[0]} "
                "(alfworld.skip_bad_games=true runs without them)"
            )
        if not examples:
            raise DataError(f"alfworld: no playable games under {folder}")
        chosen, coverage = select(Pool.of(str(folder), examples), replace(config, split="all"))
        self.coverage = replace(coverage, left_out=tuple(bad)) if bad else coverage
        return chosen

    def data_notes(self, config: TaskConfig, env_config: Any, examples: list[Example]) -> list[str]:
        return []  # the games (the shop) serve every example they list

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return {"success": float(reward == 1.0)}

    def text_format(self) -> LineFormat:
        return alfworld_format()

    def prompt(
        self,
        style: str,
        file: str | None,
        key: str | None,
        instruction: str | None,
        pair: tuple[int, int] | None = None,
    ) -> PromptSpec:
        first, second = pair if pair is not None else (1, 0)
        prefix = key or {"act": "act", "tool_use_act": "act", "react_im": "react_im"}.get(style, "react")
        if file is not None and prefix == "react_im" and key is None:
            raise ConfigError(
                "mode=react_im: the paper published no ReAct-IM prompts; run it with the project's own "
                "exemplars (no prompt.file), or name the prompts' own key with prompt.key"
            )
        if file is not None:
            texts = _read(Path(file).expanduser().resolve())
            source = f"{file}#{prefix}_<type>_{first}+{second}"
        else:
            own = own_exemplars(self.games)
            texts = {
                f"{prefix}_{kind}_{i}": text for kind, items in own[prefix].items() for i, text in enumerate(items)
            }
            source = f"react_bench:alfworld/{prefix}_<type>_{first}+{second}"
        variants = []
        for task_type, kind in KINDS.items():
            keys = (f"{prefix}_{kind}_{first}", f"{prefix}_{kind}_{second}")
            missing = [k for k in keys if k not in texts]
            if missing:
                raise ConfigError(f"prompt: {source} has no exemplars {missing}")
            variants.append((task_type, texts[keys[0]] + texts[keys[1]]))
        return PromptSpec(INSTRUCTION if instruction is None else instruction, "", source, tuple(variants), "task_type")

    def environment(self, config: TaskConfig, env_config: AlfworldConfig) -> ALFWorldFactory:
        from react_bench.envs.alfworld.engine import tw_env

        tw_env()  # a clear error now if the engine is missing
        return ALFWorldFactory()


TASKS = (AlfworldTask,)  # the registry's (``react_bench.tasks.TASKS``)
