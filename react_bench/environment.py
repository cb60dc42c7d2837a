"""The seam between the agent loop and a benchmark: examples, actions, observations, environments.

Every benchmark plugs in here and nowhere else. The loop, the runners and the modes know these
types and no task or environment by name; Wikipedia (``envs/wiki``), ALFWorld and WebShop are
implementations.

- An ``Example`` is one item of a benchmark: its id, the input shown in results (a question, a
  claim, a household goal, a shopping instruction), the reference answer where the task has
  one (``gold``; empty where success is the environment's reward) and metadata for breakdowns.
- An ``Environment`` serves one episode. ``reset(example)`` starts it and returns the first
  observation (what the agent is told: for Wikipedia the question itself); ``actions()``
  declares what it offers (name, parameters, description: the tool-use runner's tools); and
  ``step(action)`` returns an ``Observation``. Construction is cheap and does no I/O (a run
  asks a fresh environment for its actions before any episode); ``reset`` does the work.
- An ``Action`` is a name and arguments, and, from the text runner, the text the model wrote
  (as the environment's grammar executed it). A text that names no action has the empty name:
  the environment answers it with its own "invalid action" observation.
- An ``Observation`` ends the episode when ``done`` is set or it carries a ``final_answer``
  (a task's answer action, e.g. Wikipedia's ``finish``); ``reward`` is the environment's score
  of the episode where it gives one (ALFWorld's ``won``, WebShop's reward). ``is_error`` marks a
  result the model should read as a failure (the tool-use runner's ``is_error``).

Environments are asyncio-friendly: blocking work (a game engine, an HTTP call, SQLite) runs in
a worker thread inside ``step`` / ``reset``, through ``run_blocking`` (a cancelled episode waits
for its call to return, so nothing is closed under it). One environment per episode; what they
share (a wiki backend, a server) lives in the factory, closed once at the end of a run. An environment
that holds resources of its own episode (a game engine) may have a ``close()``: the solver
calls it when the episode ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from react_bench.models.base import ToolSpec

UNPARSED = ""  # the name of an action whose text matched no action of the environment


class EpisodeAbort(Exception):
    """Raised by an environment when the episode cannot go on faithfully: its server is down or
    answered with an error, a replayed observation was never recorded. Unlike an action that
    fails (an ``is_error`` observation, the episode goes on), it ends the episode with reason
    ``error``, so the example can be run again (``retry_errors``)."""


@dataclass(frozen=True)
class Example:
    id: str
    question: str  # the input shown in results: a question, a claim, a goal, an instruction
    gold: str  # the reference answer ("" where the environment's reward decides)
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    epoch: int = 1  # the attempt (``epochs=k``: 1..k); its own record line, cache keys and seeds

    @property
    def key(self) -> tuple[str, int]:
        """The attempt's identity in a run folder: (id, epoch)."""
        return self.id, self.epoch


@dataclass(frozen=True)
class Action:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    text: str | None = None  # the action as the text runner wrote and executed it


@dataclass(frozen=True)
class Observation:
    """What an action returned (or ``reset``: the first observation)."""

    text: str
    is_error: bool = False
    final_answer: str | None = None  # an answer action: the episode ends with this answer
    done: bool = False  # the environment ended the episode (a game won, a purchase made)
    reward: float | None = None
    info: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ends(self) -> bool:
        return self.done or self.final_answer is not None


@runtime_checkable
class Environment(Protocol):
    def actions(self) -> tuple[ToolSpec, ...]: ...

    async def reset(self, example: Example) -> Observation: ...

    async def step(self, action: Action) -> Observation: ...

    def close(self) -> None:
        """The episode is over: release what it holds (a game engine); most hold nothing."""


class EnvFactory(Protocol):
    """Makes one environment per episode; ``close`` releases what they share, once per run."""

    def __call__(self) -> Environment: ...

    def close(self) -> None: ...


@runtime_checkable
class ShopPages(Protocol):
    """A shop's pages as a method that reads them its own way takes them (LATS's official WebShop
    port, which renders pages and sends searches as the WebShop environment does): the shop's
    address, a path's HTML (blocking), a search text as it can be sent, and a page's HTML as the
    environment's renderer reads it (an object with ``text``, ``options``, ``asins``, ``reward``).
    The WebShop environment is one; a method reaches a shop through this seam only."""

    url: str

    def get_page(self, path: str) -> str: ...

    def sendable_query(self, query: str) -> str: ...

    def page_view(self, html: str, url: str, first_page: bool, results_shown: int) -> Any: ...


@runtime_checkable
class ShopFactory(Protocol):
    """An ``EnvFactory`` whose environments are a shop's pages (``ShopPages``): ``pages()`` gives one."""

    def __call__(self) -> Environment: ...

    def pages(self) -> ShopPages: ...


T = TypeVar("T")


class _Uncancellable(asyncio.Future[Any]):
    """A future that refuses a cancel: the task awaiting it is cancelled once it completes
    (``Task.cancel`` then marks the task, which gets its CancelledError when it wakes up)."""

    def cancel(self, msg: Any | None = None) -> bool:
        return False


@functools.cache
def _threads() -> ThreadPoolExecutor:
    """The environments' worker threads, made on first use."""
    return ThreadPoolExecutor(thread_name_prefix="env")


def _settle(call: Future[Any], done: asyncio.Future[Any]) -> None:
    error = call.exception()
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(call.result())


async def run_blocking(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` in a worker thread (with the caller's context, as ``asyncio.to_thread``),
    awaited to its end even when the caller is cancelled; the cancellation then goes on.

    A thread cannot be stopped: a cancelled ``to_thread`` leaves its call running, and what the
    cancellation closes next (the episode's game engine, the run's SQLite wiki, the HTTP client)
    would be closed under it; a SQLite connection closed while another thread reads it crashes
    the process (SIGSEGV, seen on Ctrl-C in a HotpotQA run). The calls are short or bounded (a
    wiki query: milliseconds; a game step; an HTTP request under its timeout). The thread hands
    its result straight to the awaiting task (no extra turn of the loop: a little cheaper than
    ``to_thread``). The pool has ``ThreadPoolExecutor``'s default size, as asyncio's own."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = _Uncancellable(loop=loop)
    call = _threads().submit(contextvars.copy_context().run, fn, *args)
    call.add_done_callback(lambda call: _hand_back(loop, call, done))
    return await done


def _hand_back(loop: asyncio.AbstractEventLoop, call: Future[Any], done: asyncio.Future[Any]) -> None:
    try:
        loop.call_soon_threadsafe(_settle, call, done)
    except RuntimeError:  # the loop is closed: nobody awaits the result any more
        pass


def action_parameter(spec: ToolSpec) -> str | None:
    """The one parameter of a single-string action (``search(entity)``), if it has exactly one."""
    properties = list((spec.input_schema.get("properties") or {}).keys())
    return properties[0] if len(properties) == 1 else None


def string_action(name: str, description: str, param: str, param_description: str) -> ToolSpec:
    """An action taking one string, as most text benchmarks' actions do (``search[query]``)."""
    schema = {
        "type": "object",
        "properties": {param: {"type": "string", "description": param_description}},
        "required": [param],
        "additionalProperties": False,
    }
    return ToolSpec(name, description, schema)
