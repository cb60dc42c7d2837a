"""The record holds what the model saw: every episode's first observation is in ``examples.jsonl``
(all four benchmarks, both runners), and a recorded trajectory replays into exactly the request the
model received at its last step, rebuilt from the record alone (``Solver.replayed_request``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.environment import Example
from react_bench.episode import build_solver, env_config
from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.record import RECORD_VERSION, ExampleRecord
from react_bench.results import iter_example_records
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, load_task
from react_bench.types import ModelResponse, StopReason, TextBlock, ToolUseBlock

RUNNERS = ("text", "tool_use")


def tool_turn(name: str, arguments: dict[str, Any], i: int) -> ModelResponse:
    return ModelResponse((TextBlock(f"Step {i}."), ToolUseBlock(f"toolu_{i}", name, arguments)), StopReason.TOOL_USE)


def script_for(task: str, runner: str, example: Example) -> list[Any]:
    """Two steps or more, no re-ask: a search (or the game's first commands), then the end."""
    if task in ("hotpotqa", "fever"):
        answer = "SUPPORTS" if task == "fever" else "Paris"
        if runner == "text":
            return [" I look it up.\nAction 1: Search[Paris]\nObservation 1:", f" I know.\nAction 2: Finish[{answer}]"]
        return [tool_turn("search", {"entity": "Paris"}, 1), tool_turn("finish", {"answer": answer}, 2)]
    if task == "alfworld":
        import json

        commands = json.loads(Path(example.metadata["gamefile"]).read_text())["walkthrough"][:2]
    else:
        from react_bench.envs.webshop.catalog import goal_query

        commands = [f"search[{goal_query(example.metadata['goal'])}]", "click[Back to Search]"]
    if runner == "text":
        return [f" {c}" for c in commands]
    from react_bench.envs.alfworld.env import alfworld_action
    from react_bench.envs.webshop.env import webshop_action

    parse = alfworld_action if task == "alfworld" else webshop_action
    return [tool_turn(parse(c).name, dict(parse(c).arguments), i) for i, c in enumerate(commands, 1)]


def config(task: str, runner: str, tmp_path: Path, max_steps: int) -> RunConfig:
    env = None
    if task == "alfworld":
        from react_bench.tasks.alfworld import AlfworldConfig

        env = AlfworldConfig(games=12, train_games=18, seed=0)
    elif task == "webshop":
        from react_bench.envs.webshop import WebShopConfig

        env = WebShopConfig(products=300, goals=40)
    solve = SolveSettings(mode="react", runner=runner, loop=LoopConfig(max_steps=max_steps))  # type: ignore[arg-type]
    return RunConfig(
        task=TaskConfig(name=task, n=1),
        model={"provider": "scripted", "label": "s"},
        solve=solve,
        env=env,
        results_dir=tmp_path,
        progress=False,
        run_id=runner,
    )


def first_example(cfg: RunConfig) -> Example:
    task = load_task(cfg.task.name)
    (example,) = task.examples(cfg.task, env_config(cfg, task))
    if cfg.task.name == "webshop":
        from react_bench.envs.webshop.catalog import Catalog

        catalog = Catalog.generate(cfg.env.seed, cfg.env.products, cfg.env.goals)  # type: ignore[union-attr]
        goal = next(g for g in catalog.goals if g.session == example.id)
        example = replace(example, metadata={**example.metadata, "goal": goal})
    return example


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("task", ["hotpotqa", "fever", "alfworld", "webshop"])
async def test_the_first_observation_is_recorded_and_the_last_request_replays_exactly(
    scripted: Any, tmp_path: Path, task: str, runner: str
) -> None:
    cfg = config(task, runner, tmp_path, max_steps=2 if task in ("alfworld", "webshop") else 7)
    example = first_example(cfg)
    model = scripted(script_for(task, runner, example))
    result = await evaluate(cfg, model=model)
    (record,) = list(iter_example_records(result.run_dir))
    (episode,) = record.trajectory
    first = episode.first_observation
    # what the environment showed first, as the model read it in its first request
    assert first, record
    match task:
        case "hotpotqa" | "fever":
            assert first == record.question
        case "alfworld":
            assert (
                first.startswith("You are in the middle of a room.") and f"Your task is to: {record.question}" in first
            )
        case "webshop":
            assert "[Search]" in first and record.question in first
    import html

    from react_bench.studies.report import trajectory_html

    assert html.escape(first) in trajectory_html(record)  # the notebook's and the report's view show it
    sent = model.requests[-1]
    step = record.steps
    assert step >= 2
    # the record alone (first observation and history) rebuilds the last request
    task_obj = load_task(task)
    task_obj.examples(cfg.task, env_config(cfg, task_obj))  # ALFWorld's exemplars follow its games' settings
    _, _, solver = build_solver(cfg, task_obj, env_config(cfg, task_obj), model)
    recorded = Example(record.id, record.question, record.gold, dict(record.metadata))
    rebuilt = solver.replayed_request(recorded, episode, step)
    if runner == "text":
        assert sent.prompt is not None and rebuilt.prompt == sent.prompt
        assert first in sent.prompt
    else:
        assert rebuilt.messages == sent.messages and rebuilt.system == sent.system and rebuilt.tools == sent.tools
        assert first.strip() in "".join(m.text for m in sent.messages)


def test_a_record_round_trips_and_a_version_1_line_upgrades() -> None:
    old = {  # a line as runs wrote it before the record was typed
        "id": "dev-1",
        "question": "Q?",
        "gold": "A",
        "prediction": "A",
        "correct": True,
        "em": 1.0,
        "f1": 1.0,
        "reward": None,
        "steps": 2,
        "reason": "answered",
        "route": "react",
        "backoff": False,
        "error": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 2,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
        "calls": 2,
        "bad_calls": 0,
        "repairs": {},
        "replaced_chars": 0,
        "samples": [],
        "vote": None,
        "metadata": {"type": "bridge"},
        "trajectory": [
            {
                "route": "react",
                "history": [],
                "events": [
                    {
                        "step": 1,
                        "call_id": "step-1",
                        "name": "search",
                        "arguments": {"entity": "A"},
                        "text": "search[A]",
                        "type": "tool_called",
                    },
                    {
                        "step": 1,
                        "call_id": "step-1",
                        "name": "search",
                        "observation": "A is a letter.",
                        "is_error": False,
                        "type": "tool_execution_finished",
                    },
                    {"step": 1, "usage": {"input_tokens": 5, "output_tokens": 1}, "type": "step_finished"},
                ],
            }
        ],
        "cost_usd": 0.01,
    }
    record = ExampleRecord.from_dict(old)
    assert record.first_observation is None and record.wall_s is None and record.saved_usd == 0.0
    assert record.scores == {"em": 1.0, "f1": 1.0} and record.usage.input_tokens == 10
    (step,) = record.trajectory[0].steps()
    assert (step.number, step.actions[0].name, step.actions[0].observation, step.usage.input_tokens) == (
        1,
        "search",
        "A is a letter.",
        5,
    )
    upgraded = record.to_dict()
    assert upgraded["record_version"] == RECORD_VERSION and upgraded["trajectory"][0]["first_observation"] is None
    assert {k: v for k, v in upgraded.items() if k in old and k != "trajectory"} == {
        k: v for k, v in old.items() if k != "trajectory"
    }
    assert list(upgraded)[:7] == ["id", "question", "gold", "prediction", "correct", "em", "f1"]  # the layout kept
    assert ExampleRecord.from_dict(upgraded) == record
