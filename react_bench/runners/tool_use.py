"""The native tool-use runner: the environment's actions as tools (``tool_use`` /
``tool_result``) on the same loop as the text runner.

- The conversation is the loop's history after one first user message (the question); the
  assistant turns are stored and resent verbatim (thinking and signatures included).
- A turn without ``tool_use`` is the exit: its text is the answer, shortened by
  ``parsing.extract_answer`` (``Answer: X`` or ``Finish[X]`` if present, else the last line).
  Calling the ``finish`` tool ends the episode through the environment instead.
- ``act`` style: no thinking, tool choice ``any`` (every turn must act) and an instruction
  to call tools without writing text. ``react`` style: free text (the thoughts) and tools,
  extended thinking optional. Parallel tool calls are allowed; the loop pairs results by id.
- Wrap-up at the step cap: the notice is added after the last tool results, tools stay
  declared (the API requires them while the history holds tool blocks) with choice ``none``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from react_bench.events import AgentEvent
from react_bench.loop import Decision, ToolCall
from react_bench.models.base import ModelClient, ModelRequest, ThinkingConfig, ToolSpec
from react_bench.prompts import PromptSpec
from react_bench.runners.common import StepStats, stream_turn
from react_bench.runners.parsing import extract_answer
from react_bench.types import Message, ModelResponse, TextBlock


@dataclass
class ToolUsePolicy:
    model: ModelClient
    prompt: PromptSpec
    question: str
    tools: tuple[ToolSpec, ...]
    style: Literal["react", "act"] = "react"
    thinking: ThinkingConfig | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    stats: StepStats = field(default_factory=StepStats)

    def _request(self, history: Sequence[Message], notice: str | None = None) -> ModelRequest:
        messages = [Message.user(f"{self.prompt.label}: {self.question}"), *history]
        if notice is not None:
            last = messages[-1]
            messages[-1] = Message(last.role, (*last.content, TextBlock(notice)))
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
        )

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

    def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        return self._turn(self._request(history), step)

    def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        return self._turn(self._request(history, notice), step)


def short_answer(text: str) -> str:
    """The answer in a final turn's text: ``Answer: X`` / ``Finish[X]`` / ``the answer is X``
    where present, else its last non-empty line."""
    extracted = extract_answer(text)
    if extracted is not None:
        return extracted.answer
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
