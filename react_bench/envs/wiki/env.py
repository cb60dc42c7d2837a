"""The Wikipedia environment of the ReAct paper: ``search``, ``lookup``, ``finish``, per episode.

Observation strings follow the original ``wikienv.py`` (ysymyth/ReAct) so that the paper's
prompts work unchanged:

- a page's text is paragraphs separated by ``"\\n"``; its sentences are the pieces of each
  stripped, non-empty paragraph split on ``". "``, each stripped and given a ``"."`` back.
  (So a sentence that already ends with a period gets a second one, ``"...2001.."``; the
  original does exactly that, and the paper's models saw it.)
- ``search[entity]`` found: the first 5 sentences joined by one space; the lookup cursor is
  reset. Not found: ``Could not find {entity}. Similar: ['A', 'B'].`` (Python list repr,
  at most 5 titles); the current page and cursor stay as they were. A disambiguation page
  (live Wikipedia) reads ``Could not find [{entity}]. Similar: [...]``: the original
  searched again for ``[entity]`` and reported that string (with that search's results;
  ours lists the disambiguation page's first options).
- ``lookup[keyword]``: the sentences of the current page that contain the keyword
  (case-insensitive), one per call, ``(Result {k} / {n}) {sentence}``, then
  ``No more results.\\n``. The cursor restarts only when the keyword string changes.
- ``finish[answer]`` ends the episode; later actions repeat its observation.
- anything else: ``Invalid action: {action}``; the original's ``think[...]`` gives
  ``Nice thought.``

Deliberate differences from the original, each small: lookup before any page says so (the
original answered ``No more results.``); the finish observation is ``Episode finished.\\n``
(the original's task wrappers printed ``Episode finished, reward = <reward>`` with the real
score of the answer against the gold: EM for HotpotQA, label match for FEVER; the episode
ends there, so the model never reads it, and we keep the gold out of the trajectory); a
backend failure (live Wikipedia unreachable) is an error observation instead of an exception.

``WikiEnv`` is the ``react_bench.environment.Environment`` of these tasks; ``text_action`` is its
grammar for the text runner (the first letter lower-cased, then stripped, in the original's
order), and ``step_text`` executes a paper-format string through it. One ``WikiEnv`` per
episode; the backend is shared by all episodes of a run and must be thread-safe: its blocking
calls run in a worker thread (``environment.run_blocking``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, assert_never

from react_bench.environment import (
    UNPARSED,
    Action,
    Example,
    Observation,
    action_parameter,
    run_blocking,
    string_action,
)
from react_bench.models.base import ToolSpec
from react_bench.runners.formats import NumberedFormat

MAX_SIMILAR = 5
PAGE_SENTENCES = 5
NO_MORE_RESULTS = "No more results.\n"
NO_PAGE = "There is no page to look up in yet: use search[entity] first.\n"
FINISHED = "Episode finished.\n"


@dataclass(frozen=True)
class Page:
    title: str
    text: str  # paragraphs separated by "\n"


@dataclass(frozen=True)
class PageFound:
    page: Page


@dataclass(frozen=True)
class NotFound:
    similar: tuple[str, ...]
    # The entity named a disambiguation page. The original then searched "[entity]" and so
    # reported "Could not find [entity]. ..."; the observation keeps those brackets.
    disambiguation: bool = False


@dataclass(frozen=True)
class SearchFailed:
    message: str


SearchOutcome = PageFound | NotFound | SearchFailed


class WikiBackend(Protocol):
    """A source of pages. ``search`` is blocking and must be safe to call from many threads."""

    name: str

    def search(self, entity: str) -> SearchOutcome: ...


def outcome_to_dict(outcome: SearchOutcome) -> dict[str, Any]:
    match outcome:
        case PageFound(page):
            return {"kind": "page", "title": page.title, "text": page.text}
        case NotFound(similar, disambiguation):
            return {"kind": "not_found", "similar": list(similar), "disambiguation": disambiguation}
        case SearchFailed(message):
            return {"kind": "failed", "message": message}
        case _:
            assert_never(outcome)


def outcome_from_dict(data: Mapping[str, Any]) -> SearchOutcome:
    kind = data["kind"]
    if kind == "page":
        return PageFound(Page(data["title"], data["text"]))
    if kind == "not_found":
        return NotFound(tuple(data["similar"]), bool(data.get("disambiguation", False)))
    if kind == "failed":
        return SearchFailed(data["message"])
    raise ValueError(f"unknown search outcome kind {kind!r}")


def page_sentences(text: str) -> list[str]:
    """The original's sentence split (see the module docstring), quirks included."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        if paragraph:
            sentences += paragraph.split(". ")
    return [s.strip() + "." for s in sentences if s.strip()]


def page_observation(text: str) -> str:
    return " ".join(page_sentences(text)[:PAGE_SENTENCES])


def not_found_observation(entity: str, similar: tuple[str, ...]) -> str:
    return f"Could not find {entity}. Similar: {list(similar[:MAX_SIMILAR])}."


WIKI_TOOLS: tuple[ToolSpec, ...] = (
    string_action(
        "search",
        "Search Wikipedia for an exact entity. Returns the first sentences of its page, "
        "or a list of similar titles to search instead when there is no such page.",
        "entity",
        "The page title to look for, e.g. 'Eiffel Tower'.",
    ),
    string_action(
        "lookup",
        "Return the next sentence of the current page that contains the keyword "
        "(case-insensitive). Repeat the same keyword for the following match.",
        "keyword",
        "The text to look for in the current page.",
    ),
    string_action(
        "finish",
        "Give the final answer and end the task.",
        "answer",
        "The final answer.",
    ),
)
TEXT_ACTIONS: tuple[str, ...] = ("search", "lookup", "finish", "think")
TOOL_PARAMS: dict[str, str] = {spec.name: next(iter(spec.input_schema["properties"])) for spec in WIKI_TOOLS}
THINK_PARAM = "thought"  # think[...] exists in the text grammar only (the original answered it)


