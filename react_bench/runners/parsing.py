"""Action parsers of the classic text runner, and answer extraction for CoT / Standard.

The runner builds a prompt ending in ``Thought {i}:`` and cuts the completion at
``\\nObservation {i}:``; this module turns that completion into a thought and an action.

Two parsers, one result type (``ParsedStep``):

- ``paper``: exactly the original code, ``thought, action = completion.strip().split(
  f"\\nAction {i}: ")``. Anything other than exactly one separator is a failed split:
  ``action`` is None and ``thought`` is the first line, which the caller uses for the re-ask
  (``reask_suffix``, stop ``stopping.REASK_STOP``) and counts as a bad call. The action text is kept
  verbatim (trailing lines included), because that is what the paper executed.
- ``robust``: finds the first line-initial ``Action`` label whatever its number, case,
  spacing or markdown, cuts the model's own ``Observation`` lines and anything after the
  action line, and repairs the action text (space before ``[``, curly / CJK quotes around the
  argument, a missing closing bracket). Every deviation from the canonical
  ``thought\\nAction {i}: Name[arg]`` is named in ``repairs`` so runs can count them per
  example. It never invents an action: without a line-initial ``Action`` label the result is
  None (the re-ask follows), and an action-shaped phrase inside a thought is never taken.
  Straight ASCII quotes are kept: the paper executed them as written.

How an action text is executed (the paper's semantics) is ``wiki.env.action_to_call``,
re-exported here for the parsers' callers.

Act mode (no thoughts) parses the completion after ``Action {i}:`` with ``parse_act``.
``extract_answer`` reads CoT / Standard completions (``Answer: X``, ``Finish[X]``,
``... so the answer is X.``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, assert_never, get_args

ParserName = Literal["paper", "robust"]
PARSERS: tuple[ParserName, ...] = get_args(ParserName)

Repair = Literal[
    "thought_label",  # the completion repeats its own "Thought {i}:" label (chat models)
    "action_label",  # an act-mode completion repeats its own "Action {i}:" label
    "own_observation",  # the model wrote an Observation line itself: cut there
    "no_thought",  # the action line comes first, with no thought before it
    "blank_line",  # blank line(s) between the thought and the action
    "unnumbered_label",  # "Action: ..."
    "wrong_step",  # "Action 4: ..." at step 3
    "label_case",  # "action 3: ..."
    "label_spacing",  # "Action 3:Search[x]", "Action  3 :  Search[x]"
    "markdown",  # "**Action 3:** `Search[x]`"
    "several_actions",  # more than one action label: the first is taken
    "trailing_text",  # text after the action line (a next thought, ...): dropped
    "space_before_bracket",  # "search [x]"
    "quotes",  # curly or CJK quotes around the whole argument
    "missing_bracket",  # "Search[x" at the end of the action line
]
REPAIRS: tuple[Repair, ...] = get_args(Repair)


class ThoughtAction(NamedTuple):
    thought: str
    action: str


@dataclass(frozen=True)
class ParsedStep:
    """One step's completion, parsed. ``action`` None means no action: re-ask (a bad call)."""

    thought: str
    action: str | None
    repairs: tuple[Repair, ...] = ()


def reask_suffix(step: int, thought: str) -> str:
    """What the paper appends to the prompt when the split failed; the answer is one line."""
    return f"Thought {step}: {thought}\nAction {step}:"


# --- the paper parser --------------------------------------------------------------------


def split_thought_action(completion: str, step: int) -> ThoughtAction | None:
    """The paper's split; None where it raised (zero or several separators)."""
    parts = completion.strip().split(f"\nAction {step}: ")
    if len(parts) != 2:
        return None
    return ThoughtAction(parts[0], parts[1])


def paper_parse(completion: str, step: int) -> ParsedStep:
    split = split_thought_action(completion, step)
    if split is None:
        return ParsedStep(thought=completion.strip().split("\n")[0], action=None)
    return ParsedStep(thought=split.thought, action=split.action)


def paper_parse_act(completion: str) -> ParsedStep:
    """Act mode and the re-ask answer: the paper takes the whole stripped completion."""
    action = completion.strip()
    return ParsedStep(thought="", action=action or None)


# --- the robust parser -------------------------------------------------------------------

