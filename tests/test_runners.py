"""Both runners and every mode on scripted models, with the exact prompts checked.

The wiki is a real ``WikiEnv`` over a tiny ``LocalWiki``; prompts use a fixed test
``PromptSpec`` so the golden files under ``tests/fixtures/prompts/`` stay short and readable.
Regenerate them with ``REACT_BENCH_REGOLD=1 pytest tests/test_runners.py`` and read the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from react_bench.envs.wiki.env import WikiEnv, wiki_format
from react_bench.loop import LoopConfig
from react_bench.methods.core import Solver, SolveSettings, majority_vote
from react_bench.models.base import ModelCapabilities
from react_bench.types import ModelResponse, StopReason, TextBlock, ToolResultBlock, ToolUseBlock
from tests.support import PROMPTS

GOLDEN = Path(__file__).parent / "fixtures" / "prompts"


def solver(model, wiki, label="Question", **settings) -> Solver:
    return Solver(SolveSettings(**settings), model, PROMPTS[label], lambda: WikiEnv(wiki), wiki_format(label))


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("REACT_BENCH_REGOLD"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"prompt differs from {path}"


def prompts_sent(model) -> str:
    return "\n=====\n".join(r.prompt for r in model.requests)


# --------------------------------------------------------------------------- text runner


async def test_react_text_paper_protocol_with_reask(scripted, wiki):
    model = scripted(
        [
            " The lake is fed by a river; search the lake first.\nAction 1: Search[Alpha Lake]\nObservation 1: made up",
            " I should look up the river.\nLookup[river]",  # no "Action 2:" -> the paper's re-ask
            " Lookup[river]\nThought 3: this line is cut by the newline stop",
            " The Beta River is 12 km long.\nAction 3: Finish[12 km]",
        ]
    )
    outcome = await solver(model, wiki).solve("How long is the river that feeds Alpha Lake?")
    assert (outcome.prediction, outcome.reason, outcome.route, outcome.steps) == ("12 km", "answered", "react", 3)
    assert outcome.stats.bad_calls == 1 and outcome.stats.calls == 4
    reask = model.requests[2]
    assert reask.prompt.endswith("Thought 2: I should look up the river.\nAction 2:")
    assert reask.stop == ("\n",)
    assert [r.stop for r in model.requests if r is not reask] == [
        ("\nObservation 1:",),
        ("\nObservation 2:",),
        ("\nObservation 3:",),
    ]
    assert all(r.temperature == 0.0 and r.max_tokens == 100 for r in model.requests)
    check_golden("react_hotpotqa_reask.txt", prompts_sent(model))


async def test_react_text_step_cap_gives_up_with_empty_answer(scripted, wiki):
    model = scripted([f" Try again.\nAction {i}: Search[Nowhere {i}]" for i in (1, 2)])
    outcome = await solver(model, wiki, loop=LoopConfig(max_steps=2)).solve("Q?")
    assert (outcome.prediction, outcome.reason, outcome.steps) == ("", "step_limit", 2)
    last = model.requests[-1].prompt
    assert "Observation 1: Could not find Nowhere 1. Similar: " in last
    check_golden("react_hotpotqa_cap.txt", prompts_sent(model))


async def test_react_text_wrap_up_asks_for_the_answer(scripted, wiki):
    model = scripted([" Look.\nAction 1: Search[Gamma]", "a village] trailing"])
    outcome = await solver(model, wiki, loop=LoopConfig(max_steps=1, on_limit="wrap_up")).solve("What is Gamma?")
    assert (outcome.prediction, outcome.reason) == ("a village", "step_limit")
    assert model.requests[-1].prompt.endswith(
        "(You have used all 1 steps. Give your final answer now, without using any tool.)\nAction 2: Finish["
    )


async def test_act_text_on_fever(scripted, wiki):
    model = scripted([" Search[Beta River]", " Finish[SUPPORTS]"])
    outcome = await solver(model, wiki, "Claim", mode="act").solve("The Beta River is 12 km long.")
    assert (outcome.prediction, outcome.route) == ("SUPPORTS", "act")
    assert model.requests[1].prompt.endswith(
        "Claim: The Beta River is 12 km long.\nAction 1: Search[Beta River]\nObservation 1: The Beta River is a river. "
        "It is 12 km long. The Beta River flows into Alpha Lake..\nAction 2:"  # the paper's double period
    )
    check_golden("act_fever.txt", prompts_sent(model))


@pytest.mark.parametrize("label", ["Question", "Claim"])
async def test_cot_and_standard_prompts(scripted, wiki, label):
    cot = scripted([" The lake is fed by the Beta River.\nAnswer: Beta River\nQuestion: next one"])
    outcome = await solver(cot, wiki, label, mode="cot").solve("Which river feeds Alpha Lake?")
    assert (outcome.prediction, outcome.route, outcome.steps) == ("Beta River", "cot", 1)
    assert cot.requests[0].stop == (f"\n{label}:",)
    standard = scripted([" Beta River\nQuestion: more"])
    outcome = await solver(standard, wiki, label, mode="standard").solve("Which river feeds Alpha Lake?")
    assert outcome.prediction == "Beta River"
    check_golden(f"cot_standard_{label.lower()}.txt", prompts_sent(cot) + "\n=====\n" + prompts_sent(standard))


def test_majority_vote_normalises_and_breaks_ties_by_first_seen():
    assert majority_vote(["The Beatles", "beatles", "Stones", "stones", "Queen"]) == majority_vote(
        ["The Beatles", "beatles", "Stones", "stones", "Queen"]
    )
    vote = majority_vote(["Stones", "The Beatles", "beatles", "stones", "Queen"])
    assert (vote.answer, vote.count, vote.total) == ("Stones", 2, 5)
    vote = majority_vote(["", "", "Queen", "", "Queen."])
    assert (vote.answer, vote.count) == ("Queen", 2)
    assert majority_vote(["", " "]).count == 0


async def test_cot_sc_samples_at_temperature_with_their_own_index(scripted, wiki):
    answers = ["Beta River", "beta river", "Gamma", "Gamma", "the Beta river"]
    model = scripted([f" reasoning.\nAnswer: {a}" for a in answers])
    outcome = await solver(model, wiki, mode="cot_sc", cot_sc_samples=5).solve("Q?")
    assert outcome.prediction == "Beta River" and outcome.vote.count == 3
    assert outcome.samples == answers
    assert [r.temperature for r in model.requests] == [0.7] * 5
    assert [r.sample_index for r in model.requests] == list(range(5))


async def test_react_cot_sc_backs_off_only_when_react_gives_no_answer(scripted, wiki):
    no_answer = scripted([" hmm\nAction 1: Search[Gamma]", " A\nAnswer: x", " B\nAnswer: y", " C\nAnswer: y"])
    outcome = await solver(no_answer, wiki, mode="react_cot_sc", cot_sc_samples=3, loop=LoopConfig(max_steps=1)).solve(
        "Q?"
    )
    assert (outcome.prediction, outcome.route, outcome.backoff) == ("y", "react->cot_sc", True)
    assert (outcome.steps, outcome.stats.calls) == (1 + 1, 1 + 3)
    answered = scripted([" done\nAction 1: Finish[Gamma]"])
    outcome = await solver(answered, wiki, mode="react_cot_sc", cot_sc_samples=3).solve("Q?")
    assert (outcome.prediction, outcome.route, outcome.backoff) == ("Gamma", "react", False)


async def test_cot_sc_react_backs_off_below_half_the_votes(scripted, wiki):
    split = scripted([" a\nAnswer: x", " b\nAnswer: y", " c\nAnswer: z", " d\nAnswer: x", " go\nAction 1: Finish[w]"])
    outcome = await solver(split, wiki, mode="cot_sc_react", cot_sc_samples=4).solve("Q?")
    # x has 2 of 4 votes: not fewer than n/2, so no backoff ...
    assert (outcome.prediction, outcome.route) == ("x", "cot_sc")
    split.script.pop()  # the ReAct turn is not used
    weak = scripted([" a\nAnswer: x", " b\nAnswer: y", " c\nAnswer: z", " go\nAction 1: Finish[w]"])
    outcome = await solver(weak, wiki, mode="cot_sc_react", cot_sc_samples=3).solve("Q?")
    # ... 1 of 3 is fewer than 1.5: ReAct answers.
    assert (outcome.prediction, outcome.route, outcome.backoff) == ("w", "cot_sc->react", True)
    assert outcome.samples == ["x", "y", "z"]


# ----------------------------------------------------------------------------- chat models

CHAT_NO_PREFILL = ModelCapabilities(raw_completion=False, prefill=False)
CHAT_PREFILL = ModelCapabilities(raw_completion=False, prefill=True)


async def test_text_protocol_on_a_chat_model_without_prefill(scripted, wiki):
    model = scripted(
        ["Thought 1: Search it.\nAction 1: Search[Gamma]", "Thought 2: ok\nAction 2: Finish[village]"],
        capabilities=CHAT_NO_PREFILL,
    )
    outcome = await solver(model, wiki).solve("What is Gamma?")
    assert outcome.prediction == "village"
    first = model.requests[0]
    assert first.prompt is None and [m.role for m in first.messages] == ["user"]
    assert first.messages[0].text.endswith(
        "Begin your reply with `Thought 1:` and follow the format of the examples exactly."
    )
    # The repeated "Thought 2:" was stripped: the scratchpad does not double it.
    assert (
        "Thought 1: Search it.\nAction 1: Search[Gamma]\nObservation 1: Gamma is a village..\n"
        in model.requests[1].messages[0].text
    )


async def test_a_zero_shot_request_names_no_examples(scripted, wiki):
    """shots=0 sends the opening alone: the instruction to continue does not point at examples."""
    from react_bench.prompts import ZERO_SHOT

    model = scripted(["Thought 1: ok\nAction 1: Finish[village]"], capabilities=CHAT_NO_PREFILL)
    prompts = {style: ZERO_SHOT for style in PROMPTS["Question"]}
    zero = Solver(SolveSettings(), model, prompts, lambda: WikiEnv(wiki), wiki_format("Question"))
    assert (await zero.solve("What is Gamma?")).prediction == "village"
    text = model.requests[0].messages[0].text
    assert text.startswith("Question: What is Gamma?\n") and "example" not in text
    assert text.endswith("Continue the text above from where it stops. Begin your reply with `Thought 1:`.")


async def test_text_protocol_on_a_chat_model_with_prefill_and_client_side_newline_stop(scripted, wiki):
    model = scripted(
        [" no action here", " Search[Gamma]\nmore text", " ok\nAction 2: Finish[village]"], capabilities=CHAT_PREFILL
    )
    outcome = await solver(model, wiki).solve("What is Gamma?")
    assert outcome.prediction == "village"
    first, reask = model.requests[0], model.requests[1]
    assert [m.role for m in first.messages] == ["user", "assistant"] and first.messages[1].text == "Thought 1:"
    assert reask.stop == ()  # "\n" is refused by chat APIs; it is applied client-side
    assert reask.messages[1].text == "Thought 1: no action here\nAction 1:"
    assert "Action 1: Search[Gamma]\nObservation 1:" in model.requests[2].messages[0].text


# ------------------------------------------------------------------------- tool-use runner


def tool_turn(*calls, text=""):
    blocks = ([TextBlock(text)] if text else []) + [ToolUseBlock(i, n, a) for i, n, a in calls]
    return ModelResponse(tuple(blocks), StopReason.TOOL_USE)


async def test_react_tool_use_parallel_calls_and_final_text(scripted, wiki):
    model = scripted(
        [
            tool_turn(
                ("a", "search", {"entity": "Alpha Lake"}), ("b", "search", {"entity": "Beta River"}), text="Both pages."
            ),
            ModelResponse((TextBlock("The river is 12 km long.\nAnswer: 12 km"),), StopReason.END_TURN),
        ]
    )
    outcome = await solver(model, wiki, runner="tool_use").solve("How long is the river that feeds Alpha Lake?")
    assert (outcome.prediction, outcome.reason, outcome.steps) == ("12 km", "answered", 2)
    first, second = model.requests
    assert first.system == "<instruction tool_use>\n" and [t.name for t in first.tools] == [
        "search",
        "lookup",
        "finish",
    ]
    assert first.messages[0].text == "Question: How long is the river that feeds Alpha Lake?"
    assert first.tool_choice == "auto"
    results = second.messages[-1].content
    assert [b.tool_use_id for b in results] == ["a", "b"] and all(isinstance(b, ToolResultBlock) for b in results)
    assert results[1].content.startswith("The Beta River is a river.")


async def test_act_tool_use_forces_tools_and_ends_with_finish(scripted, wiki):
    model = scripted(
        [tool_turn(("a", "search", {"entity": "Gamma"})), tool_turn(("b", "finish", {"answer": "NOT ENOUGH INFO"}))]
    )
    outcome = await solver(model, wiki, "Claim", mode="act", runner="tool_use", thinking=None).solve("Gamma is a city.")
    assert (outcome.prediction, outcome.route) == ("NOT ENOUGH INFO", "act")
    assert all(r.tool_choice == "any" and r.thinking is None for r in model.requests)
    assert model.requests[0].system == "<instruction tool_use_act>\n"


async def test_tool_use_wrap_up_keeps_tools_declared_but_unused(scripted, wiki):
    model = scripted(
        [tool_turn(("a", "search", {"entity": "Gamma"})), ModelResponse((TextBlock("village"),), StopReason.END_TURN)]
    )
    outcome = await solver(model, wiki, runner="tool_use", loop=LoopConfig(max_steps=1, on_limit="wrap_up")).solve("Q?")
    assert (outcome.prediction, outcome.reason) == ("village", "step_limit")
    last = model.requests[-1]
    assert last.tool_choice == "none" and last.tools
    assert isinstance(last.messages[-1].content[0], ToolResultBlock)
    assert "used all 1 steps" in last.messages[-1].content[-1].text


# ------------------------------------------------------------- every mode x task x runner


def script_for(mode: str, runner: str, answer: str) -> list:
    def react_turn():
        if runner == "text":
            return f" Enough known.\nAction 1: Finish[{answer}]"
        return ModelResponse((TextBlock(f"Answer: {answer}"),), StopReason.END_TURN)

    cot = [f" Reasoning.\nAnswer: {answer}"] * 3
    return {
        "standard": [f" {answer}"],
        "cot": cot[:1],
        "cot_sc": cot,
        "act": [f" Finish[{answer}]"] if runner == "text" else [tool_turn(("f", "finish", {"answer": answer}))],
        "react": [react_turn()],
        "react_cot_sc": [react_turn()],
        "cot_sc_react": cot,
    }[mode]


@pytest.mark.parametrize("runner", ["text", "tool_use"])
@pytest.mark.parametrize("label,answer", [("Question", "Beta River"), ("Claim", "SUPPORTS")])
@pytest.mark.parametrize("mode", ["standard", "cot", "cot_sc", "act", "react", "react_cot_sc", "cot_sc_react"])
async def test_every_mode_answers_on_both_tasks_and_runners(scripted, wiki, mode, runner, label, answer):
    model = scripted(script_for(mode, runner, answer))
    outcome = await solver(model, wiki, label, mode=mode, runner=runner, cot_sc_samples=3).solve(
        "Which river feeds Alpha Lake?"
    )
    assert (outcome.prediction, outcome.reason, outcome.backoff) == (answer, "answered", False)
    expected_route = {"react_cot_sc": "react", "cot_sc_react": "cot_sc"}.get(mode, mode)
    assert outcome.route == expected_route
    first = model.requests[0]
    text = first.prompt if first.prompt is not None else first.messages[0].text
    assert f"{label}: Which river feeds Alpha Lake?" in text


async def test_react_text_prompt_on_fever(scripted, wiki):
    model = scripted([" Check the river.\nAction 1: Search[Beta River]", " It says 12 km.\nAction 2: Finish[SUPPORTS]"])
    outcome = await solver(model, wiki, "Claim").solve("The Beta River is 12 km long.")
    assert outcome.prediction == "SUPPORTS"
    check_golden("react_fever.txt", prompts_sent(model))


async def test_reask_reply_that_repeats_the_action_label_on_a_chat_model(scripted, wiki):
    model = scripted(
        ["I think about it", "Action 1: Search[Gamma]", "Thought 2: ok\nAction 2: Finish[village]"],
        capabilities=CHAT_NO_PREFILL,
    )
    outcome = await solver(model, wiki).solve("What is Gamma?")
    assert (outcome.prediction, outcome.stats.bad_calls) == ("village", 1)
    assert "Action 1: Search[Gamma]\nObservation 1: Gamma is a village..\n" in model.requests[2].messages[0].text
