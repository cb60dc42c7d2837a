"""Record and replay every model call of a run (``calls.jsonl`` cassettes).

Which example a call belongs to is carried by a context variable that the evaluator sets
around each example (``example_scope``); asyncio tasks inherit it, so concurrent examples
never mix their calls. ``RecordingModel`` wraps any client and appends each completed
response to the current example's list. A cassette line is, per example, either
``{"id": ..., "completions": [raw text of each call]}`` (text runner) or
``{"id": ..., "responses": [content blocks of each response]}`` (tool-use runner), with
``"stop_reasons"``: each call's stop reason, in the same order (None for a failure), which a
replay gives back (a ``pause_turn`` or a ``refusal`` replays as one), and ``"models"``: the model
id each response reported (an API's snapshot; the local model's file hash), where any did.

A call that failed (a ``ModelError`` after the SDK's retries, a broken stream) is recorded
too, as ``{"error": message}`` in its place, and replayed as the same failure: so a replay
stays in step with the original calls even after an error.

``ReplayModel`` serves an example's recorded responses in order, whatever the prompt.
Asking beyond them raises ``ModelError``, which ends that example's episode with reason
``error``; the run goes on. Replaying a run therefore reproduces its predictions exactly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from react_bench.errors import ConfigError
from react_bench.events import StreamEvent
from react_bench.models.base import (
    ModelCapabilities,
    ModelClient,
    ModelError,
    ModelLayer,
    ModelRequest,
    NoServer,
    adapt_request,
    stream_response,
)
from react_bench.models.collector import response_to_events
from react_bench.timeline import call_ended, call_started
from react_bench.types import (
    ModelResponse,
    StopReason,
    TextBlock,
    Usage,
    block_from_dict,
    block_to_dict,
)


@dataclass(frozen=True)
class RecordedFailure:
    """A model call that raised instead of answering."""

    message: str


Recorded = ModelResponse | RecordedFailure

_EXAMPLE: ContextVar[str | None] = ContextVar("react_bench_example", default=None)
_CALLS: ContextVar[list[Recorded] | None] = ContextVar("react_bench_calls", default=None)
_CURSOR: ContextVar[list[int] | None] = ContextVar("react_bench_cursor", default=None)

CassetteKind = Literal["completions", "responses"]


def attempt_key(example_id: str, epoch: int = 1) -> str:
    """A cassette's key for an attempt: the id itself for the first (every run before epochs)."""
    return example_id if epoch == 1 else f"{example_id} (epoch {epoch})"


@contextmanager
def example_scope(example_id: str, epoch: int = 1) -> Iterator[list[Recorded]]:
    """Within this scope, model calls are recorded for (and replayed from) the attempt."""
    calls: list[Recorded] = []
    tokens = (_EXAMPLE.set(attempt_key(example_id, epoch)), _CALLS.set(calls), _CURSOR.set([0]))
    try:
        yield calls
    finally:
        _CURSOR.reset(tokens[2])
        _CALLS.reset(tokens[1])
        _EXAMPLE.reset(tokens[0])


def cassette_line(example_id: str, calls: list[Recorded], kind: CassetteKind, epoch: int = 1) -> dict[str, Any]:
    def entry(call: Recorded) -> Any:
        if isinstance(call, RecordedFailure):
            return {"error": call.message}
        return call.text if kind == "completions" else [block_to_dict(b) for b in call.content]

    stops = [c.stop_reason.value if isinstance(c, ModelResponse) and c.stop_reason else None for c in calls]
    line: dict[str, Any] = {"id": example_id, kind: [entry(c) for c in calls], "stop_reasons": stops}
    models = [c.model if isinstance(c, ModelResponse) else None for c in calls]
    if any(models):  # the model each response reported (an API's snapshot id): drift compares them
        line["models"] = models
    if epoch != 1:
        line["epoch"] = epoch
    return line


@dataclass
class RecordingModel(ModelLayer):
    """Passes a client's stream through and records each complete response."""

    inner: ModelClient

    def __getattr__(self, attr: str) -> Any:  # close() etc. of the wrapped client
        return getattr(self.inner, attr)

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        # The call's place is taken when it starts: calls of one example made at once (CoT-SC's
        # samples) are recorded in the order they were asked, which is the order a replay serves.
        calls = _CALLS.get()
        slot = RecordedFailure("in flight")
        if calls is not None:
            calls.append(slot)
        mark = call_started()  # the call's time in the example's timeline (its trace's chat span)
        try:
            async for item in stream_response(self.inner, request):
                if isinstance(item, ModelResponse) and calls is not None:
                    _fill(calls, slot, item)  # before it is handed on: the caller may stop reading there
                    call_ended(mark, item)
                yield item
        except Exception as exc:
            if calls is not None:
                failure = RecordedFailure(f"{type(exc).__name__}: {exc}")
                _fill(calls, slot, failure)
                call_ended(mark, failure)
            raise
        finally:
            if calls is not None and any(c is slot for c in calls):  # cancelled, or closed before a response
                del calls[_index(calls, slot)]


