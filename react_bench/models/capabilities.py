"""The ONE per-model capability table for Claude models (DESIGN 6b).

Both the Anthropic client (what to send, what to leave out and record as not applied) and
the local Messages API server used in tests (what to reject with a 400) read this table, so
the two can never disagree. No ``anthropic`` import here: the table is plain data.

Rules encoded (Anthropic docs and SDK 2.10, late 2026):
- prefill (a conversation ending with an assistant message): rejected from the 4.6
  generation on (Opus/Sonnet 4.6, Opus 4.7/4.8, every 5.x, Fable, Mythos).
- sampling (``temperature`` / ``top_p`` / ``top_k``): rejected from Opus 4.7 on (Opus 4.7,
  4.8, 5, 5.5; Sonnet 5, 5.5; Haiku 5.5; Fable; Mythos).
- thinking: ``adaptive`` from 4.6 on; budgeted ``enabled`` still accepted on 4.6 (the SDK
  warns) and rejected from Opus 4.7 on; models before 4.6 only know ``enabled``.
- forced tool use (``tool_choice`` any/tool): rejected by Opus 5.5, Sonnet 5.5 and Fable
  5.1+ ("forced tool use returns an error" in their migration guides).
- prices: USD per million tokens, 5-minute cache writes. Haiku 5.5 has a second tier for
  prompts over 100k tokens. A price not published where we looked is ``None`` and
  ``cost_usd`` then answers ``None`` rather than a wrong number.

Model ids are the ones in the installed SDK's ``anthropic/types/model.py`` plus older ids
that a reader of old results may meet; dated snapshots map to their alias's row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from react_bench.errors import ConfigError
from react_bench.models.base import ModelCapabilities
from react_bench.types import Usage

ADAPTIVE = frozenset({"adaptive"})
BOTH = frozenset({"adaptive", "enabled"})
BUDGETED = frozenset({"enabled"})
NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Prices:
    """USD per million tokens. Cache write is the 5-minute TTL rate; a write with the 1-hour
    lifetime costs twice the input rate, as Anthropic's pricing page gives it."""

    input: float | None
    output: float | None
    cache_write: float | None = None
    cache_read: float | None = None

    @property
    def cache_write_1h(self) -> float | None:
        return None if self.input is None else 2 * self.input


@dataclass(frozen=True)
class ClaudeModel:
    id: str
    prefill: bool
    sampling: bool
    thinking_modes: frozenset[str]
    prices: Prices
    forced_tool_use: bool = True
    # (prompt-size threshold in tokens, prices above it): Haiku 5.5 bills long prompts higher
    long_prompt: tuple[int, Prices] | None = None
    snapshots: tuple[str, ...] = ()  # dated ids that are the same model
    end_of_life: str | None = None  # ISO date, as the SDK's DEPRECATED_MODELS says
    cache_ttl_1h: bool = True  # takes cache_control's ttl "1h" (the 1-hour prompt cache)

    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(
            raw_completion=False,
            chat=True,
            tools=True,
            prefill=self.prefill,
            sampling=self.sampling,
            thinking_modes=self.thinking_modes,
            price_input=self.prices.input,
            price_output=self.prices.output,
            price_cache_write=self.prices.cache_write,
            price_cache_read=self.prices.cache_read,
        )


def _p(input_: float | None, output: float | None, write: float | None = None, read: float | None = None) -> Prices:
    return Prices(input_, output, write, read)


_OPUS_45_PRICES = _p(5.0, 25.0, 6.25, 0.50)
_SONNET_4_PRICES = _p(3.0, 15.0, 3.75, 0.30)
_SONNET_5_PRICES = _p(2.0, 10.0, 2.50, 0.20)
_OPUS_OLD_PRICES = _p(15.0, 75.0, 18.75, 1.50)
_UNKNOWN = _p(None, None)

