"""The native tool-use runner: the environment's actions as tools (``tool_use`` /
``tool_result``) on the same loop as the text runner.

- The conversation is the loop's history after one first user message (the first observation,
  opened as the task's text format opens it: ``Question: ...``); the assistant turns are stored
  and resent verbatim (thinking and signatures included).
- A turn without ``tool_use`` is the exit: its text is the answer, shortened by
  ``parsing.extract_answer`` (``Answer: X`` or ``Finish[X]`` if present, else the last line).
  An action whose observation ends the episode (an answer action such as ``finish``, a game
  won) ends it through the environment instead.
- ``act`` style: no thinking, tool choice ``any`` (every turn must act) and an instruction
  to call tools without writing text. ``react`` style: free text (the thoughts) and tools,
  extended thinking optional. Parallel tool calls are allowed; the loop pairs results by id.
- Wrap-up at the step cap: the notice is added after the last tool results, tools stay
  declared (the API requires them while the history holds tool blocks) with choice ``none``.
- Few-shot exemplars (on by default; ``shots=0``: zero-shot, ``shots=k``: the first k): the
  text runner's exemplars, read back by the task's text format (``exemplar_episodes``), as
  native conversation turns before the question: each thought as text (a ``think`` action's
  thought too), each action as a ``tool_use`` block (the format's grammar names it), each
  observation as its ``tool_result`` (an answer action without one gets the environment's own,
  e.g. ``Episode finished.``). Both runners then see the same information. Prompt-cache
  breakpoints: the end of the exemplars (the same for every question of a run) and the end
  of the conversation (the next step reads it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from react_bench.context import ContextView
from react_bench.environment import UNPARSED
from react_bench.events import AgentEvent
from react_bench.loop import Decision, ToolCall
from react_bench.models.base import ModelClient, ModelRequest, ThinkingConfig, ToolSpec
from react_bench.prompts import PromptSpec
from react_bench.runners.common import StepStats, stream_turn, viewed
from react_bench.runners.formats import TextFormat
from react_bench.runners.parsing import extract_answer
from react_bench.types import ContentBlock, Message, ModelResponse, TextBlock, ToolResultBlock, ToolUseBlock


@dataclass
class ToolUsePolicy:
    model: ModelClient
    prompt: PromptSpec
    question: str  # the first observation
    tools: tuple[ToolSpec, ...]
    text_format: TextFormat
    style: Literal["react", "act"] = "react"
    thinking: ThinkingConfig | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    shots: int | None = None  # exemplars as native turns: None all, 0 none, k the first k
    stats: StepStats = field(default_factory=StepStats)
    context: ContextView = field(default_factory=ContextView)
    last_step: int | None = None  # no request follows this step's: its newest turn is not written to the cache
    memory: str = ""  # mode=reflexion: the reflections, just before the question (reflexion.memory_text)

    def _request(
        self, history: Sequence[Message], notice: str | None = None, summary: str = "", final: bool = False
    ) -> ModelRequest:
        shots = exemplar_conversation(self.prompt, self.style, self.shots, self.text_format, self.tools)
        question = TextBlock((self.memory + self.text_format.opening(self.question)).strip("\n"))
        if summary:  # compact: the summary closes the question's message
            question = TextBlock(f"{question.text}\n\n{summary}")
        if shots:  # the last exemplar ends with a user message of tool results: the question joins it
            opening = [*shots[:-1], Message("user", (*shots[-1].content, question))]
            points = [(len(shots) - 1, len(shots[-1].content) - 1)]
        else:
            opening, points = [Message("user", (question,))], []
        messages = [*opening, *history]
        if notice is not None:
            last = messages[-1]
            messages[-1] = Message(last.role, (*last.content, TextBlock(notice)))
        if not final:  # the newest turn: written now, read by the next request
            points.append((len(messages) - 1, len(messages[-1].content) - 1))
        elif notice is None and len(messages) - 3 >= len(opening) - 1:
            # no request follows: read what the request before wrote (its last message), write nothing
            # new. Not for the wrap-up: its tool_choice differs, so the API keeps no messages for it.
            points.append((len(messages) - 3, len(messages[-3].content) - 1))
        act = self.style == "act"
        thinking = None if act else self.thinking
        max_tokens = self.max_tokens
        if thinking is not None and thinking.budget_tokens:
            max_tokens = max(max_tokens, thinking.budget_tokens + self.max_tokens)
        return ModelRequest(
            messages=tuple(messages),
            system=self.prompt.instruction,
            tools=self.tools,
            tool_choice="none" if notice is not None else ("any" if act else "auto"),
            thinking=thinking,
            max_tokens=max_tokens,
            # The API refuses temperature together with extended thinking.
            temperature=None if thinking is not None else self.temperature,
            cache_points=tuple(dict.fromkeys(points)),
            shared_cache_points=1 if shots else 0,  # the exemplars' end: every example's prefix
        )

    async def _viewed(
        self, history: Sequence[Message], step: int, notice: str | None = None
    ) -> AsyncIterator[AgentEvent | Decision]:
        view = await viewed(self.context, self.model, history, _transcript, self.stats)
        sent = self.context.fit_steps(view.history, _transcript)
        final = notice is not None or step == self.last_step  # no later request reads this one's turn
        async for item in self._turn(self._request(sent, notice, view.summary_text, final), step):
            if isinstance(item, Decision) and view.spent.total_input_tokens:
                item = replace(item, usage=item.usage + view.spent)
            yield item

    async def _turn(self, request: ModelRequest, step: int) -> AsyncIterator[AgentEvent | Decision]:
        response: ModelResponse | None = None
        async for item in stream_turn(self.model, request, step, self.stats):
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None
        calls = tuple(ToolCall(b.id, b.name, b.input, b.input_error) for b in response.tool_uses)
        answer = "" if calls else short_answer(response.text)
        yield Decision(response.as_message(), calls, answer, response.usage)

    def first_request(self) -> ModelRequest:
        """The request of step 1, as ``decide`` sends it."""
        return self._request(())

    def request_at(self, history: Sequence[Message], step: int) -> ModelRequest:
        """The request of ``step`` after ``history`` (the finished steps before it), the whole
        history in view: what a recorded trajectory replays into."""
        return self._request(history, final=step == self.last_step)

    def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        return self._viewed(history, step)

    def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        return self._viewed(history, step, notice)


_EXEMPLARS: dict[tuple[object, ...], tuple[Message, ...]] = {}


def exemplar_conversation(
    prompt: PromptSpec, style: str, shots: int | None, text_format: TextFormat, tools: tuple[ToolSpec, ...]
) -> tuple[Message, ...]:
    """The text exemplars of ``prompt`` as tool-use turns (see the module docstring); the same
    for every request of a run, so built once."""
    key = (prompt, style, shots, text_format, tuple(t.name for t in tools))
    if key not in _EXEMPLARS:
        if len(_EXEMPLARS) > 64:
            _EXEMPLARS.clear()
        _EXEMPLARS[key] = _conversation(prompt, style, shots, text_format, tools)
    return _EXEMPLARS[key]


def _conversation(
    prompt: PromptSpec, style: str, shots: int | None, text_format: TextFormat, tools: tuple[ToolSpec, ...]
) -> tuple[Message, ...]:
    if shots == 0 or not prompt.exemplars.strip():
        return ()
    messages: list[Message] = []
    pending: list[ContentBlock] = []  # the next user message: tool results, then a question
    episodes = text_format.exemplar_episodes(prompt.exemplars)
    for count, episode in enumerate(episodes[:shots] if shots is not None else episodes, start=1):
        pending.append(TextBlock(episode.opening))
        thought = ""
        for number, step in enumerate(episode.steps, start=1):
            action = text_format.grammar(step.action, tools)
            if action.name == "think":  # a thought written as an action (ALFWorld, WebShop): text
                thought = " ".join(filter(None, (thought, str(next(iter(action.arguments.values()), "")))))
                continue
            thought = " ".join(filter(None, (thought, step.thought)))
            name, arguments = action.name, dict(action.arguments)
            if name == UNPARSED:  # an exemplar action the environment would not take: kept as written
                name, arguments = "invalid", {"input": step.action}
            messages.append(Message("user", tuple(pending)))
            tool_id = f"toolu_example_{count}_{number}"
            said = (TextBlock(thought),) if thought and style != "act" else ()
            messages.append(Message("assistant", (*said, ToolUseBlock(tool_id, name, arguments))))
            pending, thought = [ToolResultBlock(tool_id, step.observation or "")], ""
    if pending:
        messages.append(Message("user", tuple(pending)))
    return tuple(messages)


def _transcript(history: Sequence[Message]) -> str:
    """Turns as plain text, for the compaction call."""
    lines = []
    for message in history:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                lines.append(block.text)
            elif isinstance(block, ToolUseBlock):
                lines.append(f"Action: {block.name}({', '.join(map(str, block.input.values()))})")
            elif isinstance(block, ToolResultBlock):
                lines.append(f"Observation: {block.content}")
    return "\n".join(lines)


def short_answer(text: str) -> str:
    """The answer in a final turn's text: ``Answer: X`` / ``Finish[X]`` / ``the answer is X``
    where present, else its last non-empty line."""
    extracted = extract_answer(text)
    if extracted is not None:
        return extracted.answer
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
