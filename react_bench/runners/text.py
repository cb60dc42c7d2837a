"""The classic text runner: the paper's Thought / Action / Observation protocol on the loop.

Per step ``i`` the prompt is ``instruction + exemplars + "Question: ..."`` (FEVER:
``Claim: ...``) plus the scratchpad so far, ending in ``Thought {i}:`` (Act: ``Action {i}:``).
The completion is cut at ``\\nObservation {i}:`` and the action read from after
``\\nAction {i}: ``. With ``parser="paper"`` this is exactly the original code: when the split
fails, the first line is kept as the thought and the model is asked again with
``Thought {i}: {thought}\\nAction {i}:`` and stop ``\\n`` (a "bad call"); the first letter of
the action is lower-cased before execution; observations have literal ``\\n`` removed.
``parser="robust"`` repairs common format slips first (each repair counted) and re-asks
only when no action can be found. An empty answer to the re-ask is executed as the empty
action, which the environment answers ``Invalid action: `` (the original code crashed on it,
indexing the empty string); the episode goes on.

How the text reaches each kind of model is ``runners.common.complete_text``'s business.
The environment sees paper-format action strings through ``TextActionEnv``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from react_bench.context import Compactor, ContextConfig, summary_block, truncate
from react_bench.events import AgentEvent, ParseError
from react_bench.loop import Decision, Observation, ToolCall
from react_bench.models.base import ModelClient, ModelRequest, ToolSpec
from react_bench.models.stopping import REASK_STOP, step_stop
from react_bench.prompts import PromptSpec
from react_bench.runners.common import Completion, Sampling, StepStats, complete_text, text_request
from react_bench.runners.parsing import extract_answer, parse_act, parse_step, reask_suffix
from react_bench.types import Message, ToolResultBlock, Usage
from react_bench.wiki.env import executed_text

Parser = Literal["paper", "robust"]
TEXT_ACTION_TOOL = "text_action"


class TextActionEnv:
    """Adapts a WikiEnv to the loop for the text runner: one tool taking the action string."""

    def __init__(self, env: Any):
        self.env = env

    def tools(self) -> tuple[ToolSpec, ...]:
        return ()

    async def execute(self, name: str, arguments: Mapping[str, Any]) -> Observation:
        if name != TEXT_ACTION_TOOL:
            raise ValueError(f"the text runner only executes {TEXT_ACTION_TOOL!r}, not {name!r}")
        return await self.env.step_text(str(arguments["action"]))


def base_parts(prompt: PromptSpec, question: str) -> list[str]:
    """The prompt before any step: instruction and exemplars (the same for every question of
    a run, so a prompt cache shares them), then the question line."""
    return [f"{prompt.instruction}{prompt.exemplars}", f"{prompt.label}: {question}\n"]


def base_prompt(prompt: PromptSpec, question: str) -> str:
    return "".join(base_parts(prompt, question))


def paper_observation(text: str) -> str:
    # The original code removes literal backslash-n pairs (not newlines) from observations.
    return text.replace("\\n", "")


@dataclass
class TextPolicy:
    """ReAct (``style="react"``) or Act (``style="act"``) over the text protocol."""

    model: ModelClient
    prompt: PromptSpec
    question: str
    style: Literal["react", "act"] = "react"
    parser: Parser = "paper"
    sampling: Sampling = Sampling()
    stats: StepStats = field(default_factory=StepStats)
    context: ContextConfig = field(default_factory=ContextConfig)

    def __post_init__(self) -> None:
        self._compactor = Compactor(self.context) if self.context.name == "compact" else None

    def scratchpad_parts(self, history: Sequence[Message], first_step: int = 1) -> list[str]:
        """One piece per finished step: its thought and action, and the observation."""
        parts: list[str] = []
        for step, (turn, results) in enumerate(zip(history[0::2], history[1::2], strict=False), start=first_step):
            observation = _result_text(results)
            parts.append(f"{turn.text}\nObservation {step}: {observation}\n")
        return parts

    def scratchpad(self, history: Sequence[Message]) -> str:
        return "".join(self.scratchpad_parts(history))

    def _parts(self, history: Sequence[Message]) -> list[str]:
        if self.context.name == "truncate":
            history = truncate(history, self.context.keep_last)
        return base_parts(self.prompt, self.question) + self.scratchpad_parts(history)

    async def _viewed_parts(self, history: Sequence[Message]) -> tuple[list[str], Usage]:
        """The prompt's parts as the context setting sends them, and what a summary call cost."""
        if self._compactor is None:
            return self._parts(history), Usage()
        calls = self._compactor.calls
        summary, rest, spent = await self._compactor.view(self.model, history, self.scratchpad)
        self.stats.calls += self._compactor.calls - calls  # the summary call counts like any other
        covered = self._compactor.covered
        head = [summary_block(summary, covered).text] if covered else []
        return base_parts(self.prompt, self.question) + head + self.scratchpad_parts(rest, covered + 1), spent

    def _step_suffix(self, step: int) -> str:
        return f"Action {step}:" if self.style == "act" else f"Thought {step}:"

    def first_request(self) -> ModelRequest:
        """The request of step 1, as ``decide`` sends it (what the run records as not applied)."""
        parts = self._parts(())
        return text_request(self.model, parts, self._step_suffix(1), [step_stop(1)], self.sampling, _cache(parts))

    async def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        prompt, usage = await self._viewed_parts(history)
        suffix = self._step_suffix(step)
        completion = ""
        async for item in self._complete(prompt, suffix, [step_stop(step)], step):
            if isinstance(item, Completion):
                completion = item.text
                usage += item.usage
            else:
                yield item
        parse = parse_act if self.style == "act" else parse_step
        parsed = parse(completion, step, self.parser)
        self.stats.add_repairs(parsed.repairs)
        thought, action = parsed.thought, parsed.action
        if action is None:
            self.stats.bad_calls += 1
            yield ParseError(step, completion, f"no `Action {step}:` in the completion; asking again for the action")
            reask = reask_suffix(step, thought) if self.style == "react" else suffix
            async for item in self._complete(prompt, reask, [REASK_STOP], step):
                if isinstance(item, Completion):
                    usage += item.usage
                    reparsed = parse_act(item.text, step, self.parser)
                    self.stats.add_repairs(reparsed.repairs)
                    action = reparsed.action or ""
                else:
                    yield item
        assert action is not None
        if self.style == "act":
            text = f"Action {step}: {action}"
        else:
            text = f"Thought {step}: {thought}\nAction {step}: {action}"
        # recorded as executed (``wiki.env.action_to_call`` reads it the same way)
        call = ToolCall(f"step-{step}", TEXT_ACTION_TOOL, {"action": executed_text(action)})
        yield Decision(Message.assistant(text), (call,), usage=usage)

    async def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        parts, usage = await self._viewed_parts(history)
        prompt = [*parts, f"({notice})\n"]
        suffix = f"Action {step}: Finish["
        answer = ""
        async for item in self._complete(prompt, suffix, ["]", "\n"], step):
            if isinstance(item, Completion):
                answer, usage = item.text.strip(), usage + item.usage
            else:
                yield item
        yield Decision(Message.assistant(f"{suffix}{answer}]"), answer=answer, usage=usage)

    async def _complete(
        self, parts: list[str], suffix: str, stop: Sequence[str], step: int
    ) -> AsyncIterator[AgentEvent | Completion]:
        cache = _cache(parts)
        async for item in complete_text(self.model, parts, suffix, stop, self.sampling, step, self.stats, cache):
            yield item


