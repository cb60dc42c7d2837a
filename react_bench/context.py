"""Context growth: what is *sent* of an episode's history (the ``context`` setting).

An agent's history only grows, and every turn resends it, so input tokens per turn rise with
every step and a run's total grows quadratically. Four remedies, each a *view* of the history
that a policy asks for when it builds a request; the stored history stays append-only and
complete (trajectories, replay and resume see everything). Thinking blocks and their
signatures are never edited: a remedy keeps a turn whole or leaves it out whole.

- ``full`` (the paper): everything is resent.
- ``truncate``: the observations of the last ``keep_last`` steps are sent whole; older ones are
  replaced by a one-line stub naming the step, the action and the size elided. The model may
  forget what it saw and repeat work; the stubs change the prefix a prompt cache needs.
- ``compact``: once the history passes ``threshold_tokens`` (about four characters a token),
  one model call summarises the steps before the last ``keep_recent`` and the summary replaces
  them in what is sent; the summary is kept and made again only when the history outgrows the
  threshold once more. The call is counted and recorded like any other (so replay serves it).
- ``subagent``: one more action, ``research[question]`` (text runner ``Research[...]``, a tool
  for the tool-use runner), runs an inner ReAct episode with its own history and step cap
  (``inner_max_steps``) on the same environment, and returns only its conclusion as the
  observation. The inner episodes are kept in the trajectory (route ``subagent``) and their
  tokens and calls are added to the example's. It is an environment wrapper (``SubagentEnv``),
  which also owns the note that tells the model of the extra action.
- ``window`` (WebShop's notebook, the paper's own remedy there): the text runner's prompt keeps
  the last ``window_chars - len(instruction + exemplars)`` characters of the trajectory (cut
  mid-text, as the notebook did); the tool-use runner drops whole old steps until the history's
  text fits in ``window_chars``.

``ContextView`` is the one object both policies ask (``view``); it is built from the config,
holds an episode's state (the compactor's summary) and says how many model calls it made.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, assert_never, get_args

from react_bench.environment import Action, Environment, Example, Observation, string_action
from react_bench.errors import ConfigError
from react_bench.models.base import ModelClient, ModelRequest, ToolSpec, generate
from react_bench.record import Episode
from react_bench.types import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage

Remedy = Literal["full", "truncate", "compact", "subagent", "window"]
REMEDIES: tuple[str, ...] = get_args(Remedy)
SUMMARY_INSTRUCTION = (
    "Summarise the steps below for yourself: what was searched, what was found (names, dates, numbers "
    "exactly as written), and what is still unknown. Write at most five sentences.\n\n"
)


@dataclass(frozen=True)
class ContextConfig:
    name: Remedy = "full"
    keep_last: int = 2  # truncate: steps whose observations are sent whole
    threshold_tokens: int = 2000  # compact: summarise when the history passes this
    keep_recent: int = 1  # compact: steps kept whole after the summary
    inner_max_steps: int = 4  # subagent: the inner episode's step cap
    summary_max_tokens: int = 300
    window_chars: int = 6400  # window: the prompt's length in characters (WebShop's notebook)

    def __post_init__(self) -> None:
        if self.name not in REMEDIES:
            raise ConfigError(f"context={self.name}: choose one of {', '.join(REMEDIES)}")
        if self.keep_last < 0 or self.keep_recent < 0 or self.threshold_tokens < 1 or self.inner_max_steps < 1:
            raise ConfigError(f"context settings out of range: {self}")
        if self.window_chars < 1:
            raise ConfigError(f"context.window_chars={self.window_chars}: must be at least 1")


def _tokens(messages: Sequence[Message]) -> int:
    return (
        sum(
            len(getattr(b, "text", "") or getattr(b, "content", "") or str(getattr(b, "input", "")))
            for m in messages
            for b in m.content
        )
        // 4
    )


def _action_of(turn: Message) -> str:
    calls = [
        f"{b.name}({', '.join(str(v) for v in b.input.values())})" for b in turn.content if isinstance(b, ToolUseBlock)
    ]
    if calls:
        return "; ".join(calls)
    found = re.findall(r"^Action \d+: (.*)$", turn.text, re.MULTILINE)
    return found[-1] if found else "?"


def stub(step: int, action: str, size: int) -> str:
    return f"[observation of step {step} elided: {action}, {size} characters]"


def truncate(history: Sequence[Message], keep_last: int) -> list[Message]:
    """Observations before the last ``keep_last`` steps replaced by stubs (whole turns kept)."""
    steps = len(history) // 2
    out: list[Message] = []
    for index, message in enumerate(history):
        step = index // 2 + 1
        if message.role == "user" and step <= steps - keep_last:
            action = _action_of(history[index - 1])
            stubbed = tuple(
                ToolResultBlock(b.tool_use_id, stub(step, action, len(b.content)), b.is_error)
                if isinstance(b, ToolResultBlock)
                else b
                for b in message.content
            )
            out.append(Message("user", stubbed))
        else:
            out.append(message)
    return out


@dataclass
class Compactor:
    """The ``compact`` remedy's state for one episode: the summary and how many steps it covers."""

    config: ContextConfig
    summary: str = ""
    covered: int = 0  # steps the summary replaces
    calls: int = 0

    async def view(
        self, model: ModelClient, history: Sequence[Message], render: Callable[[Sequence[Message]], str]
    ) -> tuple[str, list[Message], Usage]:
        """(summary, the steps still sent whole, what a summary call made now cost); summarises
        again when the steps after the summary pass the threshold."""
        rest = list(history[2 * self.covered :])
        spent = Usage()
        if _tokens(rest) > self.config.threshold_tokens and len(rest) // 2 > self.config.keep_recent:
            upto = len(history) // 2 - self.config.keep_recent
            transcript = render(history[2 * self.covered : 2 * upto])
            prior = f"Earlier summary: {self.summary}\n\n" if self.summary else ""
            request = ModelRequest(
                messages=(Message.user(SUMMARY_INSTRUCTION + prior + transcript),),
                max_tokens=self.config.summary_max_tokens,
                temperature=0.0,
            )
            if model.capabilities.raw_completion:
                request = replace(request, messages=(), prompt=SUMMARY_INSTRUCTION + prior + transcript + "\nSummary:")
            response = await generate(model, request)
            self.summary, self.covered = response.text.strip(), upto
            self.calls, spent = self.calls + 1, response.usage
            rest = list(history[2 * self.covered :])
        return self.summary, rest, spent


