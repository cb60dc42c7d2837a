"""The classic text runner: a benchmark's text protocol (the task's ``TextFormat``) on the loop.

Per step ``i`` the prompt is ``instruction + exemplars`` (the same for every example of a run),
the format's opening of the first observation (HotpotQA ``Question: ...``; ALFWorld the room
and the task), one piece per finished step, and the format's suffix (``Thought {i}:``, ``>``,
``Action:``). The completion is cut at the format's stops and parsed by the format; where it
names no action (HotpotQA's failed split) the format's re-ask is sent with stop ``\n`` and
counted as a bad call. The action text becomes an ``environment.Action`` through the format's
grammar, given the actions the environment offers; the text as executed is recorded with it.

With ``NumberedFormat`` and ``parser="paper"`` this is exactly the original HotpotQA / FEVER
code: the re-ask keeps the first line as the thought; the first letter of the action is
lower-cased before execution (the wiki grammar); observations have literal ``\n`` removed. An
empty answer to the re-ask is executed as the empty action, which the environment answers as
invalid (the original crashed, indexing the empty string); the episode goes on.

What is sent of the history is the context view's business (``context.ContextView``): full,
truncated, compacted, or cut to a window of characters (WebShop's notebook kept the last
``6400 - len(prompt)`` characters of the trajectory). How the text reaches each kind of model
is ``runners.common.complete_text``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from react_bench.context import ContextView
from react_bench.events import AgentEvent, ParseError
from react_bench.loop import Decision, ToolCall
from react_bench.models.base import ModelClient, ModelRequest, ToolSpec
from react_bench.models.stopping import REASK_STOP
from react_bench.prompts import PromptSpec
from react_bench.runners.common import Completion, Sampling, StepStats, complete_text, text_request, viewed
from react_bench.runners.formats import TextFormat
from react_bench.runners.parsing import ParserName, extract_answer, parse_act
from react_bench.types import Message, ToolResultBlock, Usage


def base_parts(prompt: PromptSpec, opening: str) -> list[str]:
    """The prompt before any step: instruction and exemplars (the same for every example of a
    run, so a prompt cache shares them), then the example's opening."""
    return [f"{prompt.instruction}{prompt.exemplars}", opening]


def base_prompt(prompt: PromptSpec, opening: str) -> str:
    return "".join(base_parts(prompt, opening))


@dataclass
class TextPolicy:
    """ReAct (``style="react"``) or Act (``style="act"``) over the task's text format."""

    model: ModelClient
    prompt: PromptSpec
    question: str  # the first observation
    text_format: TextFormat
    actions: tuple[ToolSpec, ...] = ()  # what the environment offers (the grammar reads actions by them)
    style: Literal["react", "act"] = "react"
    parser: ParserName = "paper"
    sampling: Sampling = Sampling()
    stats: StepStats = field(default_factory=StepStats)
    context: ContextView = field(default_factory=ContextView)
    last_step: int | None = None  # no request follows this step's: its newest turn is not written to the cache
    memory: str = ""  # mode=reflexion: the reflections, just before the opening (reflexion.memory_text)

    def scratchpad_parts(self, history: Sequence[Message], first_step: int = 1) -> list[str]:
        """One piece per finished step: the turn as stored, and its observation."""
        parts: list[str] = []
        for step, (turn, results) in enumerate(zip(history[0::2], history[1::2], strict=False), start=first_step):
            observation = "".join(b.content for b in results.content if isinstance(b, ToolResultBlock))
            parts.append(self.text_format.piece(step, turn.text, observation))
        return parts

    def scratchpad(self, history: Sequence[Message]) -> str:
        return "".join(self.scratchpad_parts(history))

    def _base(self) -> list[str]:
        return base_parts(self.prompt, self.memory + self.text_format.opening(self.question))

    async def _viewed_parts(self, history: Sequence[Message]) -> tuple[list[str], Usage]:
        """The prompt's parts as the context view sends them, and what a summary call cost."""
        view = await viewed(self.context, self.model, history, self.scratchpad, self.stats)
        head = [view.summary_text] if view.summary_text else []
        return self._base() + head + self.scratchpad_parts(view.history, view.covered + 1), view.spent

    def _fitted(self, parts: list[str], suffix: str) -> tuple[list[str], str]:
        """The character window (WebShop's notebook): the trajectory after the exemplars keeps
        its last ``window - len(instruction + exemplars)`` characters, the suffix included."""
        window = self.context.window_chars
        if window is None:
            return parts, suffix
        keep = max(window - len(parts[0]), len(suffix)) - len(suffix)
        body = "".join(parts[1:])
        if len(body) <= keep:
            return parts, suffix
        return [parts[0], body[len(body) - keep :]], suffix

    def first_request(self) -> ModelRequest:
        """The request of step 1, as ``decide`` sends it (what the run records as not applied)."""
        return self.request_at((), 1)

    def request_at(self, history: Sequence[Message], step: int) -> ModelRequest:
        """The request of ``step`` after ``history`` (the finished steps before it), the whole
        history in view (no compaction or summary call): what a recorded trajectory replays into."""
        parts, suffix = self._fitted(
            self._base() + self.scratchpad_parts(history), self.text_format.suffix(step, self.style)
        )
        return text_request(self.model, parts, suffix, self.text_format.stops(step), self.sampling, _cache(parts))

    async def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        fmt = self.text_format
        prompt, usage = await self._viewed_parts(history)
        suffix = fmt.suffix(step, self.style)
        completion = ""
        newest = 2 if step == self.last_step else 1  # the last step reads what the step before wrote
        async for item in self._complete(prompt, suffix, fmt.stops(step), step, newest):
            if isinstance(item, Completion):
                completion = item.text
                usage += item.usage
            else:
                yield item
        parsed = fmt.parse(completion, step, self.style, self.parser)
        self.stats.add_repairs(parsed.repairs)
        thought, action = parsed.thought, parsed.action
        if action is None:
            self.stats.bad_calls += 1
            yield ParseError(step, completion, f"no `Action {step}:` in the completion; asking again for the action")
            reask = fmt.reask(step, self.style, thought) or suffix
            async for item in self._complete(prompt, reask, [REASK_STOP], step):
                if isinstance(item, Completion):
                    usage += item.usage
                    reparsed = parse_act(item.text, step, self.parser)
                    self.stats.add_repairs(reparsed.repairs)
                    action = reparsed.action or ""
                else:
                    yield item
        assert action is not None
        executed = fmt.grammar(action, self.actions)
        call = ToolCall(f"step-{step}", executed.name, executed.arguments, text=executed.text)
        yield Decision(Message.assistant(fmt.turn(step, self.style, thought, action)), (call,), usage=usage)

    async def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        asked = self.text_format.wrap_up(step)
        if asked is None:
            raise ValueError("this task's text format has no answer action to wrap up with: use on_limit=give_up")
        suffix, stops, closing = asked
        parts, usage = await self._viewed_parts(history)
        prompt = [*parts, f"({notice})\n"]
        answer = ""
        async for item in self._complete(prompt, suffix, stops, step, newest=3):  # read what step N wrote
            if isinstance(item, Completion):
                answer, usage = item.text.strip(), usage + item.usage
            else:
                yield item
        yield Decision(Message.assistant(f"{suffix}{answer}{closing}"), answer=answer, usage=usage)

    async def _complete(
        self, parts: list[str], suffix: str, stop: Sequence[str], step: int, newest: int = 1
    ) -> AsyncIterator[AgentEvent | Completion]:
        parts, suffix = self._fitted(parts, suffix)
        cache = _cache(parts, newest)
        async for item in complete_text(self.model, parts, suffix, stop, self.sampling, step, self.stats, cache):
            yield item


