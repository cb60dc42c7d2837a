"""Stop sequences: the ReAct protocol's stops, and cutting streamed text at them client-side.

The one module for stops, used by every raw-completion and chat path:
- the protocol's stops: ``step_stop(i)`` (``"\\nObservation {i}:"``), ``REASK_STOP`` (the
  paper's re-ask stops at the end of the line) and ``RAW_EXTRA_STOPS`` (small raw-completion
  models skip the step number, so ``"\\nObservation"`` and ``"\\nQuestion:"`` end a step too);
- ``cut_at_stop``: a whole text cut at the earliest stop (the scripted model, answer parsing);
- ``StopScanner``: streamed text pieces in, the text that can no longer turn out to be the
  start of a stop out (a piece ending in ``"\\nObs"`` is held until the next piece shows
  whether ``"\\nObservation 3:"`` follows); the local and OpenAI-compatible clients use it;
- ``StreamStops``: the same on ``StreamEvent``s, for a provider that rejects some stops
  (Anthropic refuses whitespace-only ones such as the re-ask's ``"\\n"``): at the first stop
  the text block ends, later events are dropped, and the final ``MessageStop`` says
  ``stop_sequence`` as if the API had stopped there (usage stays the API's).

Servers differ in how they honour stops (OpenAI takes at most 4; some backends miss a stop
split across tokens; Anthropic rejects whitespace-only ones), so clients cut text here as
well. The first stop (earliest in the text) wins.
"""

from __future__ import annotations

from collections.abc import Iterable

from react_bench.events import BlockStop, MessageStop, StreamEvent, TextDelta
from react_bench.types import StopReason

REASK_STOP = "\n"
RAW_EXTRA_STOPS: tuple[str, ...] = ("\nObservation", "\nQuestion:")


def step_stop(step: int) -> str:
    """The stop sequence of step ``step``'s completion."""
    return f"\nObservation {step}:"


def cut_at_stop(text: str, stops: Iterable[str]) -> tuple[str, str | None]:
    """Cut ``text`` at the earliest stop sequence; return (text, the stop that hit)."""
    best: tuple[int, str] | None = None
    for stop in stops:
        if stop and (pos := text.find(stop)) >= 0 and (best is None or pos < best[0]):
            best = (pos, stop)
    return (text, None) if best is None else (text[: best[0]], best[1])


class StopScanner:
    """Feed streamed text; get back what is safe to emit. After a hit, ``hit`` names the stop
    and ``rest`` collects everything after it (the text that a server-side stop would drop)."""

    def __init__(self, stops: Iterable[str]):
        # dict.fromkeys: de-duplicate, keep the caller's order
        self.stops = tuple(dict.fromkeys(s for s in stops if s))
        self.hit: str | None = None
        self.rest = ""
        self._held = ""

    def feed(self, piece: str) -> str:
        if self.hit is not None:
            self.rest += piece
            return ""
        text = self._held + piece
        cut, hit = cut_at_stop(text, self.stops)
        if hit is not None:
            self.hit, self.rest, self._held = hit, text[len(cut) + len(hit) :], ""
            return cut
        hold = self._partial_stop_length(text)
        self._held = text[len(text) - hold :] if hold else ""
        return text[: len(text) - hold]

    def flush(self) -> str:
        """The end of the stream: what was held back is text after all."""
        held, self._held = self._held, ""
        return held

    def _partial_stop_length(self, text: str) -> int:
        """Length of the longest suffix of ``text`` that is a proper prefix of some stop."""
        longest = min(len(text), max((len(s) - 1 for s in self.stops), default=0))
        for size in range(longest, 0, -1):
            tail = text[-size:]
            if any(stop.startswith(tail) for stop in self.stops):
                return size
        return 0


class StreamStops:
    """Stop sequences applied to a stream of ``StreamEvent``s (one ``StopScanner`` per text block)."""

    def __init__(self, stops: Iterable[str]) -> None:
        self.stops = tuple(stops)
        self._scanners: dict[int, StopScanner] = {}
        self.hit: str | None = None

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        if self.hit is not None:
            if isinstance(event, MessageStop):
                return [MessageStop(StopReason.STOP_SEQUENCE, event.usage, self.hit)]
            return []
        match event:
            case TextDelta(index=index, text=text):
                scanner = self._scanners.setdefault(index, StopScanner(self.stops))
                safe = scanner.feed(text)
                if scanner.hit is not None:
                    self.hit = scanner.hit
                    return [*([TextDelta(index, safe)] if safe else []), BlockStop(index)]
                return [TextDelta(index, safe)] if safe else []
            case BlockStop(index=index) if index in self._scanners:
                held = self._scanners.pop(index).flush()
                return [*([TextDelta(index, held)] if held else []), event]
            case _:
                return [event]
