"""ALFWorld on the real text engine: generated games, the paper's protocol, both runners.

A small generated set (12 eval games, 18 train games: the exemplars') is built once under the cache
root and shared by these tests. The package's expert, driven through a scripted model, wins every
generated eval game through both runners within the cap; the official folder layout is read as
``AlfredTWEnv`` reads it; the first prompt has the notebook's layout with the paper's exemplars
(by path); every command of the paper's exemplars is one of the grammar's forms, and admissible at its
point in a game rebuilt from the exemplar's own scene (``envs/alfworld/fidelity.py``).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.environment import UNPARSED, Action, Example
from react_bench.envs.alfworld.env import ALFWORLD_ACTIONS, alfworld_action, alfworld_format, command_of, observed
from react_bench.envs.alfworld.fidelity import KEYS as FIDELITY_KEYS
from react_bench.envs.alfworld.fidelity import replay
from react_bench.envs.alfworld.generate import TASK_TYPES, games, generate_game, generate_split, scenes
from react_bench.episode import build_prompts, not_the_papers
from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import DataError, TaskConfig
from react_bench.tasks.alfworld import INSTRUCTION, KINDS, AlfworldConfig, AlfworldTask, generated_split
from react_bench.types import ModelResponse, StopReason, ToolUseBlock
from tests.support import composed, records

SMALL = AlfworldConfig(games=12, train_games=18, seed=0)


@pytest.fixture(scope="module")
def eval_games() -> list[Example]:
    return AlfworldTask().examples(TaskConfig(name="alfworld"), SMALL)


def walkthrough(example: Example) -> list[str]:
    return json.loads(Path(example.metadata["gamefile"]).read_text())["walkthrough"]


def test_the_generated_games_are_balanced_held_out_and_in_the_official_layout(eval_games: list[Example]) -> None:
    from react_bench.envs.alfworld.generate import _constants

    assert len(eval_games) == 12
    assert Counter(e.metadata["task_type"] for e in eval_games) == {t: 2 for t in TASK_TYPES}
    test_scenes = set(_constants().TEST_SCENE_NUMBERS)
    assert {e.metadata["scene"] for e in eval_games} <= test_scenes  # held-out floor plans, like valid_unseen
    train = generated_split(SMALL, "train")
    assert all(
        json.loads((g / "traj_data.json").read_text())["scene"]["scene_num"] not in test_scenes for g in games(train)
    )
    for example in eval_games:
        folder = Path(example.metadata["gamefile"]).parent
        assert folder.parent.parent.name == "valid_unseen" and (folder / "initial_state.pddl").is_file()
        game = json.loads((folder / "game.tw-pddl").read_text())
        assert game["solvable"] is True and 1 <= len(game["walkthrough"]) <= 50
        assert {"pddl_domain", "grammar", "pddl_problem"} <= set(game) and "UNKNOWN GOAL" not in game["grammar"]
        assert example.question and example.question in game["grammar"]
    summary = json.loads((train.parent / "valid_unseen" / "summary.json").read_text())
    assert sum(v["games"] for v in summary.values()) == 12


def test_generation_is_deterministic_by_seed(tmp_path: Path) -> None:
    scene = scenes()[301]
    texts = []
    for run in ("a", "b"):
        generate_game(scene, 7, tmp_path / run)
        texts.append(
            ((tmp_path / run / "initial_state.pddl").read_text(), (tmp_path / run / "traj_data.json").read_text())
        )
    assert texts[0] == texts[1]
    generate_game(scene, 8, tmp_path / "c")
    assert (tmp_path / "c" / "initial_state.pddl").read_text() != texts[0][0]


@pytest.mark.slow
def test_a_split_is_the_same_whatever_the_number_of_workers(tmp_path: Path) -> None:
    built = []
    for workers in (1, 2):
        root = tmp_path / f"w{workers}"
        assert generate_split(root, "valid_unseen", 6, seed=3, progress=False, workers=workers) == 6
        built.append({g.relative_to(root).as_posix(): (g / "initial_state.pddl").read_text() for g in games(root)})
    assert built[0] == built[1]
    assert sorted(name.split("/")[1].split("-")[0] for name in built[0]) == sorted(TASK_TYPES)  # one of each type


def tool_turns(commands: list[str]) -> list[ModelResponse]:
    out = []
    for i, command in enumerate(commands):
        action = alfworld_action(command)
        assert action.name != UNPARSED, command
        out.append(
            ModelResponse((ToolUseBlock(f"toolu_{i}", action.name, dict(action.arguments)),), StopReason.TOOL_USE)
        )
    return out


def run_config(tmp_path: Path, runner: str, **task: Any) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="alfworld", **task),
        model={"provider": "scripted", "label": "expert"},
        solve=SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=50)),
        env=SMALL,
        results_dir=tmp_path,
        progress=False,
        run_id=runner,
    )


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_expert_wins_every_generated_game_through_both_runners(
    scripted: Any, eval_games: list[Example], tmp_path: Path, runner: str
) -> None:
    commands = [c for e in eval_games for c in walkthrough(e)]
    script = [f" {c}" for c in commands] if runner == "text" else tool_turns(commands)
    result = await evaluate(run_config(tmp_path, runner), model=scripted(script))
    rows = records(result.run_dir)
    assert [r["id"] for r in rows] == [e.id for e in eval_games]
    assert all((r["reason"], r["reward"], r["success"]) == ("done", 1.0, 1.0) for r in rows)
    assert all(r["steps"] == len(walkthrough(e)) <= 50 for r, e in zip(rows, eval_games, strict=True))
    assert result.metrics["success"]["mean"] == 1.0
    by_type = result.metrics["by_group"]["task_type"]
    assert {t: (m["n"], m["success"], m["ci95"]) for t, m in by_type.items()} == {
        t: (2, 1.0, [pytest.approx(0.3424, abs=1e-4), 1.0])
        for t in TASK_TYPES  # Wilson, 2 of 2
    }
    acted = result.metrics["actions"]
    assert (acted["n"], acted["invalid_rate"], acted["think_share"]) == (len(commands), 0.0, 0.0)


async def test_the_paper_protocol_and_prompt(
    scripted: Any, eval_games: list[Example], data_file: Any, tmp_path: Path
) -> None:
    paper = data_file("prompts/react_alfworld_3prompts.json")  # prompt=paper reads the same pinned file
    cfg = replace(
        RunConfig.from_mapping(composed("task=alfworld", "prompt=paper")),
        env=SMALL,
        results_dir=tmp_path,
        progress=False,
        model={"provider": "scripted"},
    )
    assert cfg.solve.loop.max_steps == 50  # the task's own protocol
    (prompt,) = build_prompts(cfg).values()
    assert prompt.source == "paper: ysymyth/ReAct@6bdb3a1:prompts/alfworld_3prompts.json#react_<type>_1+0"
    example = eval_games[0]
    kind = KINDS[example.metadata["task_type"]]
    texts = json.loads(paper.read_text())
    assert (
        prompt.for_example(example).exemplars == texts[f"react_{kind}_1"] + texts[f"react_{kind}_0"]
    )  # the notebook's
    commands = walkthrough(example)
    model = scripted([" think: I will follow the plan.", *[f" {c}" for c in commands]])
    result = await evaluate(replace(cfg, task=TaskConfig(name="alfworld", ids=(example.id,))), model=model)
    first, second = model.requests[0].prompt, model.requests[1].prompt
    intro = AlfworldTask().text_format().opening("X").split("X")[0]
    assert first.startswith(INSTRUCTION + texts[f"react_{kind}_1"] + texts[f"react_{kind}_0"] + intro)
    assert first.endswith("\n>") and f"Your task is to: {example.question}.\n>" in first
    assert second.endswith(first[len(first) - 1 :] + " think: I will follow the plan.\nOK.\n>")  # thoughts answered OK.
    assert all(r.stop == ("\n",) for r in model.requests)
    (row,) = records(result.run_dir)
    observations = [e["observation"] for e in row["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"]
    assert observations[0] == "OK." and not any(o.startswith("You arrive at loc") for o in observations)
    assert row["reward"] == 1.0
    assert result.metrics["actions"]["think_share"] == pytest.approx(1 / (len(commands) + 1))
    with pytest.raises(ConfigError, match="task=alfworld does not run mode=cot"):
        RunConfig.from_mapping(composed("task=alfworld", "mode=cot"))
    other = replace(cfg, prompt_pair=(2, 0))
    assert (
        build_prompts(other)["react"].for_example(example).exemplars
        == texts[f"react_{kind}_2"] + texts[f"react_{kind}_0"]
    )


def test_every_command_of_the_papers_exemplars_is_a_form_of_the_grammar(data_file: Any) -> None:
    texts = json.loads(data_file("prompts/react_alfworld_3prompts.json").read_text())
    forms: Counter[str] = Counter()
    for key, text in texts.items():
        for line in text.splitlines():
            if line.startswith(">"):  # (six of them without the space)
                command = line[1:].strip()
                action = alfworld_action(command)
                assert action.name != UNPARSED, (key, line)
                assert command_of(Action(action.name, action.arguments)) in (command, None) or action.name == "think"
                forms[action.name] += 1
    assert {"go_to", "take", "put", "open", "clean", "heat", "cool", "use", "think"} <= set(forms)
    assert set(forms) - {"think"} <= {spec.name for spec in ALFWORLD_ACTIONS}


# Where the paper's exemplar texts differ from what the engine answers (their own defects, in
# the docs): a list without its "and", an observation written after the next thought, an
# exemplar that opens the fridge without going there first (it starts there, not "in the middle").
PAPER_EXEMPLAR_DIFFERENCES = {
    "react_put_0": ["go to cabinet 1"],
    "act_put_0": ["go to cabinet 1"],
    "react_cool_0": ["take pan 1 from stoveburner 3"],
    "react_heat_0": ["(the room)"],
    "act_heat_0": ["(the room)"],
}


@pytest.mark.slow
def test_every_command_of_the_papers_exemplars_is_admissible_in_a_game_of_its_own_scene(
    data_file: Any, tmp_path: Path
) -> None:
    texts = json.loads(data_file("prompts/react_alfworld_3prompts.json").read_text())
    commands = 0
    for key, text in texts.items():
        report = replay(text, FIDELITY_KEYS[key.split("_")[1]], tmp_path / key)
        commands += report.commands
        assert report.inadmissible == [], key
        assert report.won and report.won_after == report.commands, key  # won by the last command, not before
        assert [command for command, _, _ in report.different] == PAPER_EXEMPLAR_DIFFERENCES.get(key, []), (
            key,
            report.different,
        )
    assert len(texts) == 36 and commands > 350


def test_a_replay_finds_an_inadmissible_command_and_a_different_answer(tmp_path: Path) -> None:
    room = "You are in the middle of a room. Looking quickly around you, you see a countertop 1, and a fridge 1."
    text = (
        f"{room}\nYour task is to: put some apple on countertop.\n> go to fridge 1\nThe fridge 1 is closed.\n"
        "> take apple 1 from fridge 1\nYou pick up the apple 1 from the fridge 1.\n> open fridge 1\n"
        "You open the fridge 1. The fridge 1 is open. In it, you see a apple 1.\n> go to countertop 1\n"
        "On the countertop 1, you see a bread 1.\n> put apple 1 in/on countertop 1\n"
        "You put the apple 1 in/on the countertop 1.\n"
    )
    report = replay(text, "pick_and_place_simple", tmp_path / "game")
    taken, put = "take apple 1 from fridge 1", "put apple 1 in/on countertop 1"
    assert report.inadmissible == [taken, put]  # the fridge was closed: nothing was taken, nothing to put
    assert [c for c, _, _ in report.different] == [taken, put]
    assert report.different[0][2] == "Nothing happens." and report.commands == 5 and not report.won


def test_the_official_layout_is_read_as_alfworld_reads_it(eval_games: list[Example], tmp_path: Path) -> None:
    split = tmp_path / "json_2.1.1" / "valid_unseen"
    for example in eval_games[:3]:
        source = Path(example.metadata["gamefile"]).parent
        shutil.copytree(source, split / example.id)
    skipped = split / "pick_and_place_with_movable_recep-Mug-Bowl-Shelf-2" / "trial_1"  # not one of the six types
    shutil.copytree(Path(eval_games[3].metadata["gamefile"]).parent, skipped)
    unsolvable = split / "pick_and_place_simple-Apple-None-Fridge-9" / "trial_2"
    shutil.copytree(Path(eval_games[4].metadata["gamefile"]).parent, unsolvable)
    game = json.loads((unsolvable / "game.tw-pddl").read_text())
    (unsolvable / "game.tw-pddl").write_text(json.dumps({**game, "solvable": False}))
    task = AlfworldTask()
    found = task.examples(TaskConfig(name="alfworld", data_dir=str(tmp_path)), SMALL)
    assert sorted(e.id for e in found) == sorted(e.id for e in eval_games[:3])
    assert task.examples(TaskConfig(name="alfworld", data_dir=str(split.parent)), SMALL)  # json_2.1.1 itself
    with pytest.raises(DataError, match="no valid_seen games"):
        task.examples(TaskConfig(name="alfworld", data_dir=str(tmp_path)), replace(SMALL, split="valid_seen"))


def test_observations_and_commands() -> None:
    assert (
        observed("You arrive at loc 12. On the countertop 1, you see a apple 1.")
        == "On the countertop 1, you see a apple 1."
    )
    assert observed("You open the fridge 1.") == "You open the fridge 1."
    assert alfworld_action("take apple 1 from countertop 1").arguments == {
        "object": "apple 1",
        "receptacle": "countertop 1",
    }
    assert alfworld_action("put apple 1 in/on fridge 1").name == "put"
    assert alfworld_action("think: plan").name == "think" and alfworld_action("dance").name == UNPARSED
    assert command_of(Action("go_to", {"receptacle": "cabinet 2"})) == "go to cabinet 2"
    fmt = alfworld_format()
    assert (
        fmt.piece(1, "go to cabinet 1", "On the cabinet 1, you see nothing.")
        == "> go to cabinet 1\nOn the cabinet 1, you see nothing.\n"
    )
    assert fmt.parse("  go to cabinet 1  ", 1, "react", "paper").action == "go to cabinet 1"


async def test_an_unknown_command_is_nothing_happens_and_the_tools_reach_the_game(eval_games: list[Example]) -> None:
    from react_bench.envs.alfworld.env import ALFWorldFactory

    env = ALFWorldFactory()()
    first = await env.reset(eval_games[0])
    assert first.text.startswith("You are in the middle of a room.") and "Your task is to:" in first.text
    assert (await env.step(alfworld_action("dance with the fridge"))).text == "Nothing happens."
    assert (await env.step(alfworld_action("dance with the fridge"))).is_error
    assert (await env.step(Action("look", {}))).text.startswith("You are in the middle of a room.")
    assert (await env.step(Action("think", {"thought": "x"}))).text == "OK."
    env.close()


async def test_episodes_reset_and_step_their_games_at_once_as_one_by_one(eval_games: list[Example]) -> None:
    """All of a run's episodes start together under batch rounds: engines reset and stepped at
    once in worker threads give what they give one by one (the engine's parsers keep global state;
    without ``env.ENGINE`` most of them fail with ``IndexError``/``TypeError``)."""
    import asyncio

    from react_bench.envs.alfworld.env import ALFWorldFactory

    async def play(example: Example) -> tuple[str, str, str]:
        env = ALFWorldFactory()()
        try:
            first = await env.reset(example)
            looked = await env.step(alfworld_action("look"))
            return first.text, looked.text, (await env.step(Action("inventory", {}))).text
        finally:
            env.close()

    games = eval_games[:4]
    one_by_one = [await play(example) for example in games]
    at_once = await asyncio.gather(*(play(example) for example in games))
    assert list(at_once) == one_by_one and len({first for first, _, _ in one_by_one}) == len(games)


CORRUPT = {
    "game.tw-pddl not JSON": ("game.tw-pddl", b"{not json"),
    "game.tw-pddl truncated": ("game.tw-pddl", None),  # the first half of the real file
    "game.tw-pddl without pddl_domain": ("game.tw-pddl", "drop:pddl_domain"),
    "traj_data.json binary": ("traj_data.json", bytes(range(256))),
    "traj_data.json a list": ("traj_data.json", b"[1, 2, 3]"),
    "traj_data.json without task_type": ("traj_data.json", "drop:task_type"),
    "traj_data.json nested past the parser's depth": ("traj_data.json", b"[" * 100_000 + b"]" * 100_000),
}


def _corrupt(folder: Path, name: str, how: bytes | str | None) -> None:
    path = folder / name
    if how is None:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif isinstance(how, str):
        value = json.loads(path.read_text())
        del value[how.split(":", 1)[1]]
        path.write_text(json.dumps(value))
    else:
        path.write_bytes(how)


def test_bad_game_files_are_refused_before_the_run_or_left_out_on_request(
    eval_games: list[Example], tmp_path: Path
) -> None:
    split = tmp_path / "json_2.1.1" / "valid_unseen"
    for example in eval_games[:2]:
        shutil.copytree(Path(example.metadata["gamefile"]).parent, split / example.id)
    bad = {}
    for k, (what, (name, how)) in enumerate(CORRUPT.items()):
        folder = split / f"zz_bad_{k}" / "trial_0"
        shutil.copytree(Path(eval_games[0].metadata["gamefile"]).parent, folder)
        _corrupt(folder, name, how)
        bad[what] = folder / name
    task, config = AlfworldTask(), TaskConfig(name="alfworld", data_dir=str(tmp_path))
    with pytest.raises(DataError) as refused:
        task.examples(config, SMALL)
    message = str(refused.value)
    assert "\n" not in message and f"{len(CORRUPT)} game(s) cannot be read" in message
    assert str(bad["game.tw-pddl not JSON"]) in message and "skip_bad_games=true" in message
    for what, path in bad.items():  # each kind of fault is found, and named by its file
        single = tmp_path / "one" / what.replace(" ", "_") / "valid_unseen"
        shutil.copytree(path.parent, single / "g" / "trial_0")
        with pytest.raises(DataError, match=str(path.name)):
            AlfworldTask().examples(TaskConfig(name="alfworld", data_dir=str(single.parent)), SMALL)
    kept = task.examples(config, replace(SMALL, skip_bad_games=True))
    assert sorted(e.id for e in kept) == sorted(e.id for e in eval_games[:2])
    assert task.coverage is not None and len(task.coverage.left_out) == len(CORRUPT)
    assert "unreadable left out" in task.coverage.summary()


def test_eval_py_refuses_bad_games_in_one_line_and_data_dir_is_one_setting(
    eval_games: list[Example], tmp_path: Path
) -> None:
    from tests.support import eval_py

    split = tmp_path / "games" / "json_2.1.1" / "valid_unseen"
    shutil.copytree(Path(eval_games[0].metadata["gamefile"]).parent, split / "g" / "trial_0")
    (split / "g" / "trial_0" / "game.tw-pddl").write_bytes(b"\x00\x01 not a game")
    base = ("task=alfworld", f"results_dir={tmp_path / 'runs'}", "model=scripted", "n=1")
    done = eval_py(*base, f"data_dir={tmp_path / 'games'}")
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "game.tw-pddl: not JSON" in lines[0] and "Traceback" not in done.stderr
    # task.data_dir= is not a second name for it: the refusal says which one is
    wrong = eval_py(*base, f"task.data_dir={tmp_path / 'games'}")
    assert wrong.returncode == 2 and "data_dir=" in wrong.stderr and "task.data_dir" in wrong.stderr
    assert "Traceback" not in wrong.stderr and len([x for x in wrong.stderr.splitlines() if x.strip()]) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "edit", [{"pddl_problem": "(define (problem broken"}, {"pddl_domain": "not pddl"}, {"grammar": "{not a grammar"}]
)
async def test_a_game_the_engine_cannot_parse_is_an_error_on_its_example(
    eval_games: list[Example], tmp_path: Path, edit: dict[str, str]
) -> None:
    """Files that read as JSON but hold PDDL or a grammar the engine cannot parse: found at reset
    (parsing every game before the run would cost the engine's load per game), so the example
    ends with reason error and names the file; the run goes on."""
    from react_bench.environment import EpisodeAbort
    from react_bench.envs.alfworld.env import ALFWorldEnv

    folder = tmp_path / "game"
    shutil.copytree(Path(eval_games[0].metadata["gamefile"]).parent, folder)
    gamefile = folder / "game.tw-pddl"
    gamefile.write_text(json.dumps({**json.loads(gamefile.read_text()), **edit}))
    env = ALFWorldEnv()
    with pytest.raises(EpisodeAbort, match="the engine cannot load .*game.tw-pddl"):
        await env.reset(Example("g", "", "", {"gamefile": str(gamefile)}))
    env.close()


# --------------------------------------------------------------------------- ReAct-IM (Table 3's ablation)


def test_the_react_im_exemplars_only_decompose_the_goal_and_name_the_subgoal(eval_games: list[Example]) -> None:
    """The same episodes as ReAct's, whose thoughts never say a subgoal is done, what comes next or
    where an object is likely to be (by the phrasing the project's ReAct exemplars use for those)."""
    from react_bench.envs.alfworld.exemplars import IM_FORBIDDEN
    from react_bench.tasks.alfworld import own_exemplars

    own = own_exemplars(SMALL)
    assert set(own["react_im"]) == set(own["react"]) and all(len(v) == 3 for v in own["react_im"].values())
    for kind, texts in own["react_im"].items():
        for im, react in zip(texts, own["react"][kind], strict=True):
            thoughts = [line for line in im.splitlines() if line.startswith("> think:")]
            assert thoughts[0].startswith("> think: To solve the task, I need to")  # the goal, decomposed
            assert all(line.startswith(("> think: To solve", "> think: I need to")) for line in thoughts)
            assert not [line for line in thoughts for phrase in IM_FORBIDDEN if phrase in line], kind
            commands = [line for line in im.splitlines() if line.startswith("> ") and "think:" not in line]
            assert commands == [line for line in react.splitlines() if line.startswith("> ") and "think:" not in line]
            react_thoughts = [line for line in react.splitlines() if line.startswith("> think:")]
            assert any(phrase in line for line in react_thoughts for phrase in IM_FORBIDDEN)  # ReAct's do


async def test_mode_react_im_runs_with_its_own_exemplars_and_table3_shows_its_rows(
    scripted: Any, eval_games: list[Example], tmp_path: Path
) -> None:
    from react_bench.studies import load_runs, table3

    cfg = replace(
        RunConfig.from_mapping(composed("task=alfworld", "mode=react_im")),
        env=SMALL,
        results_dir=tmp_path,
        progress=False,
        model={"provider": "scripted"},
    )
    example = eval_games[0]
    commands = walkthrough(example)
    model = scripted([f" {c}" for c in commands])
    result = await evaluate(replace(cfg, task=TaskConfig(name="alfworld", ids=(example.id,))), model=model)
    prompt = model.requests[0].prompt
    assert "> think: I need to find a" in prompt and "I will look in" not in prompt and "Now I have" not in prompt
    assert records(result.run_dir)[0]["reward"] == 1.0
    rows = table3(load_runs([tmp_path]))
    labels = list(rows["run"])
    assert any("react_im/text" in label for label in labels)
    assert "paper: ReAct-IM (avg)" in labels and "paper: ReAct-IM (best of 6)" in labels
    im = rows[rows["run"] == "paper: ReAct-IM (best of 6)"].iloc[0]
    assert (im["Pick"], im["All"]) == ("62", "53")
    paper = tmp_path / "some_prompts.json"  # any prompt file: ReAct-IM takes none by path
    paper.write_text(json.dumps({"react_put_0": "x"}))
    with pytest.raises(ConfigError, match="published no ReAct-IM prompts"):
        build_prompts(replace(cfg, prompt_file=str(paper)))
    own = build_prompts(replace(cfg, prompt_source="paper"))  # prompt=paper: ours, said and recorded
    assert own["react_im"].source.startswith("react_bench:alfworld/react_im")
    assert not_the_papers(replace(cfg, prompt_source="paper"), own) == [
        "prompt=paper: the paper published no react_im prompt for task=alfworld mode=react_im runner=text; "
        f"the project's own is sent ({own['react_im'].source}), as run.json records"
    ]
    with pytest.raises(ConfigError, match="use runner=text"):
        RunConfig.from_mapping(composed("task=alfworld", "mode=react_im", "runner=tool_use"))
