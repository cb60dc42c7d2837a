"""Unit tests of the text runner's parsers: the paper split, each robust repair, the rule that
no action is ever invented, act mode, and answer extraction for CoT / Standard."""

from __future__ import annotations

import pytest

from react_bench.envs.wiki.env import action_to_call
from react_bench.models.stopping import REASK_STOP, step_stop
from react_bench.runners.parsing import (
    REPAIRS,
    ParsedStep,
    ThoughtAction,
    extract_answer,
    normalize_action,
    paper_parse,
    parse_act,
    parse_step,
    reask_suffix,
    robust_parse,
    split_thought_action,
)

# --- the paper parser ----------------------------------------------------------------------


def test_paper_split_takes_the_text_after_the_numbered_label() -> None:
    completion = " I need to search Milhouse.\nAction 1: Search[Milhouse]"
    assert split_thought_action(completion, 1) == ThoughtAction("I need to search Milhouse.", "Search[Milhouse]")
    assert paper_parse(completion, 1) == ParsedStep("I need to search Milhouse.", "Search[Milhouse]")


@pytest.mark.parametrize(
    "completion",
    [
        " I need to search Milhouse.\nAction 2: Search[Milhouse]",  # another step's number
        " I need to search Milhouse.\nAction 1:Search[Milhouse]",  # no space after the colon
        " I need to search Milhouse.\nAction: Search[Milhouse]",
        " I need to search Milhouse.\nAction 1: Search[a]\nThought 1: again\nAction 1: Search[b]",  # two separators
        "Action 1: Search[Milhouse]",  # nothing before the label: no "\n" to split on
        " I need to search Milhouse.",
    ],
)
def test_paper_split_fails_like_the_original_and_keeps_the_first_line_for_the_reask(completion: str) -> None:
    assert split_thought_action(completion, 1) is None
    parsed = paper_parse(completion, 1)
    assert parsed.action is None
    assert parsed.thought == completion.strip().split("\n")[0]
    assert reask_suffix(1, parsed.thought) == f"Thought 1: {parsed.thought}\nAction 1:"


def test_paper_keeps_what_follows_the_action_verbatim() -> None:
    completion = " Go.\nAction 2: Finish[yes]\nThought 3: done\nAction 3: Search[x]"
    parsed = paper_parse(completion, 2)
    assert parsed.action == "Finish[yes]\nThought 3: done\nAction 3: Search[x]"
    # and the paper's execution accepts it: it starts with finish[ and ends with ]
    assert action_to_call(parsed.action) == ("finish", "yes]\nThought 3: done\nAction 3: Search[x")


def test_stops() -> None:
    assert step_stop(3) == "\nObservation 3:"
    assert REASK_STOP == "\n"


@pytest.mark.parametrize(
    ("action", "call"),
    [
        ("Search[Eiffel Tower]", ("search", "Eiffel Tower")),
        ("Lookup[eastern sector]", ("lookup", "eastern sector")),
        ("Finish[1,800 to 7,000 ft]", ("finish", "1,800 to 7,000 ft")),
        ("Finish[]", ("finish", "")),
        ("search[x] ", ("search", "x")),
        ('Search["quoted"]', ("search", '"quoted"')),
        ("SEARCH[x]", None),  # only the first letter is lower-cased
        (" Search[x]", None),  # the first character is the space: the paper refuses it
        ("Search[x] now", None),
        ("Search[x", None),
        ("Click[x]", None),
        ("", None),
    ],
)
def test_action_to_call_has_the_paper_semantics(action: str, call: tuple[str, str] | None) -> None:
    assert action_to_call(action) == call


# --- the robust parser: each repair --------------------------------------------------------

