"""The two event layers (DESIGN section 4).

``StreamEvent``: fragments of ONE model response, provider-neutral. Produced by the model
clients in ``react_bench.models`` and consumed by ``models.collector``. A signature delta
exists only at this layer.

``AgentEvent``: what happens in ONE episode, semantic. Produced by ``loop.run_episode`` and
the policies; consumed by the console, notebooks and the trajectory log. No AgentEvent
carries a thinking signature.

Every event is a frozen dataclass with a ``type`` tag; ``event_to_dict`` serialises one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from react_bench.timeline import stage_began
from react_bench.types import StopReason, Usage

# ---------------------------------------------------------------------------- stream layer

BlockKind = Literal["text", "thinking", "redacted_thinking", "tool_use"]


@dataclass(frozen=True)
class MessageStart:
    id: str
    model: str
    usage: Usage = Usage()
    type: Literal["message_start"] = field(default="message_start", repr=False)


@dataclass(frozen=True)
class BlockStart:
    index: int
    kind: BlockKind
    tool_id: str = ""
    tool_name: str = ""
    data: str = ""  # redacted thinking payload
    type: Literal["block_start"] = field(default="block_start", repr=False)


@dataclass(frozen=True)
class TextDelta:
    index: int
    text: str
    type: Literal["text_delta"] = field(default="text_delta", repr=False)


@dataclass(frozen=True)
class ThinkingDelta:
    index: int
    thinking: str
    type: Literal["thinking_delta"] = field(default="thinking_delta", repr=False)


@dataclass(frozen=True)
class SignatureDelta:
    index: int
    signature: str
    type: Literal["signature_delta"] = field(default="signature_delta", repr=False)


@dataclass(frozen=True)
class ToolInputDelta:
    index: int
    partial_json: str
    type: Literal["tool_input_delta"] = field(default="tool_input_delta", repr=False)


@dataclass(frozen=True)
class BlockStop:
    index: int
    type: Literal["block_stop"] = field(default="block_stop", repr=False)


@dataclass(frozen=True)
class MessageStop:
    stop_reason: StopReason | None
    usage: Usage = Usage()
    stop_sequence: str | None = None
    type: Literal["message_stop"] = field(default="message_stop", repr=False)


StreamEvent = (
    MessageStart | BlockStart | TextDelta | ThinkingDelta | SignatureDelta | ToolInputDelta | BlockStop | MessageStop
)

# ----------------------------------------------------------------------------- agent layer

# answered: an answer (a turn without action, or an answer action); done: the environment ended the
# episode (a game won, a purchase made); step_limit: the cap; error: a fault kept it from ending;
# refused: the model declined (stop reason refusal; scored as wrong, counted apart).
FinishReason = Literal["answered", "done", "step_limit", "error", "refused"]
FINISH_REASONS: tuple[str, ...] = get_args(FinishReason)


@dataclass(frozen=True)
class StepStarted:
    step: int
    type: Literal["step_started"] = field(default="step_started", repr=False)


@dataclass(frozen=True)
class AssistantTextDelta:
    step: int
    text: str
    type: Literal["assistant_text_delta"] = field(default="assistant_text_delta", repr=False)


@dataclass(frozen=True)
class AssistantThinkingDelta:
    step: int
    thinking: str
    type: Literal["assistant_thinking_delta"] = field(default="assistant_thinking_delta", repr=False)


DELTAS = (AssistantTextDelta, AssistantThinkingDelta)  # a turn's fragments: shown live, never recorded


@dataclass(frozen=True)
class ToolCalled:
    """A complete tool call (an action) that the loop is about to execute."""

    step: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    text: str | None = None  # the text runner: the action as written and executed ("search[Ed Wood]")
    type: Literal["tool_called"] = field(default="tool_called", repr=False)


@dataclass(frozen=True)
class ToolExecutionStarted:
    step: int
    call_id: str
    name: str
    type: Literal["tool_execution_started"] = field(default="tool_execution_started", repr=False)


@dataclass(frozen=True)
class ToolExecutionFinished:
    step: int
    call_id: str
    name: str
    observation: str
    is_error: bool
    type: Literal["tool_execution_finished"] = field(default="tool_execution_finished", repr=False)


@dataclass(frozen=True)
class ParseError:
    """The text runner could not read an action from the completion (a 'bad call')."""

    step: int
    text: str
    message: str
    type: Literal["parse_error"] = field(default="parse_error", repr=False)


@dataclass(frozen=True)
class StepFinished:
    step: int
    usage: Usage
    type: Literal["step_finished"] = field(default="step_finished", repr=False)


@dataclass(frozen=True)
class EpisodeFinished:
    answer: str
    reason: FinishReason
    steps: int
    usage: Usage
    error: str | None = None
    reward: float | None = None  # the environment's score of the episode, where it gives one
    type: Literal["episode_finished"] = field(default="episode_finished", repr=False)


@dataclass(frozen=True)
class RunProgress:
    """An example was written: how far the run is, and how that example ended."""

    done: int
    total: int
    example_id: str = ""
    prediction: str = ""
    correct: bool | None = None
    reason: str = ""
    type: Literal["run_progress"] = field(default="run_progress", repr=False)


@dataclass(frozen=True)
class MethodStage:
    """A method's own stage of an example begins: ``what`` ``index`` of at most ``total`` (Reflexion:
    "trial"; LATS: "search iteration"), ``detail`` said after it ("12 nodes"). Its episodes' steps
    count from 1 again. Told to the run's sinks (the bar, the printer), not recorded in an episode."""

    what: str
    index: int
    total: int
    detail: str = ""
    type: Literal["method_stage"] = field(default="method_stage", repr=False)


def announce(sink: Callable[[AgentEvent], None] | None, stage: MethodStage) -> None:
    """A method's stage begins: kept in the example's timeline (its trace's method span) and told
    to the run's sinks, where there are any. Every method says its stages through here."""
    stage_began(stage.what, stage.index, stage.total)
    if sink is not None:
        sink(stage)


AgentEvent = (
    StepStarted
    | MethodStage
    | AssistantTextDelta
    | AssistantThinkingDelta
    | ToolCalled
    | ToolExecutionStarted
    | ToolExecutionFinished
    | ParseError
    | StepFinished
    | EpisodeFinished
    | RunProgress
)

AGENT_EVENT_TYPES: tuple[type, ...] = get_args(AgentEvent)
STREAM_EVENT_TYPES: tuple[type, ...] = get_args(StreamEvent)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in AGENT_EVENT_TYPES + STREAM_EVENT_TYPES
}


_PLAIN = frozenset({str, int, float, bool, type(None)})


def event_to_dict(event: AgentEvent | StreamEvent) -> dict[str, Any]:
    """JSON-ready dict of an event (usage and stop reasons flattened), as ``asdict`` would give
    it but without its deep copies: a few fields, once per event of every trajectory."""
    data: dict[str, Any] = {}
    for name in _FIELD_NAMES[type(event)]:
        value = getattr(event, name)
        if type(value) in _PLAIN:  # most fields: nothing to convert (and no ABC isinstance to pay)
            data[name] = value
            continue
        if isinstance(value, Usage):
            value = value.to_dict()
        elif isinstance(value, StopReason):
            value = value.value
        elif isinstance(value, Mapping):  # tool arguments: a copy, so the record is its own
            nested = any(isinstance(v, (dict, list)) for v in value.values())
            value = copy.deepcopy(dict(value)) if nested else dict(value)
        data[name] = value
    return data
