"""A deterministic model for tests: streams scripted responses, records every request.

Each script step is a response text, a ``ModelResponse`` (tool calls, thinking, ...), or
an exception to raise. Responses are streamed as fragments through ``response_to_events``,
and text responses honour the request's stop sequences like a real model would (cut at
the first stop, stop reason ``stop_sequence``). ``assert_complete`` fails when script steps
were left unused; asking past the end of the script fails too. Both are test failures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from react_bench.events import StreamEvent
from react_bench.models.base import OPERATIONAL, ModelCapabilities, ModelRequest, NoServer, adapt_request
from react_bench.models.collector import response_to_events
from react_bench.models.stopping import cut_at_stop
from react_bench.types import ModelResponse, StopReason, TextBlock, Usage

ScriptStep = str | ModelResponse | BaseException


class ScriptError(AssertionError):
    """The script and the test disagree (too few or too many steps)."""


@dataclass(frozen=True)
class ScriptedConfig:
    """``model=scripted``: a JSON file of completion texts (a test tool; a resumed run may take a new one)."""

    script: str | None = field(default=None, metadata=OPERATIONAL)
    name: str = "scripted"


@dataclass
class ScriptedModel(NoServer):
    script: list[ScriptStep]
    name: str = "scripted"
    capabilities: ModelCapabilities = ModelCapabilities(
        raw_completion=True, prefill=True, sampling=True, thinking_modes=frozenset({"adaptive", "enabled"})
    )

    def __post_init__(self) -> None:
        self.script = list(self.script)
        self.requests: list[ModelRequest] = []
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self.script) - self._next

    def assert_complete(self) -> None:
        if self.remaining:
            unused = self.script[self._next :]
            raise ScriptError(f"{self.remaining} scripted response(s) never requested: {unused!r}")

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        request, _ = adapt_request(request, self.capabilities)
        self.requests.append(request)
        if self._next >= len(self.script):
            raise ScriptError(f"request {len(self.requests)} asked past the end of a {len(self.script)}-step script")
        step = self.script[self._next]
        self._next += 1
        if isinstance(step, BaseException):
            raise step
        response = self._as_response(step, request)
        for event in response_to_events(response):
            yield event

    def _as_response(self, step: str | ModelResponse, request: ModelRequest) -> ModelResponse:
        if isinstance(step, ModelResponse):
            return step
        text, hit = cut_at_stop(step, request.stop)
        return ModelResponse(
            content=(TextBlock(text),),
            stop_reason=StopReason.STOP_SEQUENCE if hit else StopReason.END_TURN,
            usage=Usage(input_tokens=len((request.prompt or "").split()) + 1, output_tokens=len(text.split()) + 1),
            model=self.name,
            id=f"scripted-{self._next}",
            stop_sequence=hit,
        )
