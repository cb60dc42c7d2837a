"""``executor=ray``: the episodes of one run on Ray workers; the run's own process stays its one writer.

What runs where. Each *worker* is a Ray actor that builds, once, what solving needs from the
run's config (``episode.build_solver``: the task's environment factory, the model stack with its
retries, rate limiter and request cache, the prompts) and then solves the examples it is given
(``episode.solve_example``), several at once where ``concurrency`` asks for more examples in flight
than there are workers. Environments, local models and API calls run there. The *driver* (the
process that ran ``scripts/eval.py``) keeps everything that makes a run trustworthy: it alone
writes ``examples.jsonl`` and ``calls.jsonl`` (group commits, fsync), skips finished examples on
resume and reruns errors with ``retry_errors``, admits each example against the cost budget
before it is sent, and draws the progress bar. A worker returns a ``Solved`` (outcome, calls,
counts, events); nothing a worker does reaches the run folder but through the driver.

One rate limit across the cluster: with ``model.requests_per_minute`` / ``tokens_per_minute``
set, every worker's ``LimitedModel`` asks one *limiter* actor (a single FIFO queue on one clock)
how long to wait before each request, so all workers together keep the limits.

The request cache is the shared folder ``$REACT_BENCH_REQUEST_CACHE`` (the driver's, passed to
the workers with the other ``REACT_BENCH_*`` / ``ANTHROPIC_*`` / ``OPENAI_*`` variables it has
set): entries are written atomically under names of their own, so workers on several hosts need
that folder on a shared filesystem, as they need the data and the repository at the same path.

Faults. A worker that dies (its process killed, its node lost) fails the episodes it held; each
is sent once more to another worker, and a replacement worker is started (it joins once Ray can
place it). An episode lost twice is written as an error naming the loss, so ``resume=<run>
retry_errors=true`` runs it again; an episode is written once, when its result is back, so
nothing is lost or counted twice. The driver killed mid-run takes its workers with it (they are
its actors); ``resume=`` continues the run. A bug in the solver (an exception of ours inside a
worker) is raised in the driver, as it would be in one process.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from react_bench.episode import Solved, build_solver, env_config, solve_example
from react_bench.errors import ConfigError
from react_bench.events import AgentEvent
from react_bench.executors.base import Plain
from react_bench.methods.core import Outcome
from react_bench.methods.registry import get_method
from react_bench.models.counting import Counts
from react_bench.redact import secret_name
from react_bench.runconfig import MAX_CONCURRENCY, RaySettings, RunConfig
from react_bench.tasks import Example, load_task
from react_bench.types import Usage

RAY_HINT = "executor=ray needs Ray: `make setup` installs it (or pip install -e '.[ray]')"
PASSED_ENV = ("REACT_BENCH_", "ANTHROPIC_", "OPENAI_")  # the variables the driver passes on to its workers
JOIN_TIMEOUT_S = 120.0  # a worker not placed by then (no node has its CPUs) is given up


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_HINT) from None
    return ray


def worker_env(cfg: RunConfig | None = None) -> dict[str, str]:
    """The environment the workers need to behave as this process: the request cache's folder (as
    an absolute path), data folders, API endpoints, and the key variable the model names.
    ``connect`` splits it: secrets (``redact.secret_name``, and the model's key variable) reach
    the workers through their setup hook, never as ``runtime_env`` variables, which Ray writes in
    clear into its session logs (``runtime_env_agent.log``)."""
    from react_bench.models.cache import default_request_cache_dir

    env = {k: v for k, v in os.environ.items() if k.startswith(PASSED_ENV)}
    env["REACT_BENCH_REQUEST_CACHE"] = str(default_request_cache_dir().resolve())
    for name in key_variables(cfg):
        if name in os.environ:
            env[name] = os.environ[name]
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return env


def key_variables(cfg: RunConfig | None) -> tuple[str, ...]:
    """The names of the variables the run's model reads its key from."""
    if cfg is None:
        return ()
    names = (cfg.model.settings.get(key) for key in ("api_key_env", "key_env"))
    return tuple(n for n in names if isinstance(n, str) and n)


class SetEnv:
    """A Ray worker process's setup hook: sets the secret variables in the worker's environment.
    Ray exports a callable hook to its control store (GCS) and names only its key in the
    ``runtime_env``, so the values reach no log file."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.__name__ = "react_bench_set_env"  # the name Ray records for the hook (it reads __name__)

    def __call__(self) -> None:
        os.environ.update(self.values)

    def __repr__(self) -> str:  # never the values, wherever Ray prints the hook
        return f"SetEnv({sorted(self.values)})"


def split_secrets(env: dict[str, str], keys: tuple[str, ...] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """``env`` as (plain variables, secrets): a secret by its name, or one of ``keys``."""
    secret = {k: v for k, v in env.items() if k in keys or secret_name(k)}
    return {k: v for k, v in env.items() if k not in secret}, secret


def connect(address: str | None, env: dict[str, str], keys: tuple[str, ...] = ()) -> bool:
    """Connect to the cluster at ``address`` (``auto``, ``host:port``) or start a Ray instance of
    this machine (``None``), the workers given ``env`` (its secrets, and the variables named in
    ``keys``, by a setup hook: ``worker_env``). True if this call connected (and the caller
    should disconnect)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    plain, secrets = split_secrets(env, keys)
    runtime_env: dict[str, Any] = {"env_vars": plain}
    if secrets:
        runtime_env["worker_process_setup_hook"] = SetEnv(secrets)
    kwargs: dict[str, Any] = {"runtime_env": runtime_env, "logging_level": "WARNING", "log_to_driver": True}
    if address is None:
        kwargs.update(include_dashboard=False)
    else:
        kwargs["address"] = address
        _reachable(address)
    try:
        ray.init(**kwargs)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = f"ray.address={address}" if address else "a local Ray instance"
        hint = ""
        if address is not None and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
            # the head may use token authentication (Ray 2.60 turns it on when the head has a token)
            hint = (
                "; a cluster with token authentication needs RAY_AUTH_MODE=token and the head's token "
                "(~/.ray/auth_token copied here, or RAY_AUTH_TOKEN): docs/guide.md, 'Past one machine: Ray'"
            )
        raise ConfigError(f"executor=ray: could not connect to {where} ({first}){hint}") from None
    return True


def _reachable(address: str, timeout_s: float = 10.0) -> None:
    """A ``host:port`` that nothing answers on is said at once (Ray itself would keep trying)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # auto, ray://..., or a form Ray reads itself
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except OSError as exc:
        raise ConfigError(
            f"executor=ray: could not connect to ray.address={address} ({exc.strerror or exc}); "
            f"start the cluster's head there (ray start --head --port={port}) or set "
            f"ray.address=auto"
        ) from None


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    e = ray.exceptions
    return (
        e.RayActorError,
        e.WorkerCrashedError,
        e.NodeDiedError,
        e.ObjectLostError,
        e.LocalRayletDiedError,
        e.OutOfMemoryError,
    )


class _Worker:
    """A Ray actor (``ray.remote`` is applied in ``WorkerPool.start``, so importing this module
    needs no Ray): one run's solver, built once."""

    def __init__(self, cfg: RunConfig, cwd: str, limiter: Any, events: bool) -> None:
        if os.path.isdir(cwd):  # relative paths of the config (data, scripts) as the driver reads them
            os.chdir(cwd)
        from react_bench.models import build_stack

        task = load_task(cfg.task.name)
        pacer = None if limiter is None else (lambda interval: limiter.reserve.remote(interval))
        self.stack = build_stack(cfg.model, request_cache=cfg.request_cache, pacer=pacer)
        _, self.env_factory, self.solver = build_solver(cfg, task, env_config(cfg, task), self.stack.top)
        self.events = events
        import ray

        self.where = f"{ray.get_runtime_context().get_node_id()[:8]}/{os.getpid()}"

    async def ready(self) -> str:
        return self.where

    async def solve(self, example: Example) -> Solved:
        events: list[Any] = []
        solved = await solve_example(self.solver, example, events.append if self.events else None)
        return replace(solved, events=events, worker=self.where)


class _Limiter:
    """A Ray actor: the one FIFO queue of the run's requests (calls run one at a time)."""

    def __init__(self) -> None:
        self._next = 0.0

    def reserve(self, interval: float) -> float:
        now = time.monotonic()
        start = max(now, self._next)
        self._next = start + interval
        return start - now


@dataclass
class WorkerPool(Plain):
    """The driver's side: workers and their free slots (one per example a worker may hold)."""

    cfg: RunConfig
    ray: Any
    per_worker: int
    workers: int
    events: bool
    out: TextIO
    connected: bool = False
    limiter: Any = None
    live: set[Any] = field(default_factory=set)
    slots: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    starting: int = 0
    replacements: int = 0
    failures: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def capacity(self) -> int:
        return self.workers * self.per_worker

    def concurrency(self, asked: int) -> int:
        return min(max(asked, self.capacity), MAX_CONCURRENCY)  # every worker busy

    async def prepare(self, todo: list[Example]) -> None:
        return None  # the workers are started (``start``); nothing runs before the first episode

    @classmethod
    async def start(cls, cfg: RunConfig, run_id: str, *, events: bool, out: TextIO) -> WorkerPool:
        ray = import_ray()
        connected = connect(cfg.ray.address, worker_env(cfg), key_variables(cfg))
        pool = None
        try:
            workers = cfg.ray.workers or await _cluster_slots(ray, cfg.ray)
            per = max(1, -(-cfg.concurrency // workers))  # ceil: concurrency examples in flight in all
            pool = cls(cfg, ray, per, workers, events, out, connected)
            spec = cfg.model
            if spec.requests_per_minute or spec.tokens_per_minute:
                pool.limiter = ray.remote(num_cpus=0)(_Limiter).remote()
            for _ in range(workers):
                pool._spawn()
            await pool._first_ready()
        except BaseException:
            # a start that fails leaves no connection behind: Ray ends a process whose driver stays
            # connected to a cluster that goes away (exit 1, nothing said), long after the error
            if pool is not None:
                pool.close()
            elif connected:
                ray.shutdown()
            raise
        print(f"ray: {workers} worker(s) x {per} example(s) at once, {_cluster_summary(ray)}", file=out, flush=True)
        return pool

    def _spawn(self) -> None:
        remote = self.ray.remote(_Worker).options(
            num_cpus=self.cfg.ray.num_cpus,
            max_restarts=0,
            max_concurrency=self.per_worker,
            scheduling_strategy="SPREAD",
        )
        actor = remote.remote(self.cfg, os.getcwd(), self.limiter, self.events)
        self.starting += 1
        task = asyncio.ensure_future(self._join(actor))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _join(self, actor: Any) -> None:
        try:
            await asyncio.wait_for(asyncio.wrap_future(actor.ready.remote().future()), JOIN_TIMEOUT_S)
        except Exception as exc:  # a worker that cannot be set up or placed: said, then given up
            self.failures.append(_first_line(exc))
            self.ray.kill(actor, no_restart=True)
            return
        finally:
            self.starting -= 1
        self.live.add(actor)
        for _ in range(self.per_worker):
            self.slots.put_nowait(actor)

    async def _first_ready(self) -> None:
        while not self.live:
            if not self.starting:
                raise ConfigError(f"executor=ray: no worker could be started ({self.failures[0]})")
            await asyncio.sleep(0.05)

    async def _take(self) -> Any:
        while True:
            if not self.live and not self.starting:
                raise WorkerLost("no Ray worker is left" + (f" ({self.failures[-1]})" if self.failures else ""))
            try:
                actor = await asyncio.wait_for(self.slots.get(), 1.0)
            except TimeoutError:
                continue
            if actor in self.live:
                return actor

    def _lost(self, actor: Any, exc: BaseException) -> None:
        if actor not in self.live:
            return  # another episode of the same worker said so first
        self.live.discard(actor)
        self.failures.append(_first_line(exc))
        print(f"ray: a worker was lost ({self.failures[-1]}); its episodes go to another worker", file=self.out)
        try:
            self.ray.kill(actor, no_restart=True)
        except Exception:  # already gone
            pass
        if self.replacements < self.workers:  # a replacement joins once Ray can place it
            self.replacements += 1
            self._spawn()

    async def solve(self, example: Example, sink: Callable[[AgentEvent], None] | None = None) -> Solved:
        """The example solved by a worker (its events given to ``sink`` once the episode is back, as
        the worker saw them); lost with its worker, once more by another; lost twice (or no worker
        left): an error outcome naming the loss, rerun by ``retry_errors``."""
        solved = await self._solve(example)
        if sink is not None:
            for event in solved.events:
                sink(event)
        return solved

    async def _solve(self, example: Example) -> Solved:
        lost_errors = _lost_errors(self.ray)
        losses: list[str] = []
        for _ in range(2):
            try:
                actor = await self._take()
            except WorkerLost as exc:
                losses.append(str(exc))
                break
            try:
                solved: Solved = await actor.solve.remote(example)
            except lost_errors as exc:
                self._lost(actor, exc)
                losses.append(_first_line(exc))
                continue
            except self.ray.exceptions.RayTaskError as exc:  # ours, raised in the worker: as in one process
                raise _cause(exc) from None
            self.slots.put_nowait(actor)
            return solved
        message = f"ray: the episode's worker was lost ({'; then '.join(losses)}); retry_errors=true reruns it"
        part = get_method(self.cfg.solve.mode).spec.first
        return Solved(Outcome("", part, "error", 0, Usage(), error=message), [], Counts(), 0.0)

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self.connected:  # our connection: its actors end with it
            self.ray.shutdown()
            return
        for actor in self.live:
            self.ray.kill(actor, no_restart=True)
        if self.limiter is not None:
            self.ray.kill(self.limiter, no_restart=True)


class WorkerLost(Exception):
    pass


SLOT_WAIT_S = 30.0  # how long a run waits for a CPU that a run just before it is still releasing


async def _cluster_slots(ray: Any, settings: RaySettings, wait_s: float | None = None) -> int:
    """Workers by the free CPUs. A run started right after another on the same cluster finds its
    actors' CPUs still held for a moment after that driver left: it waits up to ``wait_s`` for a
    worker's worth of CPU before it says there is none."""
    deadline = time.monotonic() + (SLOT_WAIT_S if wait_s is None else wait_s)
    while True:
        cpus = float(ray.available_resources().get("CPU", 0.0))
        if settings.num_cpus <= 0:
            return max(1, int(cpus))
        workers = int(cpus // settings.num_cpus)
        if workers >= 1:
            return workers
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"executor=ray: the cluster has {cpus:g} free CPU(s), a worker needs "
                f"ray.num_cpus={settings.num_cpus:g}; add nodes or set ray.num_cpus lower"
            )
        await asyncio.sleep(0.5)


def _cluster_summary(ray: Any) -> str:
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    cpus = sum(float(n.get("Resources", {}).get("CPU", 0.0)) for n in nodes)
    return f"on {len(nodes)} node(s) with {cpus:g} CPU(s)"


def _cause(exc: BaseException) -> BaseException:
    """What was raised inside a Ray worker, without Ray's wrapping (whose first line names only the
    actor method, its pid and actor id): a bad setting or a script run out reaches the user as the
    project's own one-line message."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _first_line(exc: BaseException) -> str:
    exc = _cause(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