def answer_suffix(style: Literal["cot", "standard"]) -> str:
    """What a CoT or Standard prompt ends with: the model writes on from there."""
    return "Thought:" if style == "cot" else "Answer:"


@dataclass
class AnswerPolicy:
    """Standard and CoT prompting: one call, no actions; the turn is the answer."""

    model: ModelClient
    prompt: PromptSpec
    question: str
    label: str = "Question"  # how the prompt introduces the example (the task's format's label)
    style: Literal["cot", "standard"] = "cot"
    sampling: Sampling = Sampling()
    stats: StepStats = field(default_factory=StepStats)

    def _suffix_and_stop(self) -> tuple[str, list[str]]:
        return answer_suffix(self.style), [f"\n{self.label}:"] if self.style == "cot" else ["\n"]

    def _cache_after(self) -> tuple[int, ...]:
        # the exemplars repeat across questions; the question repeats only across CoT-SC samples
        return (0, 1) if self.sampling.sample_index is not None else (0,)

    def first_request(self) -> ModelRequest:
        suffix, stop = self._suffix_and_stop()
        parts = base_parts(self.prompt, f"{self.label}: {self.question}\n")
        return text_request(self.model, parts, suffix, stop, self.sampling, self._cache_after())

    async def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        parts = base_parts(self.prompt, f"{self.label}: {self.question}\n")
        suffix, stop = self._suffix_and_stop()
        completion, usage = "", Usage()
        cache = self._cache_after()
        async for item in complete_text(self.model, parts, suffix, stop, self.sampling, step, self.stats, cache):
            if isinstance(item, Completion):
                completion, usage = item.text, item.usage
            else:
                yield item
        extracted = extract_answer(completion, after_answer_label=self.style == "standard")
        answer = extracted.answer if extracted else ""
        yield Decision(Message.assistant(f"{suffix}{completion}"), answer=answer, usage=usage)

    async def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        raise AssertionError("a one-call policy never reaches the step cap")
        yield  # pragma: no cover


def _cache(parts: Sequence[str], newest: int = 1) -> tuple[int, ...]:
    """Breakpoints of an agent step: after the exemplars (shared by every question) and after
    the ``newest``-th part from the end. 1 for a step: its prompt, which the next request
    repeats (written now, read then). When no request follows, the breakpoint goes where the
    request before wrote its own, so that prefix is read and nothing new is written (a write
    costs 1.25x; one never read is waste): 2 for the last step (the request before ended one
    step piece earlier), 3 for the wrap-up (it adds the last step's piece and its notice)."""
    return tuple(dict.fromkeys((0, max(0, len(parts) - newest))))