@dataclass
class AnswerPolicy:
    """Standard and CoT prompting: one call, no actions; the turn is the answer."""

    model: ModelClient
    prompt: PromptSpec
    question: str
    style: Literal["cot", "standard"] = "cot"
    sampling: Sampling = Sampling()
    stats: StepStats = field(default_factory=StepStats)

    def _suffix_and_stop(self) -> tuple[str, list[str]]:
        return ("Thought:", [f"\n{self.prompt.label}:"]) if self.style == "cot" else ("Answer:", ["\n"])

    def _cache_after(self) -> tuple[int, ...]:
        # the exemplars repeat across questions; the question repeats only across CoT-SC samples
        return (0, 1) if self.sampling.sample_index is not None else (0,)

    def first_request(self) -> ModelRequest:
        suffix, stop = self._suffix_and_stop()
        parts = base_parts(self.prompt, self.question)
        return text_request(self.model, parts, suffix, stop, self.sampling, self._cache_after())

    async def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        parts = base_parts(self.prompt, self.question)
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


def _cache(parts: Sequence[str]) -> tuple[int, ...]:
    """Breakpoints of an agent step: after the exemplars (shared by every question) and after
    the last step (the next step of the episode reads it)."""
    return tuple(dict.fromkeys((0, len(parts) - 1)))


def _result_text(message: Message) -> str:
    blocks = [b for b in message.content if isinstance(b, ToolResultBlock)]
    return paper_observation("".join(b.content for b in blocks))