_TABLE: tuple[ClaudeModel, ...] = (
    # ---- current lineup (5.x): no prefill, no sampling parameters, adaptive thinking only
    ClaudeModel("claude-opus-5-5", False, False, ADAPTIVE, _p(4.0, 20.0, 5.0, 0.20), forced_tool_use=False),
    ClaudeModel("claude-sonnet-5-5", False, False, ADAPTIVE, _SONNET_5_PRICES, forced_tool_use=False),
    ClaudeModel(
        "claude-haiku-5-5",
        False,
        False,
        ADAPTIVE,
        _p(0.10, 0.50, 0.125, 0.01),
        long_prompt=(100_000, _p(0.50, 2.50, 0.625, 0.05)),
    ),
    ClaudeModel("claude-fable-5-2", False, False, ADAPTIVE, _p(8.0, 40.0), forced_tool_use=False),
    ClaudeModel("claude-fable-5-1", False, False, ADAPTIVE, _p(10.0, 50.0), forced_tool_use=False),
    ClaudeModel("claude-fable-5", False, False, ADAPTIVE, _p(10.0, 50.0)),
    ClaudeModel("claude-mythos-5-2", False, False, ADAPTIVE, _UNKNOWN, forced_tool_use=False),
    ClaudeModel("claude-mythos-5-1", False, False, ADAPTIVE, _UNKNOWN, forced_tool_use=False),
    ClaudeModel("claude-mythos-5", False, False, ADAPTIVE, _UNKNOWN),
    ClaudeModel("claude-sonnet-5", False, False, ADAPTIVE, _SONNET_5_PRICES),
    ClaudeModel("claude-opus-5", False, False, ADAPTIVE, _OPUS_45_PRICES),
    # ---- Opus 4.7 / 4.8: first models without sampling parameters and budgeted thinking
    ClaudeModel("claude-opus-4-8", False, False, ADAPTIVE, _OPUS_45_PRICES),
    ClaudeModel("claude-opus-4-7", False, False, ADAPTIVE, _OPUS_45_PRICES),
    ClaudeModel("claude-mythos-preview", False, False, ADAPTIVE, _UNKNOWN, end_of_life="2026-06-30"),
    # ---- 4.6 generation: no prefill; sampling accepted; budgeted thinking deprecated but accepted
    ClaudeModel("claude-opus-4-6", False, True, BOTH, _OPUS_45_PRICES),
    ClaudeModel("claude-sonnet-4-6", False, True, BOTH, _SONNET_4_PRICES),
    # ---- before 4.6: prefill and sampling accepted, budgeted thinking only
    ClaudeModel(
        "claude-haiku-4-5", True, True, BUDGETED, _p(1.0, 5.0, 1.25, 0.10), snapshots=("claude-haiku-4-5-20251001",)
    ),
    ClaudeModel("claude-opus-4-5", True, True, BUDGETED, _OPUS_45_PRICES, snapshots=("claude-opus-4-5-20251101",)),
    ClaudeModel(
        "claude-sonnet-4-5",
        True,
        True,
        BUDGETED,
        _SONNET_4_PRICES,
        snapshots=("claude-sonnet-4-5-20250929",),
        end_of_life="2026-11-30",
    ),
    ClaudeModel("claude-opus-4-1", True, True, BUDGETED, _OPUS_OLD_PRICES, snapshots=("claude-opus-4-1-20250805",)),
    ClaudeModel(
        "claude-opus-4-0",
        True,
        True,
        BUDGETED,
        _OPUS_OLD_PRICES,
        snapshots=("claude-opus-4-20250514",),
        end_of_life="2026-06-15",
    ),
    ClaudeModel(
        "claude-sonnet-4-0",
        True,
        True,
        BUDGETED,
        _SONNET_4_PRICES,
        snapshots=("claude-sonnet-4-20250514",),
        end_of_life="2026-06-15",
    ),
    ClaudeModel(
        "claude-3-7-sonnet-latest",
        True,
        True,
        BUDGETED,
        _SONNET_4_PRICES,
        snapshots=("claude-3-7-sonnet-20250219",),
        end_of_life="2026-02-19",
    ),
    ClaudeModel(
        "claude-3-5-haiku-latest",
        True,
        True,
        NONE,
        _p(0.80, 4.0, 1.0, 0.08),
        snapshots=("claude-3-5-haiku-20241022",),
        end_of_life="2026-02-19",
    ),
)