def executed_text(action: str) -> str:
    """The action as the original environment executes it: its first character lower-cased."""
    return action[:1].lower() + action[1:]


def action_to_call(action: str, names: Sequence[str] = TEXT_ACTIONS) -> tuple[str, str] | None:
    """The paper's execution of an action text: ``(name, argument)``, or None if invalid.

    As the original ``wikienv.step``: the first character is lower-cased, then the text is
    stripped, then it must read ``name[argument]`` exactly, for one of ``names``.
    """
    text = executed_text(action).strip()
    for name in names:
        if text.startswith(name + "[") and text.endswith("]"):
            return name, text[len(name) + 1 : -1]
    return None


def text_action(text: str, actions: Sequence[ToolSpec] = WIKI_TOOLS) -> Action:
    """The Wikipedia grammar of the text runner: ``Name[argument]`` for any of ``actions`` (the
    environment's, a wrapper's included) and ``think[...]``, read as ``action_to_call`` reads it.
    A text that names none of them is the unparsed action (``Invalid action: ...``)."""
    params = {spec.name: action_parameter(spec) or "input" for spec in actions}
    params.setdefault("think", THINK_PARAM)
    executed = executed_text(text)
    call = action_to_call(text, tuple(params))
    if call is None:
        return Action(UNPARSED, {}, executed)
    name, argument = call
    return Action(name, {params[name]: argument}, executed)


class WikiEnv:
    """One episode's view of a wiki: current page, lookup cursor, answer."""

    def __init__(self, backend: WikiBackend):
        self.backend = backend
        self.page: Page | None = None
        self.answer: str | None = None
        self._finish_observation: Observation | None = None
        self._lookup_keyword: str | None = None
        self._lookup_results: list[str] = []
        self._lookup_next = 0
        # Actions of one turn may run concurrently; the lock applies them one at a time,
        # in the order they were issued (asyncio.Lock is FIFO).
        self._lock = asyncio.Lock()

    def actions(self) -> tuple[ToolSpec, ...]:
        return WIKI_TOOLS

    async def reset(self, example: Example) -> Observation:
        """The first observation is the question (or claim) itself."""
        return Observation(example.question)

    def close(self) -> None:
        pass  # the backend is the factory's, shared by every episode and closed once per run

    async def step(self, action: Action) -> Observation:
        name = action.name
        if action.text is not None and name not in TOOL_PARAMS:  # the text runner: think, or invalid
            return await self._act("think" if name == "think" else "invalid", action.text.strip())
        param = TOOL_PARAMS.get(name)
        if param is None:
            return Observation(f"Invalid action: {name}", is_error=True)
        value = action.arguments.get(param)
        if not isinstance(value, str):
            return Observation(f'Invalid arguments for {name}: expected {{"{param}": string}}', is_error=True)
        return await self._act(name, value)

    async def step_text(self, text: str) -> Observation:
        """Execute a paper-format action string such as ``Search[Eiffel Tower]``."""
        return await self.step(text_action(text))

    async def _act(self, name: str, argument: str) -> Observation:
        async with self._lock:
            if self._finish_observation is not None:
                return self._finish_observation
            if name == "search":
                return await self._search(argument)
            if name == "lookup":
                return self._lookup(argument)
            if name == "finish":
                self.answer = argument
                self._finish_observation = Observation(FINISHED, final_answer=argument)
                return self._finish_observation
            if name == "think":
                return Observation("Nice thought.")
            return Observation(f"Invalid action: {argument}", is_error=True)

    async def _search(self, entity: str) -> Observation:
        outcome = await run_blocking(self.backend.search, entity)
        match outcome:
            case PageFound(page):
                self.page = page
                self._lookup_keyword = None
                self._lookup_results = []
                self._lookup_next = 0
                return Observation(page_observation(page.text))
            case NotFound(similar, disambiguation):
                return Observation(not_found_observation(f"[{entity}]" if disambiguation else entity, similar))
            case SearchFailed(message):
                return Observation(f"Search failed for {entity}: {message}", is_error=True)
            case _:
                assert_never(outcome)

    def _lookup(self, keyword: str) -> Observation:
        if self.page is None:
            return Observation(NO_PAGE)
        if keyword != self._lookup_keyword:
            self._lookup_keyword = keyword
            needle = keyword.lower()
            self._lookup_results = [s for s in page_sentences(self.page.text) if needle in s.lower()]
            self._lookup_next = 0
        if self._lookup_next >= len(self._lookup_results):
            return Observation(NO_MORE_RESULTS)
        self._lookup_next += 1
        sentence = self._lookup_results[self._lookup_next - 1]
        return Observation(f"(Result {self._lookup_next} / {len(self._lookup_results)}) {sentence}")


def wiki_format(label: str = "Question") -> NumberedFormat:
    """The paper's HotpotQA / FEVER text format over this environment (``label``: ``Question`` or
    ``Claim``): its grammar, ``Finish[...]`` to wrap up, ``Episode finished.`` after an exemplar's
    answer (the tool-use runner's exemplar turns)."""
    return NumberedFormat(text_action, label, answer_action="Finish", answer_observation=FINISHED)