ROBUST_CASES: list[tuple[str, int, str, set[str]]] = [
    (" I need to search X.\nAction 3: Search[X]", 3, "Search[X]", set()),
    (" I need to search X.\nAction 3:Search[X]", 3, "Search[X]", {"label_spacing"}),
    (" I need to search X.\nAction 3 :  Search[X]", 3, "Search[X]", {"label_spacing"}),
    (" I need to search X.\nAction: Search[X]", 3, "Search[X]", {"unnumbered_label"}),
    (" I need to search X.\nAction 4: Search[X]", 3, "Search[X]", {"wrong_step"}),
    (" I need to search X.\naction 3: Search[X]", 3, "Search[X]", {"label_case"}),
    (" I need to search X.\nAction 3: search [X]", 3, "search[X]", {"space_before_bracket"}),
    (" I need to search X.\nAction 3: Search[“X”]", 3, "Search[X]", {"quotes"}),
    (" I need to search X.\nAction 3: Search[‘X’]", 3, "Search[X]", {"quotes"}),
    (" I need to search X.\nAction 3: Search[「X」]", 3, "Search[X]", {"quotes"}),
    (" I need to search X.\nAction 3: Search[X", 3, "Search[X]", {"missing_bracket"}),
    (" I need to search X.\n\nAction 3: Search[X]", 3, "Search[X]", {"blank_line"}),
    ("\nAction 3: Search[X]", 3, "Search[X]", {"no_thought"}),
    ("Thought 3: I need to search X.\nAction 3: Search[X]", 3, "Search[X]", {"thought_label"}),
    (" I need to search X.\n**Action 3:** `Search[X]`", 3, "Search[X]", {"markdown"}),
    (
        " I need to search X.\nAction 3: Search[X]\nObservation: X is a city.\nThought 4: Done.\nAction 4: Finish[X]",
        3,
        "Search[X]",
        {"own_observation"},
    ),
    (
        " I need X.\nAction 3: Search[X]\nThought 4: Then Y.\nAction 4: Search[Y]",
        3,
        "Search[X]",
        {"several_actions", "trailing_text"},
    ),
    (" I need X.\nAction 3: Finish[X]\nThought 4: I am done.", 3, "Finish[X]", {"trailing_text"}),
    (
        " Both.\naction: search [“X”",
        3,
        "search[X]",
        {"unnumbered_label", "label_case", "space_before_bracket", "missing_bracket", "quotes"},
    ),
]


@pytest.mark.parametrize(("completion", "step", "action", "repairs"), ROBUST_CASES)
def test_robust_repairs(completion: str, step: int, action: str, repairs: set[str]) -> None:
    parsed = robust_parse(completion, step)
    assert parsed.action == action
    assert set(parsed.repairs) == repairs
    assert len(parsed.repairs) == len(set(parsed.repairs))  # each repair counted once per step
    assert action_to_call(parsed.action) is not None


def test_every_repair_has_a_case() -> None:
    covered = {repair for *_, repairs in ROBUST_CASES for repair in repairs}
    covered |= set(parse_act(" Action 2: Search[X]", 2, "robust").repairs)
    assert covered == set(REPAIRS)


def test_robust_takes_the_thought_without_its_label_or_blank_lines() -> None:
    parsed = robust_parse("Thought 2: First line.\nSecond line.\n\nAction 2: Lookup[k]", 2)
    assert parsed.thought == "First line.\nSecond line."


def test_robust_agrees_with_the_paper_on_canonical_steps() -> None:
    completion = " The eastern sector extends into the High Plains.\nAction 3: Search[High Plains]"
    assert robust_parse(completion, 3) == paper_parse(completion, 3)


def test_robust_keeps_straight_quotes_as_the_paper_executed_them() -> None:
    parsed = robust_parse(' Search it.\nAction 1: Search["Wallace and Gromit"]', 1)
    assert parsed.action == 'Search["Wallace and Gromit"]'


def test_only_a_matching_pair_of_quotes_is_removed() -> None:
    assert normalize_action("Search[“X]") == ("Search[“X]", ())
    assert normalize_action("Search[The “Bard” of Avon]") == ("Search[The “Bard” of Avon]", ())


# --- the robust parser never invents an action ---------------------------------------------


@pytest.mark.parametrize(
    "completion",
    [
        " I should Search[Eiffel Tower] next.",  # an action-shaped phrase inside a thought
        " I should search Colorado. Action 3: Search[Colorado]",  # the label is not at a line start
        " I need to search X.\nAction 3:",  # an empty action
        " I need to search X.\nAction 3:   \n",
        " I need to search X.\nObservation 3: X is a city.\nAction 3: Search[X]",  # after its own observation
        " I need to search X.\nActions: Search[X]",
        " I need to search X.\nAction Input: Search[X]",
        "",
    ],
)
def test_robust_never_invents_an_action(completion: str) -> None:
    assert robust_parse(completion, 3).action is None