def _index(calls: list[Recorded], slot: Recorded) -> int:
    return next(i for i, c in enumerate(calls) if c is slot)


def _fill(calls: list[Recorded], slot: Recorded, recorded: Recorded) -> None:
    if any(c is slot for c in calls):
        calls[_index(calls, slot)] = recorded
    else:  # the example's list was reset meanwhile (Reflexion puts logged trials back first)
        calls.append(recorded)


def load_cassette(path: str | Path) -> tuple[CassetteKind, dict[str, list[Recorded]]]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"cassette not found: {path} (give model.cassette=<run dir>/calls.jsonl)")
    kinds: set[str] = set()
    by_id: dict[str, list[Recorded]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            example_id = attempt_key(str(record["id"]), int(record.get("epoch") or 1))
            kinds.add("completions" if "completions" in record else "responses")
            responses = recorded_from_line(record)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}:{number}: not a cassette line ({exc})") from exc
        if example_id in by_id:
            raise ConfigError(f"{path}:{number}: example {example_id!r} appears twice")
        by_id[example_id] = responses
    if len(kinds) > 1:
        raise ConfigError(f"{path} mixes text completions and message responses")
    return (kinds.pop() if kinds else "completions"), by_id  # type: ignore[return-value]


def recorded_from_line(line: dict[str, Any]) -> list[Recorded]:
    """The calls of one cassette line, as they were recorded: responses with their stop reasons and
    the model each reported (and their usage, where the line keeps it: a Reflexion trial log's),
    failures as failures."""
    if "completions" in line:
        responses = [_failure(t) or _text_response(t) for t in line["completions"]]
    else:
        responses = [_failure(b) or _block_response(b) for b in line["responses"]]
    responses = _with_stops(responses, line.get("stop_reasons"))
    models = line.get("models")
    if isinstance(models, list):  # the model each response reported: a replay reports the same
        responses = [
            replace(r, model=str(m)) if isinstance(r, ModelResponse) and isinstance(m, str) and m else r
            for r, m in zip(responses, [*models, *[None] * len(responses)], strict=False)
        ]
    usages = line.get("usage")
    if isinstance(usages, list):
        responses = [
            replace(r, usage=Usage.from_dict(u)) if isinstance(r, ModelResponse) and isinstance(u, dict) else r
            for r, u in zip(responses, [*usages, *[None] * len(responses)], strict=False)
        ]
    return responses


def current_calls() -> list[Recorded] | None:
    """The calls recorded so far for the attempt in scope (None: outside an example's scope)."""
    return _CALLS.get()


def _with_stops(responses: list[Recorded], stops: Any) -> list[Recorded]:
    """The recorded stop reasons put back (cassettes from before they were recorded have none)."""
    if not isinstance(stops, list):
        return responses
    out: list[Recorded] = []
    for response, stop in zip(responses, [*stops, *[None] * len(responses)], strict=False):
        if isinstance(response, ModelResponse) and stop:
            response = replace(response, stop_reason=StopReason(stop))
        out.append(response)
    return out


def _failure(entry: Any) -> RecordedFailure | None:
    return RecordedFailure(str(entry["error"])) if isinstance(entry, dict) and "error" in entry else None


def _text_response(text: str) -> ModelResponse:
    return ModelResponse((TextBlock(str(text)),), StopReason.END_TURN, model="replay")


def _block_response(blocks: list[dict[str, Any]]) -> ModelResponse:
    content = tuple(block_from_dict(b) for b in blocks)
    stop = StopReason.TOOL_USE if any(b.get("type") == "tool_use" for b in blocks) else StopReason.END_TURN
    return ModelResponse(content, stop, model="replay")


@dataclass
class ReplayConfig:
    """``model=replay``: the cassette of the run to replay."""

    cassette: str | None = None


@dataclass
class ReplayModel(NoServer):
    """Serves recorded responses per example, in call order; ``capabilities`` of the original."""

    cassette: str | Path
    capabilities: ModelCapabilities = field(default_factory=lambda: ModelCapabilities(raw_completion=True))
    name: str = "replay"

    def __post_init__(self) -> None:
        self.kind, self.by_id = load_cassette(self.cassette)

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        example_id, cursor = _EXAMPLE.get(), _CURSOR.get()
        if example_id is None or cursor is None:
            raise ModelError("replay needs an example scope (react_bench.models.replay.example_scope)")
        recorded = self.by_id.get(example_id)
        if recorded is None:
            raise ModelError(f"the cassette has no calls for example {example_id!r}")
        if cursor[0] >= len(recorded):
            raise ModelError(
                f"the cassette has {len(recorded)} call(s) for example {example_id!r}; "
                f"call {cursor[0] + 1} was asked for"
            )
        response = recorded[cursor[0]]
        cursor[0] += 1
        if isinstance(response, RecordedFailure):
            raise ModelError(f"recorded failure (replayed): {response.message}")
        for event in response_to_events(response):
            yield event