def summary_block(summary: str, covered: int) -> TextBlock:
    return TextBlock(f"(Summary of steps 1-{covered}: {summary})\n")


@dataclass(frozen=True)
class View:
    """What is sent of a history: a summary of its first ``covered`` steps (or none), the steps
    sent as they are, what the summary call cost, and the model calls made for it now."""

    history: list[Message]
    summary_text: str = ""
    covered: int = 0
    spent: Usage = Usage()
    calls: int = 0


class ContextView:
    """The ``context`` setting for one episode (module docstring); both policies ask ``view``."""

    def __init__(self, config: ContextConfig | None = None):
        self.config = config if config is not None else ContextConfig()
        self._compactor = Compactor(self.config) if self.config.name == "compact" else None

    @property
    def window_chars(self) -> int | None:
        return self.config.window_chars if self.config.name == "window" else None

    @property
    def adds_actions(self) -> bool:
        """Whether the remedy wraps the environment (``subagent``: the ``research`` action)."""
        return self.config.name == "subagent"

    async def view(
        self, model: ModelClient, history: Sequence[Message], render: Callable[[Sequence[Message]], str]
    ) -> View:
        match self.config.name:
            case "full" | "subagent" | "window":  # window: the policy fits what it sends (``fit_steps``)
                return View(list(history))
            case "truncate":
                return View(truncate(history, self.config.keep_last))
            case "compact":
                assert self._compactor is not None
                calls = self._compactor.calls
                text, rest, spent = await self._compactor.view(model, history, render)
                covered = self._compactor.covered
                summary = summary_block(text, covered).text if covered else ""
                return View(rest, summary, covered, spent, self._compactor.calls - calls)
            case _ as never:
                assert_never(never)

    def fit_steps(self, history: Sequence[Message], render: Callable[[Sequence[Message]], str]) -> list[Message]:
        """``window`` for a conversation (the tool-use runner): the newest whole steps whose
        rendered text fits in ``window_chars`` (at least the last step); else the history as is.
        (The text runner cuts its prompt's characters instead, as WebShop's notebook did.)"""
        kept = list(history)
        if self.window_chars is not None:
            while len(kept) > 2 and len(render(kept)) > self.window_chars:
                kept = kept[2:]
        return kept


RESEARCH_ACTION = "research"
RESEARCH_NOTE_TEXT = (
    "You can also use Research[question], which hands a sub-question to a helper that searches on its "
    "own and answers with its conclusion only.\n"
)
RESEARCH_NOTE_TOOLS = (
    "\nYou can also call research(question): a helper searches on its own and returns only its conclusion."
)


class SubagentEnv:
    """The ``subagent`` remedy: the environment plus ``research``, which runs an inner episode.

    ``run_inner(question)`` (the solver's) returns the inner episode's outcome; its conclusion
    is the observation; its episodes, tokens and calls are collected here for the example.
    ``note(runner)`` is the line the instruction gains, naming the extra action.
    """

    def __init__(self, env: Environment, run_inner: Callable[[str], Awaitable[Any]]):
        self.env = env
        self.run_inner = run_inner
        self.episodes: list[Episode] = []
        self.usage = Usage()
        self.calls = 0

    @staticmethod
    def note(runner: str) -> str:
        return RESEARCH_NOTE_TEXT if runner == "text" else RESEARCH_NOTE_TOOLS

    def actions(self) -> tuple[ToolSpec, ...]:
        research = string_action(
            RESEARCH_ACTION,
            "Hand a sub-question to a helper that searches on its own; returns only its conclusion.",
            "question",
            "The sub-question.",
        )
        return (*self.env.actions(), research)

    async def reset(self, example: Example) -> Observation:
        return await self.env.reset(example)

    def close(self) -> None:
        self.env.close()

    async def step(self, action: Action) -> Observation:
        if action.name == RESEARCH_ACTION:
            return await self._research(str(action.arguments.get("question", "")))
        return await self.env.step(action)

    async def _research(self, question: str) -> Observation:
        if not question.strip():
            return Observation("Research needs a question.", is_error=True)
        outcome = await self.run_inner(question)
        self.episodes += [replace(e, route="subagent") for e in outcome.episodes]
        self.usage = self.usage + outcome.usage
        self.calls += outcome.stats.calls
        conclusion = outcome.prediction.strip() or "the helper found no answer"
        return Observation(f"Conclusion of the research on {question!r}: {conclusion}")
