"""The shared loop with the scripted model: exits, caps, tool errors, parallel calls, thinking."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import fields
from typing import Any

import pytest

from react_bench.environment import Action, Example
from react_bench.events import (
    AGENT_EVENT_TYPES,
    AgentEvent,
    AssistantThinkingDelta,
    EpisodeFinished,
    StepStarted,
    ToolExecutionFinished,
    ToolExecutionStarted,
)
from react_bench.loop import (
    Decision,
    LoopConfig,
    Observation,
    ToolCall,
    run_episode,
    run_to_end,
)
from react_bench.models.base import ModelClient, ModelError, ModelRequest, ToolSpec
from react_bench.runners.common import StepStats, stream_turn
from react_bench.types import (
    Message,
    ModelResponse,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)


class ToolsPolicy:
    """A minimal tool-use policy over a ModelClient (the real runner lives in runners/)."""

    def __init__(self, model: ModelClient, question: str = "q?"):
        self.model = model
        self.question = question

    def _request(self, history: Sequence[Message], extra: str | None = None) -> ModelRequest:
        messages = [Message.user(self.question), *history]
        if extra:
            messages.append(Message.user(extra))
        return ModelRequest(messages=tuple(messages), tools=(ToolSpec("search", "s", {"type": "object"}),))

    async def _turn(self, request: ModelRequest, step: int) -> AsyncIterator[AgentEvent | Decision]:
        response = None
        async for item in stream_turn(self.model, request, step, StepStats()):
            if isinstance(item, ModelResponse):
                response = item
            else:
                yield item
        assert response is not None
        calls = tuple(ToolCall(b.id, b.name, b.input) for b in response.tool_uses)
        yield Decision(response.as_message(), calls, response.text, response.usage)

    def decide(self, history: Sequence[Message], step: int) -> AsyncIterator[AgentEvent | Decision]:
        return self._turn(self._request(history), step)

    def wrap_up(self, history: Sequence[Message], step: int, notice: str) -> AsyncIterator[AgentEvent | Decision]:
        return self._turn(self._request(history, notice), step)


class FakeEnv:
    """``gates``: a query waits for its gate (an asyncio.Event) before answering, so tests fix
    the order in which tools finish by events, never by wall-clock delays."""

    def __init__(self, gates: Mapping[str, asyncio.Event] | None = None, fail: set[str] | None = None):
        self.gates = gates or {}
        self.fail = fail or set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.finished: list[str] = []

    def actions(self) -> tuple[ToolSpec, ...]:
        return ()

    async def reset(self, example: Example) -> Observation:
        return Observation(example.question)

    async def step(self, action: Action) -> Observation:
        name, arguments = action.name, action.arguments
        self.calls.append((name, dict(arguments)))
        key = str(arguments.get("q", ""))
        if key in self.gates:
            await self.gates[key].wait()
        self.finished.append(key)
        if key in self.fail:
            raise RuntimeError(f"backend down for {key}")
        if name == "finish":
            return Observation("finished", final_answer=str(arguments["answer"]))
        return Observation(f"page about {key}")


def tool_turn(*calls: tuple[str, str, dict[str, Any]], text: str = "", thinking: ThinkingBlock | None = None):
    blocks: list[Any] = [thinking] if thinking else []
    if text:
        blocks.append(TextBlock(text))
    blocks.extend(ToolUseBlock(i, n, a) for i, n, a in calls)
    return ModelResponse(tuple(blocks), StopReason.TOOL_USE)


def answer_turn(text: str) -> ModelResponse:
    return ModelResponse((TextBlock(text),), StopReason.END_TURN)


async def run(model, env, **config) -> tuple[Any, list[Message]]:
    history: list[Message] = []
    result = await run_to_end(run_episode(ToolsPolicy(model), env, LoopConfig(**config), history), history)
    return result, history


async def test_exits_on_first_turn_without_tool_call(scripted):
    model = scripted([answer_turn("Paris")])
    result, history = await run(model, FakeEnv())
    assert (result.answer, result.reason, result.steps) == ("Paris", "answered", 1)
    assert [type(e) for e in result.events][0] is StepStarted
    assert isinstance(result.events[-1], EpisodeFinished)
    assert history == [Message.assistant("Paris")]


async def test_finish_action_ends_the_episode(scripted):
    model = scripted([tool_turn(("t1", "finish", {"answer": "42", "q": ""}))])
    result, _ = await run(model, FakeEnv())
    assert (result.answer, result.reason) == ("42", "answered")


async def test_step_cap_gives_up_with_empty_answer(scripted):
    model = scripted([tool_turn((f"t{i}", "search", {"q": f"x{i}"})) for i in range(3)])
    env = FakeEnv()
    result, _ = await run(model, env, max_steps=3, on_limit="give_up")
    assert (result.answer, result.reason, result.steps) == ("", "step_limit", 3)
    assert len(env.calls) == 3


def test_backoff_is_not_a_loop_setting():
    # handing an unanswered example to CoT-SC is the mode's business (modes.MODE_SPECS)
    with pytest.raises(ValueError, match="on_limit must be one of"):
        LoopConfig(on_limit="backoff")  # type: ignore[arg-type]


async def test_step_cap_wrap_up_makes_one_more_call_without_tools(scripted):
    model = scripted(
        [tool_turn(("t1", "search", {"q": "a"})), tool_turn(("t2", "search", {"q": "b"})), answer_turn("B")]
    )
    result, history = await run(model, FakeEnv(), max_steps=2, on_limit="wrap_up")
    assert (result.answer, result.reason, result.steps) == ("B", "step_limit", 2)
    last_request = model.requests[-1]
    assert "used all 2 steps" in last_request.messages[-1].text
    assert history[-1] == Message.assistant("B")


async def test_tool_that_raises_becomes_is_error_and_episode_continues(scripted):
    model = scripted([tool_turn(("t1", "search", {"q": "boom"})), answer_turn("recovered")])
    result, history = await run(model, FakeEnv(fail={"boom"}))
    assert (result.answer, result.reason) == ("recovered", "answered")
    finished = [e for e in result.events if isinstance(e, ToolExecutionFinished)]
    assert finished[0].is_error and "backend down for boom" in finished[0].observation
    result_block = history[1].content[0]
    assert isinstance(result_block, ToolResultBlock) and result_block.is_error
    assert result_block.tool_use_id == "t1"


async def test_parallel_calls_finishing_in_reverse_order_return_in_one_message(scripted):
    calls = [("id-a", "search", {"q": "a"}), ("id-b", "search", {"q": "b"}), ("id-c", "search", {"q": "c"})]
    model = scripted([tool_turn(*calls), answer_turn("done")])
    gates = {"a": asyncio.Event(), "b": asyncio.Event()}
    env = FakeEnv(gates=gates)

    async def release_in_reverse() -> None:
        # c has no gate; b is released once c has finished, a once b has
        while "c" not in env.finished:
            await asyncio.sleep(0)
        gates["b"].set()
        while "b" not in env.finished:
            await asyncio.sleep(0)
        gates["a"].set()

    releaser = asyncio.create_task(release_in_reverse())
    result, history = await run(model, env)
    await releaser
    finished_order = [e.call_id for e in result.events if isinstance(e, ToolExecutionFinished)]
    assert finished_order == ["id-c", "id-b", "id-a"]
    results_message = history[1]
    assert results_message.role == "user"
    assert all(isinstance(b, ToolResultBlock) for b in results_message.content)
    assert {b.tool_use_id: b.content for b in results_message.content} == {
        "id-a": "page about a",
        "id-b": "page about b",
        "id-c": "page about c",
    }
    second_request_messages = model.requests[1].messages
    assert second_request_messages[-1] == results_message


async def test_thinking_blocks_come_back_byte_for_byte_and_never_as_events(scripted):
    thinking = ThinkingBlock("I should search \u00e9t\u00e9 first.\n", "c2lnbmF0dXJlLXZhbHVlLTEyMw==" * 3)
    model = scripted(
        [tool_turn(("t1", "search", {"q": "a"}), thinking=thinking, text="Let me look."), answer_turn("ok")]
    )
    result, _ = await run(model, FakeEnv())
    sent_back = model.requests[1].messages[1]
    assert sent_back.role == "assistant" and sent_back.content[0] == thinking
    assert sent_back.content[0].signature == thinking.signature
    thinking_text = "".join(e.thinking for e in result.events if isinstance(e, AssistantThinkingDelta))
    assert thinking_text == thinking.thinking
    for event in result.events:
        for f in fields(event):
            assert f.name != "signature"
            assert thinking.signature not in repr(getattr(event, f.name))


def test_no_agent_event_type_has_a_signature_field():
    for event_type in AGENT_EVENT_TYPES:
        assert "signature" not in {f.name for f in fields(event_type)}, event_type


async def test_tool_execution_started_is_emitted_before_a_slow_tool_finishes(scripted):
    model = scripted([tool_turn(("slow", "search", {"q": "slow"})), answer_turn("ok")])
    gate = asyncio.Event()  # the tool cannot finish until the test has seen it start
    env = FakeEnv(gates={"slow": gate})
    seen: list[str] = []
    history: list[Message] = []
    async for event in run_episode(ToolsPolicy(model), env, LoopConfig(), history):
        if isinstance(event, ToolExecutionStarted):
            assert env.finished == []
            seen.append("started")
            gate.set()
        if isinstance(event, ToolExecutionFinished):
            seen.append("finished")
    assert seen == ["started", "finished"]


async def test_model_error_ends_the_episode_with_reason_error(scripted):
    model = scripted([tool_turn(("t1", "search", {"q": "a"})), ModelError("overloaded", status=529)])
    result, _ = await run(model, FakeEnv())
    assert (result.reason, result.steps) == ("error", 2)
    assert "overloaded" in (result.error or "")


def test_step_cap_is_mandatory_and_policies_are_checked():
    with pytest.raises(ValueError, match="max_steps"):
        LoopConfig(max_steps=0)
    with pytest.raises(ValueError, match="on_limit"):
        LoopConfig(on_limit="retry")  # type: ignore[arg-type]


async def test_scripted_model_fails_loudly_when_steps_are_unused():
    from react_bench.models.scripted import ScriptedModel, ScriptError

    model = ScriptedModel([answer_turn("a"), answer_turn("b")])
    await run(model, FakeEnv())
    with pytest.raises(ScriptError, match="1 scripted response"):
        model.assert_complete()
