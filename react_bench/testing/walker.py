"""A stand-in model that walks a fixed ReAct path: for benchmarks and end-to-end tests.

``Walk`` says what the agent does at step ``k`` of a question: it searches (odd steps) and
looks up (even steps) until its last step, where it finishes with the answer. With a plan
(question -> page titles to visit and the answer) the searches hit real pages of the wiki,
so observations have their real sizes; without one it searches the question's first 30
characters and answers the gold it was given (``answers``), or ``unknown``.

The same walk is served two ways, reading only what a real model would see:
- ``WalkingModel``: an in-process ``ModelClient`` with no latency (the harness's own cost is
  all that is left to measure). It takes raw text prompts (the text runner, ending in
  ``Thought k:``) and tool-use conversations.
- ``WalkResponder``: a ``MessagesServer`` responder, reading the Messages API request body
  (the text runner's chat form says ``Begin your reply with `Thought k:```).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from react_bench.events import StreamEvent
from react_bench.models.base import ModelCapabilities, ModelRequest, NoServer
from react_bench.models.collector import response_to_events
from react_bench.models.stopping import cut_at_stop
from react_bench.testing.sse import Reply
from react_bench.types import Message, ModelResponse, StopReason, TextBlock, ToolUseBlock, Usage

_LABELS = ("Question: ", "Claim: ")
_RAW_STEP = re.compile(r"(Thought|Action) (\d+):\s*$")
_CHAT_STEP = re.compile(r"Begin your reply with `(?:Thought|Action) (\d+):")
_PREFILL_STEP = re.compile(r"(?:Thought|Action) (\d+):\s*$")


@dataclass(frozen=True)
class Walk:
    steps: int = 7
    plans: Mapping[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)  # question -> (titles, answer)
    answers: Mapping[str, str] = field(default_factory=dict)  # question -> answer, for questions with no plan

    def action(self, question: str, step: int) -> tuple[str, str]:
        """(tool name, argument) at ``step`` (1-based)."""
        question = question.strip()
        titles, answer = self.plans.get(question, ((), self.answers.get(question, "unknown")))
        titles = titles or (question[:30],)
        if step >= self.steps:
            return "finish", answer
        title = titles[((step - 1) // 2) % len(titles)]
        if step % 2:
            return "search", title
        return "lookup", max(question.split() or ["the"], key=len).strip("?,.")

    def text(self, question: str, step: int) -> str:
        name, argument = self.action(question, step)
        thought = "I have it." if name == "finish" else f"I {name} {argument}."
        return f"Thought {step}: {thought}\nAction {step}: {name.capitalize()}[{argument}]"

    def blocks(self, question: str, step: int, tool_id: str = "") -> tuple[TextBlock | ToolUseBlock, ...]:
        name, argument = self.action(question, step)
        key = {"search": "entity", "lookup": "keyword", "finish": "answer"}[name]
        return TextBlock(f"Step {step}."), ToolUseBlock(tool_id, name, {key: argument})


def after_label(text: str) -> str | None:
    for label in _LABELS:
        if label in text:
            return text.rsplit(label, 1)[1].split("\n", 1)[0].strip()
    return None


@dataclass
class WalkingModel(NoServer):
    """The walk as an in-process model with no latency (``ModelClient``)."""

    walk: Walk
    name: str = "walker"
    capabilities: ModelCapabilities = ModelCapabilities(raw_completion=True)
    calls: int = 0

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return ()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        for event in response_to_events(self.respond(request)):
            yield event

    def respond(self, request: ModelRequest) -> ModelResponse:
        if request.prompt is not None:  # the text runner: the prompt ends in "Thought k:"
            match = _RAW_STEP.search(request.prompt[-40:])
            label, step = (match.group(1), int(match.group(2))) if match else ("Thought", 1)
            full = self.walk.text(after_label(request.prompt) or "", step)
            continuation = full.split(f"{label} {step}:", 1)[-1]  # the prompt ends where the model goes on
            text, hit = cut_at_stop(f"{continuation}\nObservation {step}: (none)", request.stop)
            content: tuple[Any, ...] = (TextBlock(text),)
            stop = StopReason.STOP_SEQUENCE if hit else StopReason.END_TURN
        else:
            at = _question_index(request.messages)
            question = after_label(request.messages[at].text) or ""
            step = (len(request.messages) - at + 1) // 2  # question, then (assistant, results) per step
            content = self.walk.blocks(question, step, f"toolu_walk_{self.calls:06d}")
            stop, hit = StopReason.TOOL_USE, None
        return ModelResponse(content, stop, Usage(1000, 30), self.name, f"walk-{self.calls}", hit)


def _question_index(messages: tuple[Message, ...]) -> int:
    """The user message that asks the question (after any few-shot exemplar turns)."""
    found = 0
    for i, message in enumerate(messages):
        if message.role == "user" and after_label(message.text) is not None:
            found = i
    return found


# ------------------------------------------------------------------- the Messages API side


def _wire_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, Mapping))


def question_message(body: Mapping[str, Any]) -> int:
    """Index of the message that asks the question (after any few-shot exemplar turns)."""
    found = 0
    for i, message in enumerate(body["messages"]):
        if message["role"] == "user" and after_label(_wire_text(message["content"])) is not None:
            found = i
    return found


def turns_after_question(body: Mapping[str, Any]) -> int:
    return len(body["messages"]) - 1 - question_message(body)


def question_of(body: Mapping[str, Any]) -> str:
    return after_label(_wire_text(body["messages"][question_message(body)]["content"])) or ""


def asks_a_step(body: Mapping[str, Any]) -> bool:
    """Whether a Messages request is an agent's turn (tools, or the text protocol's numbered
    step), rather than a single call (Standard, CoT, a reflection)."""
    if body.get("tools"):
        return True
    last = body["messages"][-1]
    if last["role"] == "assistant":
        return _PREFILL_STEP.search(_wire_text(last["content"])) is not None
    return _CHAT_STEP.search(_wire_text(body["messages"][0]["content"])) is not None


@dataclass(frozen=True)
class WalkResponder:
    """The walk as a ``MessagesServer`` responder: reads the request body only."""

    walk: Walk

    def __call__(self, body: dict[str, Any]) -> Reply:
        question = question_of(body)
        if body.get("tools"):  # the tool-use runner (or a peer harness whose answer tool is ``submit``)
            blocks = self.walk.blocks(question, turns_after_question(body) // 2 + 1)
            if any(t.get("name") == "submit" for t in body["tools"]):
                blocks = tuple(
                    replace(b, name="submit") if isinstance(b, ToolUseBlock) and b.name == "finish" else b
                    for b in blocks
                )
            return Reply(blocks)
        last = body["messages"][-1]
        if last["role"] == "assistant":  # a prefilled "Thought k:": the reply goes on after it
            match = _PREFILL_STEP.search(_wire_text(last["content"]))
            step = int(match.group(1)) if match else 1
            return Reply.text(self.walk.text(question, step).split(":", 1)[1])
        match = _CHAT_STEP.search(_wire_text(body["messages"][0]["content"]))
        return Reply.text(self.walk.text(question, int(match.group(1)) if match else 1))
