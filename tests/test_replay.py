"""Record and replay: cassettes reproduce predictions; a short cassette fails one example only."""

from __future__ import annotations

import json

import pytest

from react_bench.envs.wiki.env import WikiEnv, wiki_format
from react_bench.errors import ConfigError
from react_bench.methods.core import Solver, SolveSettings
from react_bench.models.base import ModelCapabilities
from react_bench.models.replay import RecordingModel, ReplayModel, cassette_line, example_scope, load_cassette
from react_bench.types import ModelResponse, StopReason, TextBlock, ThinkingBlock, ToolUseBlock
from tests.support import PROMPTS


async def run_examples(model, wiki, settings, questions):
    solver = Solver(settings, model, PROMPTS["Question"], lambda: WikiEnv(wiki), wiki_format())
    outcomes, lines = {}, []
    for example_id, question in questions.items():
        with example_scope(example_id) as calls:
            outcomes[example_id] = await solver.solve(question)
        kind = "completions" if settings.runner == "text" else "responses"
        lines.append(cassette_line(example_id, calls, kind))
    return outcomes, lines


def write(tmp_path, lines):
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


QUESTIONS = {"ex-1": "What is Gamma?", "ex-2": "Which river feeds Alpha Lake?"}


async def test_text_run_replays_to_identical_predictions_in_any_order(scripted, wiki, tmp_path):
    model = scripted(
        [
            " Look it up.\nAction 1: Search[Gamma]",
            " It is a village.\nAction 2: Finish[village]",
            " no action",  # re-ask follows
            " Search[Alpha Lake]",
            " Fed by the Beta River.\nAction 2: Finish[Beta River]",
        ]
    )
    settings = SolveSettings(mode="react")
    recorded, lines = await run_examples(RecordingModel(model), wiki, settings, QUESTIONS)
    assert lines[1]["completions"][1] == " Search[Alpha Lake]"
    cassette = write(tmp_path, lines)
    reversed_questions = dict(reversed(list(QUESTIONS.items())))
    replayed, again = await run_examples(RecordingModel(ReplayModel(cassette)), wiki, settings, reversed_questions)
    assert {k: o.prediction for k, o in replayed.items()} == {k: o.prediction for k, o in recorded.items()}
    assert {k: o.stats.bad_calls for k, o in replayed.items()} == {"ex-1": 0, "ex-2": 1}
    assert {line["id"]: line for line in again} == {line["id"]: line for line in lines}


async def test_tool_use_run_replays_blocks_with_thinking(scripted, wiki, tmp_path):
    thinking = ThinkingBlock("Search first.", "sig-123")
    model = scripted(
        [
            ModelResponse((thinking, ToolUseBlock("t1", "search", {"entity": "Gamma"})), StopReason.TOOL_USE),
            ModelResponse((TextBlock("Answer: village"),), StopReason.END_TURN),
        ]
    )
    settings = SolveSettings(mode="react", runner="tool_use")
    recorded, lines = await run_examples(RecordingModel(model), wiki, settings, {"ex-1": "What is Gamma?"})
    assert lines[0]["responses"][0][0] == {"type": "thinking", "thinking": "Search first.", "signature": "sig-123"}
    replay = ReplayModel(write(tmp_path, lines), capabilities=ModelCapabilities())
    replayed, _ = await run_examples(replay, wiki, settings, {"ex-1": "What is Gamma?"})
    assert replayed["ex-1"].prediction == recorded["ex-1"].prediction == "village"
    assert replayed["ex-1"].episodes[0].history == recorded["ex-1"].episodes[0].history


async def test_asking_beyond_the_cassette_is_an_error_for_that_example_only(wiki, tmp_path):
    cassette = write(
        tmp_path,
        [
            {"id": "ex-1", "completions": [" Look.\nAction 1: Search[Gamma]"]},
            {"id": "ex-2", "completions": [" x\nAction 1: Finish[y]"]},
        ],
    )
    outcomes, _ = await run_examples(ReplayModel(cassette), wiki, SolveSettings(mode="react"), QUESTIONS)
    assert outcomes["ex-1"].reason == "error" and "call 2 was asked for" in outcomes["ex-1"].error
    assert (outcomes["ex-2"].reason, outcomes["ex-2"].prediction) == ("answered", "y")


def test_bad_cassettes_are_reported_with_file_and_line(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text('{"id": "a", "completions": []}\nnot json\n')
    with pytest.raises(ConfigError, match=r"calls.jsonl:2"):
        load_cassette(path)
    path.write_text('{"id": "a", "completions": []}\n{"id": "a", "completions": []}\n')
    with pytest.raises(ConfigError, match="appears twice"):
        load_cassette(path)
    with pytest.raises(ConfigError, match="not found"):
        load_cassette(tmp_path / "missing.jsonl")


async def test_a_failed_call_is_recorded_in_place_and_replayed_as_the_same_failure(scripted, wiki, tmp_path):
    from react_bench.models.base import ModelError

    model = scripted([" a\nAnswer: x", ModelError("overloaded", status=529), " c\nAnswer: y"])
    settings = SolveSettings(mode="cot_sc", cot_sc_samples=3)
    recorded, lines = await run_examples(RecordingModel(model), wiki, settings, {"ex-1": "Q?"})
    assert lines[0]["completions"][1] == {"error": "ModelError: overloaded"}
    replayed, again = await run_examples(
        RecordingModel(ReplayModel(write(tmp_path, lines))), wiki, settings, {"ex-1": "Q?"}
    )
    assert replayed["ex-1"].samples == recorded["ex-1"].samples == ["x", "", "y"]
    assert "recorded failure (replayed): ModelError: overloaded" in replayed["ex-1"].error
    assert again[0]["completions"][2] == " c\nAnswer: y"


def test_replay_refuses_a_cassette_without_its_run_json(tmp_path):
    from react_bench.models import make_model

    cassette = write(tmp_path, [{"id": "a", "completions": ["x"]}])
    with pytest.raises(ConfigError, match="no run.json beside"):
        make_model({"provider": "replay", "cassette": str(cassette)})
    (tmp_path / "run.json").write_text(json.dumps({"model_capabilities": {"raw_completion": False, "prefill": False}}))
    caps = make_model({"provider": "replay", "cassette": str(cassette)}).capabilities
    assert (caps.raw_completion, caps.prefill) == (False, False)