_MD = r"(?:\*{1,2}|_{1,2})"
# Every pattern run on model text is linear in it (tests/test_hostile_input.py times each on
# 100 KB of adversarial text): no two adjacent runs of the same characters (``[ \t]*\d*[ \t]*``
# backtracks cubically on a run of spaces), spaces after a number or a markdown mark only where
# there is one.
_THOUGHT_LABEL = re.compile(rf"\A\s*{_MD}?thought[ \t]*(?:\d+[ \t]*)?(?:{_MD}[ \t]*)?:{_MD}?[ \t]?", re.IGNORECASE)
_OBSERVATION_LINE = re.compile(rf"^[ \t]*{_MD}?observation[ \t]*(?:\d+[ \t]*)?{_MD}?:", re.IGNORECASE | re.MULTILINE)
_ACTION_LABEL = re.compile(
    rf"^(?P<lead>[ \t]*)(?P<md1>{_MD})?(?P<word>action)(?P<sp1>[ \t]*)(?:(?P<num>\d+)(?P<sp2>[ \t]*))?"
    rf"(?P<md2>{_MD})?:(?P<md3>{_MD})?(?P<sp3>[ \t]*)(?P<rest>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_SPACED_NAME = re.compile(r"\A(\w+)[ \t]+\[")
_UNCLOSED = re.compile(r"\A\w+\[[^\]]*\Z")
_NAME_ARG = re.compile(r"\A(\w+)\[(.*)\]\Z", re.DOTALL)
# Opening quote -> the closing quotes that may end the argument (curly pairs, and the
# low/high German opening that closes with a left curly quote).
_QUOTE_PAIRS: dict[str, str] = {
    "“": "”“",
    "„": "“”",
    "‘": "’‘",
    "「": "」",
    "『": "』",
    "«": "»",
}


def _unique(*groups: Sequence[Repair]) -> tuple[Repair, ...]:
    """Each repair once, in the order first met (a run counts repairs per example)."""
    return tuple(dict.fromkeys(repair for group in groups for repair in group))


def _cut_own_observation(text: str) -> tuple[str, tuple[Repair, ...]]:
    match = _OBSERVATION_LINE.search(text)
    if match is None:
        return text, ()
    return text[: match.start()], ("own_observation",)


def _label_repairs(label: re.Match[str], step: int) -> list[Repair]:
    repairs: list[Repair] = []
    if label["num"] is None:
        repairs.append("unnumbered_label")
    elif int(label["num"]) != step:
        repairs.append("wrong_step")
    if label["word"] != "Action":
        repairs.append("label_case")
    if label["md1"] or label["md2"] or label["md3"]:
        repairs.append("markdown")
    canonical_sp1 = " " if label["num"] is not None else ""
    if label["lead"] or label["sp1"] != canonical_sp1 or label["sp2"] or label["sp3"] != " ":
        repairs.append("label_spacing")
    return repairs


def normalize_action(text: str) -> tuple[str | None, tuple[Repair, ...]]:
    """Repair one action text; None when nothing is left of it."""
    repairs: list[Repair] = []
    action = text.strip()
    if len(action) >= 2 and action[0] == action[-1] == "`":
        action = action.strip("`").strip()
        repairs.append("markdown")
    if not action:
        return None, tuple(repairs)
    if spaced := _SPACED_NAME.match(action):
        action = spaced[1] + action[spaced.end() - 1 :]
        repairs.append("space_before_bracket")
    if _UNCLOSED.match(action):
        action = action.rstrip() + "]"
        repairs.append("missing_bracket")
    if name_arg := _NAME_ARG.match(action):
        argument = name_arg[2].strip()
        if len(argument) >= 2 and argument[-1] in _QUOTE_PAIRS.get(argument[0], ""):
            action = f"{name_arg[1]}[{argument[1:-1]}]"
            repairs.append("quotes")
    return action, tuple(repairs)


def robust_parse(completion: str, step: int) -> ParsedStep:
    repairs: list[Repair] = []
    text = completion
    if label := _THOUGHT_LABEL.match(text):
        text = text[label.end() :]
        repairs.append("thought_label")
    text, cut = _cut_own_observation(text)
    repairs.extend(cut)
    labels = list(_ACTION_LABEL.finditer(text))
    if not labels:
        return ParsedStep(thought=text.strip().split("\n")[0], action=None, repairs=tuple(repairs))
    first = labels[0]
    before = text[: first.start()]
    thought = before.strip()
    if not thought:
        repairs.append("no_thought")
    elif re.search(r"\n[ \t]*\n[ \t]*\Z", before):
        repairs.append("blank_line")
    repairs.extend(_label_repairs(first, step))
    if len(labels) > 1:
        repairs.append("several_actions")
    if text[first.end() :].strip():
        repairs.append("trailing_text")
    action, action_repairs = normalize_action(first["rest"])
    return ParsedStep(thought=thought, action=action, repairs=_unique(repairs, action_repairs))


def robust_parse_act(completion: str, step: int) -> ParsedStep:
    """Act mode / re-ask answer: the first line, without a repeated ``Action {i}:`` label."""
    repairs: list[Repair] = []
    text, cut = _cut_own_observation(completion)
    repairs.extend(cut)
    text = text.strip()
    if (label := _ACTION_LABEL.match(text)) is not None:
        repairs.append("action_label")
        repairs.extend(_label_repairs(label, step))
        text = label["rest"] + text[label.end() :]
    line, _, rest = text.strip().partition("\n")
    if rest.strip():
        repairs.append("trailing_text")
    action, action_repairs = normalize_action(line)
    return ParsedStep(thought="", action=action, repairs=_unique(repairs, action_repairs))


# --- dispatch ----------------------------------------------------------------------------


def parse_step(completion: str, step: int, parser: ParserName) -> ParsedStep:
    """A ReAct step's completion (after ``Thought {step}:``) with the chosen parser."""
    match parser:
        case "paper":
            return paper_parse(completion, step)
        case "robust":
            return robust_parse(completion, step)
        case unreachable:
            assert_never(unreachable)


def parse_act(completion: str, step: int, parser: ParserName) -> ParsedStep:
    """An act-mode completion (after ``Action {step}:``), or the re-ask's answer."""
    match parser:
        case "paper":
            return paper_parse_act(completion)
        case "robust":
            return robust_parse_act(completion, step)
        case unreachable:
            assert_never(unreachable)


# --- answers of CoT / Standard -------------------------------------------------------------

AnswerSource = Literal["first_line", "answer_label", "finish", "so_the_answer_is"]


@dataclass(frozen=True)
class ExtractedAnswer:
    answer: str
    source: AnswerSource


# The model going on with a new exemplar ends its answer.
_NEXT_EXAMPLE = re.compile(r"\n[ \t]*(?:Question|Claim)[ \t]*:", re.IGNORECASE)
_ANSWER_LABEL = re.compile(
    rf"^[ \t]*{_MD}?answer{_MD}?[ \t]*:{_MD}?[ \t]*(?P<answer>.*)$", re.IGNORECASE | re.MULTILINE
)
_FINISH_OPEN = re.compile(r"finish[ \t]*\[", re.IGNORECASE)


def first_closed(text: str, opening: re.Pattern[str], closer: str) -> str | None:
    """What lies between the first match of ``opening`` and the next ``closer`` on the same line:
    what ``opening(.*?)closer`` (``.`` short of a newline) would find, but linear: the next
    ``closer`` and newline are looked up once each as the openings advance, not once per
    opening (the regex rescans the rest of the line from every opening)."""
    close = newline = -1
    for found in opening.finditer(text):
        start = found.end()
        if close < start:
            close = text.find(closer, start)
            if close == -1:
                return None  # no closer after this opening: none after a later one either
        if newline < start:
            at = text.find("\n", start)
            newline = len(text) if at == -1 else at
        if close < newline:
            return text[start:close]
    return None


def _finish_answer(text: str) -> str | None:
    """The first ``finish[...]`` closed on its line: its argument (``finish[ \\t]*\\[([^\\]\\n]*)\\]``)."""
    return first_closed(text, _FINISH_OPEN, "]")


_SO_THE_ANSWER = re.compile(r"the answer is[ \t:]*", re.IGNORECASE)


def extract_answer(completion: str, *, after_answer_label: bool = False) -> ExtractedAnswer | None:
    """The answer in a CoT / Standard completion; None when there is none.

    ``after_answer_label``: the prompt already ended in ``Answer:`` (Standard), so the first
    line is the answer. Otherwise, in order: an ``Answer:`` line, ``Finish[...]``, and the last
    ``... the answer is X.`` (its final period dropped).
    """
    text = _NEXT_EXAMPLE.split(completion, maxsplit=1)[0]
    if after_answer_label:
        first = text.strip().split("\n")[0].strip()
        return ExtractedAnswer(first, "first_line") if first else None
    if (label := _ANSWER_LABEL.search(text)) and label["answer"].strip():
        return ExtractedAnswer(label["answer"].strip(), "answer_label")
    if (finish := _finish_answer(text)) is not None:
        return ExtractedAnswer(finish.strip(), "finish")
    phrases = list(_SO_THE_ANSWER.finditer(text))
    if phrases:
        answer = text[phrases[-1].end() :].split("\n")[0].strip()
        answer = answer[:-1].rstrip() if answer.endswith(".") else answer
        if answer:
            return ExtractedAnswer(answer, "so_the_answer_is")
    return None
