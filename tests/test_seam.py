"""The environment seam: two toy benchmarks defined here, in the tests, run end to end.

``kvworld`` has answers (follow a chain of keys; the numbered ReAct format; every mode applies),
``doorworld`` has none (open a locked door; ``>`` lines, ``think:`` actions, success is the
environment's reward; only the acting modes apply). Both run through ``evaluate`` with both
runners and every applicable mode, with nothing in the loop, the runners or the modes knowing
them: they are registered as tasks here and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from react_bench.environment import UNPARSED, Action, Example, Observation, string_action
from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import MODE_SPECS, SolveSettings
from react_bench.models.base import ToolSpec
from react_bench.prompts import PromptSpec
from react_bench.runconfig import RunConfig
from react_bench.runners.formats import LineFormat, NumberedFormat, bracket_grammar
from react_bench.runners.tool_use import exemplar_conversation
from react_bench.tasks import TASKS
from react_bench.tasks.base import Coverage, Pool, TaskConfig, TaskInfo, select
from react_bench.types import ModelResponse, StopReason, TextBlock, ToolResultBlock, ToolUseBlock

# --------------------------------------------------------------------------- kvworld: answers

CHAIN = {"alpha": "beta", "beta": "gamma", "gamma": "the end is 42"}
KV_ACTIONS = (
    string_action("get", "Read the value stored under a key.", "key", "The key."),
    string_action("submit", "Give the final answer.", "answer", "The answer."),
)


class KVEnv:
    def __init__(self) -> None:
        self.reads: list[str] = []

    def actions(self) -> tuple[ToolSpec, ...]:
        return KV_ACTIONS

    async def reset(self, example: Example) -> Observation:
        return Observation(example.question)

    def close(self) -> None:
        pass

    async def step(self, action: Action) -> Observation:
        if action.name == "get":
            key = str(action.arguments.get("key", ""))
            self.reads.append(key)
            return Observation(CHAIN.get(key, f"no key {key!r}"), is_error=key not in CHAIN)
        if action.name == "submit":
            return Observation("Submitted.", final_answer=str(action.arguments.get("answer", "")))
        if action.name == "think":
            return Observation("Noted.")
        return Observation(f"Unknown action: {action.text or action.name}", is_error=True)


@dataclass
class Factory:
    make: Any
    closed: int = 0

    def __call__(self) -> Any:
        return self.make()

    def close(self) -> None:
        self.closed += 1


def _prompt(exemplars: str, instruction: str = "<instruction>\n") -> PromptSpec:
    return PromptSpec(instruction, exemplars, "test/toy")


class KVTask:
    info = TaskInfo(
        name="kvworld",
        title="KV world",
        metrics=("em",),
        primary_metric="em",
        column="KV EM",
        paper={"made up": {"react": 50.0}},
        groups=("hops",),
    )
    env_group = None

    def __init__(self) -> None:
        self.coverage: Coverage | None = None
        self.factory = Factory(KVEnv)

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        example = Example(
            "kv-1", "Start at key alpha and follow the values: which number is at the end?", "42", {"hops": 3}
        )
        chosen, self.coverage = select(Pool.of("kvworld", [example]), config)
        return chosen

    def data_notes(self, config: TaskConfig, env_config: Any, examples: list[Example]) -> list[str]:
        return []

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return {"em": float(prediction.strip() == gold)}

    def text_format(self) -> NumberedFormat:
        return NumberedFormat(bracket_grammar, "Question", answer_action="submit", answer_observation="Submitted.")

    def prompt(
        self, style: str, file: str | None, key: str | None, instruction: str | None, pair: Any = None
    ) -> PromptSpec:
        return _prompt(f"<{style} exemplars>\n")

    def env_config(self, values: Mapping[str, Any], protocol: str) -> None:
        return None

    def environment(self, config: TaskConfig, env_config: Any) -> Factory:
        return self.factory


# ------------------------------------------------------------------------- doorworld: rewards

DOOR_ACTIONS = (
    string_action("take", "Pick something up.", "item", "What to take."),
    string_action("open", "Open something.", "target", "What to open."),
)


def door_grammar(text: str, actions: Sequence[ToolSpec]) -> Action:
    """``take key`` / ``open door`` / ``think: ...``: verb then object, as ALFWorld writes commands."""
    text = text.strip()
    if text.startswith("think:"):
        return Action("think", {"thought": text[len("think:") :].strip()}, text)
    verb, _, rest = text.partition(" ")
    params = {spec.name: next(iter(spec.input_schema["properties"])) for spec in actions}
    if verb in params and rest:
        return Action(verb, {params[verb]: rest}, text)
    return Action(UNPARSED, {}, text)


class DoorEnv:
    def __init__(self) -> None:
        self.has_key = False

    def actions(self) -> tuple[ToolSpec, ...]:
        return DOOR_ACTIONS

    async def reset(self, example: Example) -> Observation:
        return Observation(
            f"You stand before a locked door. A key lies on the floor.\nYour task is to: {example.question}"
        )

    def close(self) -> None:
        pass

    async def step(self, action: Action) -> Observation:
        what = str(next(iter(action.arguments.values()), ""))
        if action.name == "think":
            return Observation("OK.")
        if action.name == "take" and what == "key":
            self.has_key = True
            return Observation("You pick up the key.")
        if action.name == "open" and what == "door":
            if self.has_key:
                return Observation("The door opens.", done=True, reward=1.0)
            return Observation("The door is locked.")
        return Observation("Nothing happens.")


DOOR_EXEMPLAR = (
    "You stand before a locked gate. A key lies on a bench.\nYour task is to: open the gate.\n"
    "> think: I need the key first.\nOK.\n> take key\nYou pick up the key.\n> open gate\nThe gate opens.\n"
)


class DoorTask(KVTask):
    info = TaskInfo(
        name="doorworld",
        title="Door world",
        metrics=("success",),
        primary_metric="success",
        column="Door success",
        answers=False,
        protocol={"max_steps": 5},
    )

    def __init__(self) -> None:
        super().__init__()
        self.factory = Factory(DoorEnv)

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        chosen, self.coverage = select(Pool.of("doorworld", [Example("door-1", "open the door.", "")]), config)
        return chosen

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return {"success": float(reward == 1.0)}

    def text_format(self) -> LineFormat:
        return LineFormat(door_grammar, ">", "\nHere is the task.\n{observation}\n", episode_start="You stand")

    def prompt(
        self, style: str, file: str | None, key: str | None, instruction: str | None, pair: Any = None
    ) -> PromptSpec:
        return _prompt(DOOR_EXEMPLAR, "Interact with a place to solve a task. Here is an example.\n")


@pytest.fixture
def toy_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TASKS, "kvworld", KVTask)
    monkeypatch.setitem(TASKS, "doorworld", DoorTask)


def _tool(*calls: tuple[str, dict[str, Any]], text: str = "") -> ModelResponse:
    blocks: list[Any] = [TextBlock(text)] if text else []
    blocks += [ToolUseBlock(f"toolu_{name}_{i}", name, args) for i, (name, args) in enumerate(calls)]
    return ModelResponse(tuple(blocks), StopReason.TOOL_USE)


COT = " alpha gives beta, beta gives gamma, gamma gives 42.\nAnswer: 42"
REACT_TEXT = [
    " I start at alpha.\nAction 1: get[alpha]",
    " Then beta.\nAction 2: get[beta]",
    " Then gamma.\nAction 3: get[gamma]",
    " The end is 42.\nAction 4: submit[42]",
]
ACT_TEXT = [" get[alpha]", " get[beta]", " get[gamma]", " submit[42]"]
AGENT_TOOLS = [
    _tool(("get", {"key": "alpha"}), text="I start at alpha."),
    _tool(("get", {"key": "beta"})),
    _tool(("get", {"key": "gamma"})),
    _tool(("submit", {"answer": "42"})),
]


def kv_script(mode: str, runner: str) -> list[Any]:
    agent = REACT_TEXT if mode in ("react", "react_cot_sc", "cot_sc_react") else ACT_TEXT
    agent = list(agent) if runner == "text" else list(AGENT_TOOLS)
    return {
        "standard": [" 42"],
        "cot": [COT],
        "cot_sc": [COT, COT, " no idea.\nAnswer: 7"],
        "act": agent,
        "react": agent,
        # ReAct runs out of steps (2) without an answer, then CoT-SC's 3 samples answer
        "react_cot_sc": [*agent[:2], COT, COT, COT],
        # three different CoT answers: the majority has 1 vote of 3 (< n/2), so ReAct takes over
        "cot_sc_react": [" a.\nAnswer: 1", " b.\nAnswer: 2", " c.\nAnswer: 3", *agent],
    }[mode]


def _config(task: str, mode: str, runner: str, tmp_path: Path, max_steps: int) -> RunConfig:
    solve = SolveSettings(mode=mode, runner=runner, loop=LoopConfig(max_steps=max_steps), cot_sc_samples=3)
    return RunConfig(
        task=TaskConfig(name=task),
        model={"provider": "scripted", "label": "toy"},
        solve=solve,
        results_dir=tmp_path,
        progress=False,
        run_id=f"{mode}-{runner}",
    )


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("runner", ["text", "tool_use"])
# (Reflexion and LATS need exemplars of their task: tests/test_reflexion.py and tests/test_lats.py run
# them on the real tasks)
@pytest.mark.parametrize("mode", [m for m, spec in MODE_SPECS.items() if not spec.tasks])
async def test_every_mode_and_runner_on_a_task_defined_in_the_tests(
    toy_tasks: None, scripted: Any, tmp_path: Path, mode: str, runner: str
) -> None:
    model = scripted(kv_script(mode, runner))
    max_steps = 2 if mode == "react_cot_sc" else 7
    result = await evaluate(_config("kvworld", mode, runner, tmp_path, max_steps), model=model)
    (record,) = _records(result.run_dir)
    assert (record["prediction"], record["correct"], record["em"]) == ("42", True, 1.0)
    assert result.metrics["task"] == "kvworld" and result.metrics["em"]["mean"] == 1.0
    assert result.metrics["by_group"] == {
        "hops": {"3": {"n": 1, "em": 1.0, "ci95": [pytest.approx(0.2065, abs=1e-4), 1.0]}}
    }  # the task's own
    if MODE_SPECS[mode].needs_env:
        called = [e for ep in record["trajectory"] for e in ep["events"] if e["type"] == "tool_called"]
        assert [e["name"] for e in called][:2] == ["get", "get"]  # the grammar (or the tool) named the action
        assert called[0]["arguments"] == {"key": "alpha"}
        if runner == "text":
            assert called[0]["text"] == "get[alpha]"
            prompts = [r.prompt for r in model.requests]
            assert any(f"\nObservation 1: beta\n{label} 2:" in p for p in prompts for label in ("Thought", "Action"))
    if mode == "react_cot_sc":
        assert record["route"] == "react->cot_sc"
    if mode == "cot_sc_react":
        assert record["route"] == "cot_sc->react"


async def test_a_task_without_answers_ends_on_the_environments_reward(
    toy_tasks: None, scripted: Any, tmp_path: Path
) -> None:
    for runner, script in (
        ("text", [" think: The key first.", " take key", " open door"]),
        ("tool_use", [_tool(("take", {"item": "key"}), text="The key first."), _tool(("open", {"target": "door"}))]),
    ):
        model = scripted(script)
        result = await evaluate(_config("doorworld", "react", runner, tmp_path, 5), model=model)
        (record,) = _records(result.run_dir)
        assert (record["reason"], record["reward"], record["success"], record["correct"]) == ("done", 1.0, 1.0, True)
        assert result.metrics["success"]["mean"] == 1.0 and result.metrics["reasons"] == {"done": 1}
        if runner == "text":
            first, last = model.requests[0].prompt, model.requests[-1].prompt
            assert first.endswith("Your task is to: open the door.\n>")
            assert first.startswith("Interact with a place to solve a task. Here is an example.\n" + DOOR_EXEMPLAR)
            assert last.endswith("\n> think: The key first.\nOK.\n> take key\nYou pick up the key.\n>")
            assert all(r.stop == ("\n",) for r in model.requests)


async def test_the_step_cap_of_a_task_without_answers_scores_zero(
    toy_tasks: None, scripted: Any, tmp_path: Path
) -> None:
    model = scripted([" open door", " dance", " open door"])
    result = await evaluate(_config("doorworld", "act", "text", tmp_path, 3), model=model)
    (record,) = _records(result.run_dir)
    assert (record["reason"], record["reward"], record["success"]) == ("step_limit", None, 0.0)
    events = record["trajectory"][0]["events"]
    observations = [e["observation"] for e in events if e["type"] == "tool_execution_finished"]
    assert observations == ["The door is locked.", "Nothing happens.", "The door is locked."]


def test_modes_that_need_answers_are_refused_for_a_task_without_them(toy_tasks: None) -> None:
    base = {
        "task": {"name": "doorworld"},
        "mode": {"name": "react"},
        "runner": {"name": "text"},
        "model": {"provider": "scripted"},
    }
    run = RunConfig.from_mapping(base)
    assert run.solve.loop.max_steps == 5  # the task's own protocol under protocol=paper
    for mode in ("standard", "cot", "cot_sc", "react_cot_sc", "cot_sc_react"):
        with pytest.raises(ConfigError, match=f"task=doorworld does not run mode={mode}"):
            RunConfig.from_mapping({**base, "mode": {"name": mode}})
    with pytest.raises(ConfigError, match="protocol=paper fixes max_steps=5 for task=doorworld"):
        RunConfig.from_mapping({**base, "max_steps": 9})


def test_line_format_exemplars_become_tool_use_turns() -> None:
    turns = exemplar_conversation(_prompt(DOOR_EXEMPLAR), "react", None, DoorTask().text_format(), DOOR_ACTIONS)
    assert [m.role for m in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0].content == (
        TextBlock("You stand before a locked gate. A key lies on a bench.\nYour task is to: open the gate."),
    )
    said, call = turns[1].content
    assert said == TextBlock("I need the key first.")  # the think action became the turn's text
    assert isinstance(call, ToolUseBlock) and (call.name, call.input) == ("take", {"item": "key"})
    assert turns[2].content == (ToolResultBlock(call.id, "You pick up the key."),)
    last = turns[3].content[0]
    assert isinstance(last, ToolUseBlock) and last.input == {"target": "gate"}
    assert turns[4].content == (ToolResultBlock(last.id, "The gate opens."),)


async def test_a_mode_defined_for_one_task_is_refused_on_another_in_one_line(
    toy_tasks: None, scripted: Any, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="mode=react_im is defined for task=alfworld only, not task=kvworld"):
        await evaluate(_config("kvworld", "react_im", "text", tmp_path, 7), model=scripted([]))
