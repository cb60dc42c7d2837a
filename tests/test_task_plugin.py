"""A benchmark installed from outside the package: a distribution on the path whose entry point in
the group ``react_bench.tasks`` names its task (``react_bench/tasks/__init__.py``), run from the
command line with no file of the project's edited.

The distribution is a folder outside ``react_bench/`` with a module (its environment, its task and
the task's config node) and its ``.dist-info`` (``METADATA`` and ``entry_points.txt``), as ``pip
install`` leaves one; ``PYTHONPATH`` puts it on the path of ``scripts/eval.py`` alone, so the
suite's own process never sees it. The same folder with a method that solves its own way and
says nothing of its price is refused by the method registry, in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support import eval_py, records, run_dir_of

TOY = '''
from dataclasses import dataclass

from react_bench.environment import Example, Observation, string_action
from react_bench.prompts import PromptSpec
from react_bench.runners.formats import NumberedFormat, bracket_grammar
from react_bench.tasks.base import Pool, TaskInfo, select

ACTIONS = (
    string_action("look", "Read the board.", "what", "What to read."),
    string_action("finish", "Give the final answer.", "answer", "The answer."),
)


class BoardEnv:
    """One board with one number on it: ``look[number]`` reads it, ``finish[...]`` answers."""

    def actions(self):
        return ACTIONS

    async def reset(self, example):
        return Observation(example.question)

    async def step(self, action):
        if action.name == "finish":
            return Observation("Submitted.", final_answer=str(action.arguments.get("answer", "")))
        return Observation("The board says 5.")

    def close(self):
        pass


@dataclass
class BoardFactory:
    def __call__(self):
        return BoardEnv()

    def close(self):
        pass


class ToyTask:
    info = TaskInfo(name="toyworld", title="Toy world", metrics=("em",), primary_metric="em", column="Toy EM")
    env_group = None
    config_node = {"seed": 0}  # the task group's node (TaskConfig's keys): task.seed=... on the command line

    def __init__(self):
        self.coverage = None

    def examples(self, config, env_config=None):
        pool = [Example("toy-1", "Which number is on the board?", "5"), Example("toy-2", "And now?", "5")]
        chosen, self.coverage = select(Pool.of("toyworld", pool), config)
        return chosen

    def data_notes(self, config, env_config, examples):
        return []

    def score(self, prediction, gold, reward=None):
        return {"em": float(prediction.strip() == gold)}

    def text_format(self):
        return NumberedFormat(bracket_grammar, "Question", answer_action="finish")

    def prompt(self, style, file, key, instruction, pair=None):
        return PromptSpec("Read the board, then answer.\\n", "<no exemplars>\\n", "toyworld/own")

    def env_config(self, values, protocol):
        return None

    def environment(self, config, env_config):
        return BoardFactory()
'''

PRICELESS = """
from dataclasses import dataclass

from react_bench.methods.core import Method, ModeSpec


@dataclass(frozen=True)
class Guess(Method):
    async def solve(self, solver, example, on_event):
        raise AssertionError("never run: the registry refuses it")


METHOD = Guess("guess", ModeSpec("react"), "answers its own way, priced nowhere")
"""


def _install(site: Path, group: str, entry: str, source: str) -> dict[str, str]:
    package = entry.partition(":")[0]
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(source)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry.partition(':')[2].lower()} = {entry}\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_a_benchmark_from_an_entry_point_runs_from_the_command_line(tmp_path: Path) -> None:
    env = _install(tmp_path / "site", "react_bench.tasks", "toy_board:ToyTask", TOY)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([" I should read the board.\nAction 1: look[number]", " It is 5.\nAction 2: finish[5]"])
    )
    common = ["model=scripted", f"model.script={script}", "n=1", f"results_dir={tmp_path / 'r'}", "mode=react"]
    ran = eval_py("task=toyworld", "task.seed=3", *common, env=env)
    assert ran.returncode == 0, ran.stderr
    run_dir = run_dir_of(ran.stdout)
    (record,) = records(run_dir)
    assert (record["id"], record["prediction"], record["em"], record["correct"]) == ("toy-1", "5", 1.0, True)
    observations = [
        e["observation"] for e in record["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"
    ]
    assert observations[0] == "The board says 5."
    run = json.loads((run_dir / "run.json").read_text())
    assert run["composed"]["task"] == {"name": "toyworld", "seed": 3}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert (metrics["task"], metrics["primary_metric"], metrics["em"]["mean"]) == ("toyworld", "em", 1.0)
    # without the distribution on the path the task is unknown: one line, exit 2
    unknown = eval_py("task=toyworld", *common)
    said = unknown.stderr.strip()
    assert unknown.returncode == 2 and len(said.splitlines()) == 1, said
    assert said.startswith("error: task=toyworld: no such task")


def test_a_method_that_solves_its_own_way_must_say_its_price(tmp_path: Path) -> None:
    """The registry refuses a method with its own ``solve`` and no ``costing``, naming it, in one line:
    it would otherwise be priced and batched as the parts of a spec that does not describe it."""
    env = _install(tmp_path / "site", "react_bench.methods", "guess_pkg:METHOD", PRICELESS)
    ran = eval_py("task=hotpotqa", "mode=guess", "model=scripted", "n=1", f"results_dir={tmp_path / 'r'}", env=env)
    said = ran.stderr.strip()
    assert ran.returncode == 2 and len(said.splitlines()) == 1, said
    assert "mode=guess" in said and "solves its own way" in said and "costing" in said