@pytest.mark.parametrize(("completion", "step", "action", "repairs"), ROBUST_CASES)
def test_robust_action_is_made_of_what_the_model_wrote(
    completion: str, step: int, action: str, repairs: set[str]
) -> None:
    call = action_to_call(robust_parse(completion, step).action or "")
    assert call is not None
    name, argument = call
    assert name in completion.lower() and argument in completion


def test_a_thought_may_begin_with_the_word_observation() -> None:
    parsed = robust_parse(" Observation 2 says X.\nAction 3: Search[X]", 3)
    assert parsed == ParsedStep("Observation 2 says X.", "Search[X]")


# --- act mode and the re-ask answer --------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "paper", "robust", "repairs"),
    [
        (" Search[Milhouse]", "Search[Milhouse]", "Search[Milhouse]", set()),
        (" search [“Milhouse”]", "search [“Milhouse”]", "search[Milhouse]", {"space_before_bracket", "quotes"}),
        (" Action 2: Search[Milhouse]", "Action 2: Search[Milhouse]", "Search[Milhouse]", {"action_label"}),
        (" Search[M]\nObservation: M.", "Search[M]\nObservation: M.", "Search[M]", {"own_observation"}),
        (" Search[A]\nAction 3: Search[B]", "Search[A]\nAction 3: Search[B]", "Search[A]", {"trailing_text"}),
        (" Lookup[named after", "Lookup[named after", "Lookup[named after]", {"missing_bracket"}),
    ],
)
def test_act_mode(completion: str, paper: str, robust: str, repairs: set[str]) -> None:
    assert parse_act(completion, 2, "paper") == ParsedStep("", paper)
    parsed = parse_act(completion, 2, "robust")
    assert (parsed.thought, parsed.action, set(parsed.repairs)) == ("", robust, repairs)


@pytest.mark.parametrize("parser", ["paper", "robust"])
def test_act_mode_without_text_has_no_action(parser: str) -> None:
    assert parse_act("  \n", 1, parser).action is None  # type: ignore[arg-type]


def test_parse_step_dispatches() -> None:
    completion = " Go.\nAction: Search[X]"
    assert parse_step(completion, 1, "paper").action is None
    assert parse_step(completion, 1, "robust").action == "Search[X]"


# --- answers of CoT / Standard -------------------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "answer", "source"),
    [
        (" Let's think step by step. So the answer is France.\nAnswer: France", "France", "answer_label"),
        (" The claim names the wrong town.\nAnswer:REFUTES", "REFUTES", "answer_label"),
        (" Reasoning.\n**Answer:** NOT ENOUGH INFO", "NOT ENOUGH INFO", "answer_label"),
        (" Reasoning.\nAnswer: Yes\nQuestion: Is water wet?\nAnswer: No", "Yes", "answer_label"),
        (" Reasoning ends.\nAction: Finish[1,200 ft]", "1,200 ft", "finish"),
        (" I thought A, but the answer is B, so the answer is Jean Monnet.", "Jean Monnet", "so_the_answer_is"),
        (" Six times seven, so the answer is 42.\n", "42", "so_the_answer_is"),
    ],
)
def test_extract_answer(completion: str, answer: str, source: str) -> None:
    extracted = extract_answer(completion)
    assert extracted is not None
    assert (extracted.answer, extracted.source) == (answer, source)


def test_standard_answer_is_the_first_line_after_the_prompts_answer_label() -> None:
    extracted = extract_answer(" Jean Monnet\nQuestion: Who else?\nAnswer: nobody", after_answer_label=True)
    assert extracted is not None and (extracted.answer, extracted.source) == ("Jean Monnet", "first_line")


@pytest.mark.parametrize(
    "completion",
    [" I cannot tell from what I know.", " Reasoning.\nAnswer:", " Reasoning.\nQuestion: next?\nAnswer: X", ""],
)
def test_no_answer_is_none(completion: str) -> None:
    assert extract_answer(completion) is None


def test_no_answer_after_the_label_is_none() -> None:
    assert extract_answer("  \nQuestion: x", after_answer_label=True) is None


def test_think_is_an_action_the_environment_knows() -> None:
    # the original environment answers think[...] with "Nice thought."; it is read like the others
    assert action_to_call("Think[about it]") == ("think", "about it")
