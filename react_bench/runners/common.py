"""What both runners share: one streamed model turn as AgentEvents, and text completion.

``stream_turn`` forwards a model's text and thinking fragments as AgentEvents while the
pure collector assembles the response; the policy receives the ``ModelResponse`` last.
Signature deltas stay here: they reach the response (and so the history) but never an event.
The fragments are produced only where someone reads them (``DELTAS``, set by ``evaluate``:
the trajectory printer or a caller's own ``on_event``); each one passes every generator of the
loop, and a run that shows a bar or nothing would only drop them.

Stop reasons (the API's documented meanings): ``pause_turn`` is not an answer: the turn is
continued by sending the paused response back as the assistant's turn (up to
``MAX_CONTINUATIONS`` times; the parts make one response, each part a call of its own);
``refusal`` raises ``ModelRefused`` (the example ends with reason ``refused``, its own row in
the table); ``model_context_window_exceeded`` is an error on the example (not retried: the
same request overflows again; a ``context=`` remedy keeps the request short).

``complete_text`` sends a text-protocol prompt to any model: as a raw completion where the
model takes one (local GGUF models, OpenAI-compatible completions), else as chat messages,
with the suffix (e.g. ``Thought 3:``) as assistant prefill where the model accepts prefill,
or as an instruction to continue where it does not (Claude from the 4.6 generation on).
Stop sequences are always applied client-side as well, so a stop the API refuses (the
paper's re-ask stop ``\\n`` is whitespace-only) is honoured all the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from react_bench.context import ContextView, View
from react_bench.events import AgentEvent, AssistantTextDelta, AssistantThinkingDelta, TextDelta, ThinkingDelta
from react_bench.models.base import ModelClient, ModelError, ModelRefused, ModelRequest, stream_response
from react_bench.models.stopping import cut_at_stop
from react_bench.types import Message, ModelResponse, StopReason, TextBlock, Usage

MAX_CONTINUATIONS = 4  # pause_turn continuations of one turn; a fifth pause is an error
# Whether a turn's text and thinking fragments become AgentEvents (AssistantTextDelta /
# AssistantThinkingDelta) in this context: evaluate sets it for its examples' tasks.
DELTAS: ContextVar[bool] = ContextVar("react_bench_deltas", default=True)


@dataclass
class StepStats:
    """Per-example counts the results report: model calls, bad calls (the paper's re-asks),
    the robust parser's repairs by name, and characters of model output that could not be
    encoded (lone surrogates, replaced by U+FFFD)."""

    calls: int = 0
    bad_calls: int = 0
    repairs: Counter[str] = field(default_factory=Counter)
    replaced_chars: int = 0

    def add_repairs(self, repairs: Sequence[str]) -> None:
        self.repairs.update(repairs)

    def __add__(self, other: StepStats) -> StepStats:
        return StepStats(
            self.calls + other.calls,
            self.bad_calls + other.bad_calls,
            self.repairs + other.repairs,
            self.replaced_chars + other.replaced_chars,
        )


async def stream_turn(
    model: ModelClient, request: ModelRequest, step: int, stats: StepStats
) -> AsyncIterator[AgentEvent | ModelResponse]:
    """Stream one turn (each call counted in ``stats``): yield text/thinking deltas as
    AgentEvents, then the whole response (a paused turn continued; see the module docstring)."""
    whole: ModelResponse | None = None
    deltas = DELTAS.get()
    for continuation in range(MAX_CONTINUATIONS + 1):
        stats.calls += 1
        part: ModelResponse | None = None
        async for item in stream_response(model, request):
            if isinstance(item, TextDelta):
                if item.text and deltas:
                    yield AssistantTextDelta(step, item.text)
            elif isinstance(item, ThinkingDelta):
                if item.thinking and deltas:
                    yield AssistantThinkingDelta(step, item.thinking)
            elif isinstance(item, ModelResponse):
                stats.replaced_chars += item.replaced_chars
                part = item
        assert part is not None, "a call's stream ends with its response"
        whole = part if whole is None else _joined(whole, part)
        if part.stop_reason != StopReason.PAUSE_TURN:
            break
        if continuation == MAX_CONTINUATIONS:
            raise ModelError(f"the model paused its turn {MAX_CONTINUATIONS + 1} times (stop reason pause_turn)")
        request = continued(request, part)
    assert whole is not None
    if whole.stop_reason == StopReason.REFUSAL:
        raise ModelRefused(f"the model refused (stop reason refusal){': ' + whole.text[:200] if whole.text else ''}")
    if whole.stop_reason == StopReason.MODEL_CONTEXT_WINDOW_EXCEEDED:
        raise ModelError(
            "the request exceeds the model's context window (stop reason model_context_window_exceeded): "
            "choose a context remedy (context=window, truncate or compact) or fewer steps"
        )
    yield whole


def continued(request: ModelRequest, paused: ModelResponse) -> ModelRequest:
    """The request that continues a paused turn: the paused response sent back, as it is, as
    the assistant's turn (appended to a prefill, if the request ended with one)."""
    messages = list(request.messages)
    if messages and messages[-1].role == "assistant":
        messages[-1] = Message("assistant", (*messages[-1].content, *paused.content))
    else:
        messages.append(paused.as_message())
    return replace(request, messages=tuple(messages), metadata={**request.metadata, "continuation": "pause_turn"})


def _joined(first: ModelResponse, then: ModelResponse) -> ModelResponse:
    """A continued turn as one response: the parts' content in order, usage summed, the last
    part's stop reason."""
    return replace(
        then,
        content=(*first.content, *then.content),
        usage=first.usage + then.usage,
        replaced_chars=first.replaced_chars + then.replaced_chars,
    )


async def viewed(
    context: ContextView,
    model: ModelClient,
    history: Sequence[Message],
    render: Callable[[Sequence[Message]], str],
    stats: StepStats,
) -> View:
    """The context view of ``history``; a summary call it made counts like any other call."""
    view = await context.view(model, history, render)
    stats.calls += view.calls
    return view


@dataclass(frozen=True)
class Sampling:
    """Decoding settings of the text protocol (paper: greedy, 100 new tokens per step)."""

    max_tokens: int = 100
    temperature: float | None = 0.0
    sample_index: int | None = None


CONTINUE_INSTRUCTION = (
    "Continue the text above from where it stops. Begin your reply with `{suffix}` and "
    "follow the format of the examples exactly."
)
# shots=0: no instruction and no examples were sent (the bare format), so none is named
CONTINUE_ZERO_SHOT = "Continue the text above from where it stops. Begin your reply with `{suffix}`."


def text_request(
    model: ModelClient,
    parts: Sequence[str],
    suffix: str,
    stop: Sequence[str],
    sampling: Sampling,
    cache_after: Sequence[int] = (),
) -> ModelRequest:
    """The request for ``"".join(parts) + suffix`` in whichever form the model accepts.

    ``parts`` are the prompt's pieces in order (instruction and exemplars, the question, one
    piece per step); a chat model gets each as its own text block, so that the next request
    repeats this one's blocks exactly and a prompt cache can match them at block boundaries.
    ``cache_after``: the parts after which a cache breakpoint goes (see ``models.anthropic``).
    """
    decoding = ModelRequest(
        max_tokens=sampling.max_tokens, temperature=sampling.temperature, sample_index=sampling.sample_index
    )
    caps = model.capabilities
    if caps.raw_completion:
        return replace(decoding, prompt="".join(parts) + suffix, stop=tuple(stop))
    api_stops = tuple(s for s in stop if s.strip())  # APIs reject whitespace-only stops
    kept = [i for i, part in enumerate(parts) if part.strip()]
    blocks = [TextBlock(parts[i]) for i in kept]
    points = tuple((0, kept.index(i)) for i in cache_after if i in kept)
    messages: tuple[Message, ...]
    if caps.prefill and suffix.strip():
        messages = (Message("user", tuple(blocks)), Message.assistant(suffix.rstrip()))
    else:
        zero_shot = not (parts and parts[0].strip())  # part 0 holds the instruction and exemplars
        wording = CONTINUE_ZERO_SHOT if zero_shot else CONTINUE_INSTRUCTION
        instruction = TextBlock("\n" + wording.format(suffix=suffix.strip()))
        messages = (Message("user", (*blocks, instruction)),)
    shared = int(0 in cache_after and 0 in kept)  # part 0, the instruction and exemplars: every example's
    return replace(decoding, messages=messages, stop=api_stops, cache_points=points, shared_cache_points=shared)


def completion_text(model: ModelClient, response: ModelResponse, suffix: str, stop: Sequence[str]) -> str:
    """The completion after ``suffix``: cut at the stops, a repeated suffix stripped."""
    text = response.text
    if not model.capabilities.raw_completion:
        stripped = text.lstrip()
        # A chat model may repeat the whole suffix, or only its last line (the re-ask's
        # suffix is "Thought i: ...\nAction i:" and the reply often starts "Action i:").
        for prefix in (suffix.strip(), suffix.strip().splitlines()[-1].strip() if suffix.strip() else ""):
            if prefix and stripped.startswith(prefix):
                text = stripped[len(prefix) :]
                break
    text, _ = cut_at_stop(text, stop)
    return text


@dataclass(frozen=True)
class Completion:
    """A text-protocol call's result: the completion after the suffix, and what it cost."""

    text: str
    usage: Usage


async def complete_text(
    model: ModelClient,
    parts: Sequence[str],
    suffix: str,
    stop: Sequence[str],
    sampling: Sampling,
    step: int,
    stats: StepStats,
    cache_after: Sequence[int] = (),
) -> AsyncIterator[AgentEvent | Completion]:
    """Stream a text-protocol call; yields deltas, then the ``Completion``."""
    request = text_request(model, parts, suffix, stop, sampling, cache_after)
    async for item in stream_turn(model, request, step, stats):
        if isinstance(item, ModelResponse):
            yield Completion(completion_text(model, item, suffix, stop), item.usage)
        else:
            yield item
