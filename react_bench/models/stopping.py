"""Client-side stop sequences for streamed text, shared by the local and OpenAI-compatible clients.

Servers differ in how they honour stops (OpenAI takes at most 4; some backends miss a stop
split across tokens; Anthropic rejects whitespace-only ones), so the clients cut the text
themselves as well. ``StopScanner`` is fed the streamed pieces and returns only the text
that can no longer turn out to be the start of a stop sequence: a piece ending in ``"\\nObs"``
is held back until the next piece shows whether ``"\\nObservation 3:"`` follows. The first
stop (earliest in the text) wins, as in ``scripted.cut_at_stop``.
"""

from __future__ import annotations

from collections.abc import Iterable

from react_bench.models.scripted import cut_at_stop


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