_BY_ID: dict[str, ClaudeModel] = {}
for _row in _TABLE:
    for _id in (_row.id, *_row.snapshots):
        _BY_ID[_id] = _row

# What an unknown id gets when the caller opts in: the strictest current rules, no prices.
_UNKNOWN_MODEL = ClaudeModel("unknown", False, False, ADAPTIVE, _UNKNOWN, forced_tool_use=False, cache_ttl_1h=False)


def known_models() -> tuple[str, ...]:
    """Every id the table knows (aliases and dated snapshots)."""
    return tuple(_BY_ID)


def model_info(model_id: str, *, allow_unknown: bool = False) -> ClaudeModel:
    """The table row for ``model_id``; unknown ids are a ConfigError unless opted in."""
    row = _BY_ID.get(model_id)
    if row is not None:
        return row
    if allow_unknown:
        return ClaudeModel(
            model_id, _UNKNOWN_MODEL.prefill, _UNKNOWN_MODEL.sampling, ADAPTIVE, _UNKNOWN, False, cache_ttl_1h=False
        )
    raise ConfigError(
        f"unknown Claude model id {model_id!r}; known ids: {', '.join(sorted(_BY_ID))}. "
        "Add a row to react_bench/models/capabilities.py, or opt in with allow_unknown_model=true "
        "(strictest rules: no prefill, no sampling parameters, adaptive thinking only, no prices)."
    )


# The minimum cacheable prompt length (tokens): a cache breakpoint whose prefix is shorter is
# not written (and not billed as a write). Documented by Anthropic for: Opus 4.5 / 4.6 and
# Haiku 4.5: 4096; Sonnet 4.6: 2048; Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7: 1024;
# Haiku 3.5: 2048. Later models are not in the documents we have: each takes its family's
# latest documented value (Opus, Haiku, Fable, Mythos: 4096; Sonnet: 2048).
_MIN_CACHE_TOKENS = {
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4-0": 1024,
    "claude-sonnet-4-0": 1024,
    "claude-3-7-sonnet-latest": 1024,
    "claude-3-5-haiku-latest": 2048,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-5": 2048,
    "claude-sonnet-5-5": 2048,
}


def min_cache_tokens(model_id: str) -> int:
    row = _BY_ID.get(model_id)
    return _MIN_CACHE_TOKENS.get(row.id if row is not None else model_id, 4096)


def capabilities_for(model_id: str, *, allow_unknown: bool = False) -> ModelCapabilities:
    return model_info(model_id, allow_unknown=allow_unknown).capabilities()


def calls_cost_usd(model_id: str, usages: Iterable[Usage]) -> float | None:
    """The USD cost of several calls, each priced on its own (the long-prompt tier is per
    request); None when any call's price is unknown, never a silent 0."""
    total = 0.0
    for usage in usages:
        cost = cost_usd(model_id, usage)
        if cost is None:
            return None
        total += cost
    return total


def cost_usd(model_id: str, usage: Usage) -> float | None:
    """The USD cost of ``usage`` on ``model_id``; None when the model or a needed price is unknown."""
    row = _BY_ID.get(model_id)
    if row is None or usage.unknown_calls:  # tokens the server did not report cannot be priced
        return None
    prices = row.prices
    if row.long_prompt is not None and usage.total_input_tokens > row.long_prompt[0]:
        prices = row.long_prompt[1]
    total = 0.0
    for tokens, price in (
        (usage.input_tokens, prices.input),
        (usage.output_tokens, prices.output),
        (usage.cache_creation_input_tokens - usage.cache_creation_1h_input_tokens, prices.cache_write),
        (usage.cache_creation_1h_input_tokens, prices.cache_write_1h),
        (usage.cache_read_input_tokens, prices.cache_read),
    ):
        if tokens:
            if price is None:
                return None
            total += tokens * price / 1_000_000
    return total
