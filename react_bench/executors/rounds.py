"""``batch=true``: every model request of a run through the Message Batches API, in rounds, at half price.

A batch is a different way to *execute* the same requests, not a different mode: the episode
loop, the runners and the environments are unchanged. ``RoundBatcher`` is a model layer put
beneath the request cache (``BatchExecutor`` in evaluate.py puts it there):

- **Rounds.** All of a run's episodes run at once (each a *lane*). A request waits in the round's
  queue; when every open lane is waiting on the model, and the queue has stopped growing for
  ``SETTLE_S`` (CoT-SC's samples, asked at once, arrive over a few turns of the event loop),
  the queue is submitted as one round: one batch, split where the API's limits require (the
  client's ``batch_limits``: Anthropic 100,000 requests or 256 MB, OpenAI 50,000 or 200 MB, and
  OpenAI's one endpoint a batch), polled every ``batch_poll_s``, and
  each result is handed to its episode, which steps its environment and asks again. A run
  takes as many rounds as its longest episode makes calls (plus one where a result failed).
- **The same trajectories as live**: a request's ``custom_id`` is its request-cache key, each
  answer is written to the request cache and returned exactly as a live call's (the client's
  stop sequences applied), so given the same answers a run's records are those of a live run.
- **Failures**: a result that errored, expired or was cancelled goes into the next round; a
  request that failed ``MAX_BATCH_TRIES`` rounds is sent live (through the retry and rate
  layers) and nothing is lost. A batch the API refuses ends the run in one line.
- **Resumable at any point**: the batches and the requests they carry are in ``batches.json`` in
  the run folder, written right after each submission. A resumed run finds the answers of the
  collected rounds in the request cache; a request that is in a batch not yet collected waits
  for that batch (polled and collected by its id), so no request is sent twice or paid twice.
- **Price**: the responses of this run's batches (``responses`` in ``batches.json``) are priced
  at half (``batch_response_ids``; evaluate's ``_costs``), prompt-cache reads and writes as the
  API bills them.
- **Budget** (``max_cost_usd``): every example starts (none reserves its estimate, which would
  keep the others out of its rounds), unless what was spent already passes the budget with one
  more; no round is submitted once what was spent, plus the round's requests at the mean half
  price of the answers so far, would pass the budget. The episodes then waiting end unrecorded
  (``OverBudget``): the run stops with exit 4, and a resumed run with a larger budget goes on,
  the answers already paid for served from the request cache.
- **Progress**: lines above the progress bar: each round as it goes and comes back
  (``batch round 4/8: 312 request(s) in 1 batch(es)``; 8: the most rounds the run can take),
  and at each poll of a long one ``batch round 4/8: 312 waiting, batch in progress 3 min``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

from react_bench import rundir
from react_bench.errors import ConfigError
from react_bench.events import StreamEvent
from react_bench.models.base import BatchClient, ModelClient, ModelError, ModelLayer, ModelRequest, stream_response
from react_bench.models.cache import CachedModel, write_entry
from react_bench.models.collector import response_to_events
from react_bench.models.stack import ModelStack
from react_bench.types import ModelResponse, Usage, response_to_dict

BATCHES = "batches.json"
_CACHE_KEY = re.compile(r"[0-9a-f]{16,128}")  # a request cache key (its file's name): what a custom_id is
MAX_BATCH_TRIES = 2  # rounds a request may fail in before it is sent live
BATCH_LANES = 2048  # episodes at once under batch=true (more wait for a lane; each holds an environment)
CREATE_TRIES = 5  # a batch the API could not take for a passing reason (429, 5xx, the network): tried again
SETTLE_S = 0.05  # the queue must stop growing this long before a round goes


def batch_client(stack: ModelStack) -> tuple[CachedModel, BatchClient]:
    """The run's request cache and its provider's batch API (both are needed)."""
    cache, client = stack.cache, stack.client
    if not isinstance(cache, CachedModel) or not isinstance(client, BatchClient):
        raise ConfigError(
            "batch=true needs a model whose API takes batches (model=claude-*, or model=openai on a server with "
            "/v1/batches) and the request cache (cache=true)"
        )
    return cache, client


def load_state(run_dir: Path) -> dict[str, Any]:
    path = run_dir / BATCHES
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"batches": []}


def batch_response_ids(run_dir: Path) -> set[str]:
    """Ids of the responses that came from this run's batches (priced at half)."""
    return {i for b in load_state(run_dir)["batches"] for i in b.get("responses", [])}


@dataclass
class _Lane:
    """One episode of the run (an example's attempt); ``waiting``: its requests in a round."""

    waiting: int = 0


_LANE: contextvars.ContextVar[_Lane | None] = contextvars.ContextVar("react_bench_batch_lane", default=None)


@dataclass
class _Waiting:
    request: ModelRequest
    futures: list[asyncio.Future[ModelResponse]] = field(default_factory=list)
    tries: int = 0


@dataclass
class RoundBatcher(ModelLayer):
    """The layer (module docstring); a request's ``custom_id`` is its key in ``cache``."""

    inner: ModelClient  # live calls (a request that failed in MAX_BATCH_TRIES rounds)
    client: BatchClient
    cache: CachedModel
    run_dir: Path
    out: TextIO
    poll_s: float = 30.0
    batched: set[str] = field(default_factory=set)  # ids of the responses the batches gave
    rounds: int = 0
    most: int = 0  # the most rounds the run can take (estimate.rounds), for "round 4/8"
    say: Callable[[str], None] | None = None  # the progress bar's line writer, once there is one
    _open: dict[int, _Lane] = field(default_factory=dict)
    _queue: dict[str, _Waiting] = field(default_factory=dict)
    _pending: dict[str, asyncio.Future[ModelResponse]] = field(default_factory=dict)  # old batches' requests
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _driver: asyncio.Task[None] | None = None
    _collectors: list[asyncio.Task[None]] = field(default_factory=list)
    _state: dict[str, Any] = field(default_factory=dict)
    _budget: float | None = None  # max_cost_usd, less what earlier runs of this folder spent
    _price: Callable[[Usage], float | None] | None = None  # an answer's full price
    _spent: float = 0.0  # what this run's batch answers cost (half price)
    _answered: int = 0
    _stopped: str | None = None  # why no round goes any more

    # --- the run's side -------------------------------------------------------------------------

    def start(self) -> None:
        """Collect the batches a killed run left uncollected; start the round driver."""
        self._state = load_state(self.run_dir)
        self.batched |= {i for b in self._state["batches"] for i in b.get("responses", [])}
        loop = asyncio.get_running_loop()
        for batch in self._state["batches"]:
            if batch.get("collected"):
                continue
            for cid in batch["requests"]:
                self._pending[cid] = loop.create_future()
            self._collectors.append(asyncio.create_task(self._collect_old(batch)))
        self._driver = asyncio.create_task(self._drive())

    def limit(self, max_cost_usd: float, spent_before: float, price: Callable[[Usage], float | None]) -> None:
        """The run's budget (module docstring); ``spent_before``: what the folder's records spent."""
        self._budget, self._price = max_cost_usd - spent_before, price

    def stop(self) -> None:
        for task in [self._driver, *self._collectors]:
            if task is not None and not task.done():
                task.cancel()

    @contextlib.contextmanager
    def lane(self) -> Iterator[None]:
        """The scope of one episode: a round waits for every open lane to be waiting on it."""
        lane = _Lane()
        self._open[id(lane)] = lane
        token = _LANE.set(lane)
        try:
            yield
        finally:
            _LANE.reset(token)
            del self._open[id(lane)]
            self._wake.set()

    # --- the model layer ------------------------------------------------------------------------

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        lane = _LANE.get()
        if lane is None:  # outside an episode (a probe): live
            async for item in stream_response(self.inner, request):
                yield item
            return
        if self._stopped is not None:
            raise OverBudget(self._stopped)
        cid = self.cache.path(request).stem
        lane.waiting += 1
        try:
            response = None
            old = self._pending.get(cid)
            if old is not None:  # in a batch a killed run submitted: its answer, once collected
                with contextlib.suppress(_Retry):
                    response = await asyncio.shield(old)
            if response is None:
                future: asyncio.Future[ModelResponse] = asyncio.get_running_loop().create_future()
                self._queue.setdefault(cid, _Waiting(request)).futures.append(future)
                self._wake.set()
                response = await future
        finally:
            lane.waiting -= 1
        for event in response_to_events(response):
            yield event
        yield response

    # --- rounds ---------------------------------------------------------------------------------

    def _ready(self) -> bool:
        """Every open lane waits on the model, and something is queued for the round."""
        return bool(self._queue) and all(lane.waiting > 0 for lane in self._open.values())

    async def _drive(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._ready():
                continue
            size = len(self._queue)
            await asyncio.sleep(SETTLE_S)  # samples asked at once are still arriving
            if not self._ready() or len(self._queue) != size:
                self._wake.set()
                continue
            queue, self._queue = self._queue, {}
            try:
                await self._round(queue)
            except BatchRefused:
                return  # every episode waiting was told; the run ends

    async def _round(self, queue: dict[str, _Waiting]) -> None:
        if self._over_budget(len(queue)):
            for waiting in queue.values():
                for future in waiting.futures:
                    if not future.done():
                        future.set_exception(OverBudget(self._stopped or ""))
            return
        live = {cid: w for cid, w in queue.items() if w.tries >= MAX_BATCH_TRIES}
        batched = {cid: w for cid, w in queue.items() if cid not in live}
        for cid, waiting in live.items():
            asyncio.create_task(self._live(cid, waiting))
        if not batched:
            return
        self.rounds += 1
        started = time.monotonic()
        ids: list[dict[str, Any]] = []
        for chunk in _chunks(list(batched.items()), self.client):
            batch_id = await self._create(chunk, queue)
            entry: dict[str, Any] = {
                "id": batch_id,
                "round": self.rounds,
                "requests": {cid: list(self.client.batch_stops(w.request)) for cid, w in chunk},
            }
            self._state["batches"].append(entry)
            rundir.write_json(self.run_dir / BATCHES, self._state)  # before anything else: a crash loses no batch
            ids.append(entry)
        self._say(
            f"batch round {self._of()}: {len(batched)} request(s) in {len(ids)} batch(es) "
            f"({', '.join(e['id'] for e in ids)})"
        )
        results = await asyncio.gather(*(self._collect(entry) for entry in ids), return_exceptions=True)
        failed = 0
        for entry, result in zip(ids, results, strict=True):
            if isinstance(result, ModelError) and not result.retryable:  # the API failed the batch itself
                self._refuse(BatchRefused(result, first=self.rounds == 1), batched)
            answers: dict[str, ModelResponse | str] = (
                {cid: f"{type(result).__name__}: {result}" for cid in entry["requests"]}  # unread: asked again
                if isinstance(result, BaseException)
                else result
            )
            for cid, answer in answers.items():
                found = batched.get(cid)
                if found is None:
                    continue
                waiting = found
                if isinstance(answer, ModelResponse):
                    for future in waiting.futures:
                        if not future.done():
                            future.set_result(answer)
                else:  # errored, expired, canceled: the next round (or live, past the limit)
                    failed += 1
                    waiting.tries += 1
                    self._requeue(cid, waiting)
        self._say(
            f"batch round {self._of()}: answered in {time.monotonic() - started:.1f} s"
            + (f"; {failed} failed, asked again" if failed else "")
        )

    def _of(self) -> str:
        return f"{self.rounds}/{max(self.most, self.rounds)}" if self.most else str(self.rounds)

    def _say(self, line: str) -> None:
        if self.say is not None:
            self.say(line)
        else:
            print(line, file=self.out, flush=True)

    async def _create(self, chunk: list[tuple[str, _Waiting]], queue: dict[str, _Waiting]) -> str:
        """Submit one batch; a refusal ends the run (``BatchRefused`` to every episode waiting)."""
        for attempt in range(CREATE_TRIES):
            try:
                return await self.client.batch_create([(cid, w.request) for cid, w in chunk])
            except ModelError as exc:
                if not exc.retryable or attempt == CREATE_TRIES - 1:
                    self._refuse(
                        BatchRefused(exc, first=not any(b.get("collected") for b in self._state["batches"])), queue
                    )
                await asyncio.sleep(min(2.0**attempt, 30.0))
        raise AssertionError("unreachable")

    @staticmethod
    def _refuse(refused: BatchRefused, queue: dict[str, _Waiting]) -> NoReturn:
        """The run ends: every episode waiting is told (its task raises; the run says it in one line)."""
        for waiting in queue.values():
            for future in waiting.futures:
                if not future.done():
                    future.set_exception(refused)
        raise refused

    def _over_budget(self, requests: int) -> bool:
        if self._budget is None or self._stopped is not None:
            return self._stopped is not None
        mean = self._spent / self._answered if self._answered else 0.0
        if self._spent + requests * mean > self._budget:
            self._stopped = (
                f"max_cost_usd: {self._spent:.4f} USD spent in {self.rounds} rounds; the next round of {requests} "
                f"requests (about {requests * mean:.4f} USD) would pass the budget"
            )
            self._say(f"batch: {self._stopped}; no more rounds")
        return self._stopped is not None

    def _requeue(self, cid: str, waiting: _Waiting) -> None:
        queued = self._queue.setdefault(cid, _Waiting(waiting.request, tries=waiting.tries))
        queued.futures += waiting.futures
        queued.tries = max(queued.tries, waiting.tries)
        self._wake.set()

    async def _live(self, cid: str, waiting: _Waiting) -> None:
        try:
            items = [item async for item in stream_response(self.inner, waiting.request)]
        except Exception as exc:  # noqa: BLE001 - handed to the episode, as a live call's failure is
            for future in waiting.futures:
                if not future.done():
                    future.set_exception(exc)
            return
        response = items[-1]
        assert isinstance(response, ModelResponse)
        for future in waiting.futures:
            if not future.done():
                future.set_result(response)

    async def _collect(self, entry: dict[str, Any]) -> dict[str, ModelResponse | str]:
        """Wait for a batch to end, then take its results: each answer into the request cache and
        into ``batches.json``'s ``responses`` (priced at half), the entry marked collected."""
        await self._wait(entry)
        stops = {cid: tuple(s) for cid, s in entry["requests"].items()}
        results = await self.client.batch_results(entry["id"], stops)
        kept: dict[str, ModelResponse | str] = {}
        entry["responses"] = []
        for cid, result in results.items():
            if cid not in stops or not _CACHE_KEY.fullmatch(cid):
                continue  # an id this run did not send (a server's, or a received batches.json's): never a path
            kept[cid] = result
            if isinstance(result, ModelResponse):
                write_entry(self.cache.directory / cid[:2] / f"{cid}.json", response_to_dict(result))
                entry["responses"].append(result.id)
                self.batched.add(result.id)
                price = self._price(result.usage) if self._price is not None else None
                self._spent += 0.5 * (price or 0.0)
                self._answered += 1
        for cid in stops:  # asked for and not in the results: the API lost it; asked again
            kept.setdefault(cid, "batch result missing")
        entry["collected"] = True
        rundir.write_json(self.run_dir / BATCHES, self._state)
        return kept

    async def _collect_old(self, entry: dict[str, Any]) -> None:
        """A batch a killed run submitted: collected by its id; its requests are answered when
        the resumed episodes ask them again, a failed one goes into a round like any other."""
        try:
            results = await self._collect(entry)
        except ModelError as exc:
            results = {cid: f"{type(exc).__name__}: {exc}" for cid in entry["requests"]}
        for cid, result in results.items():
            future = self._pending.pop(cid, None)
            if future is None or future.done():
                continue
            if isinstance(result, ModelResponse):
                future.set_result(result)
            else:
                future.set_exception(_Retry(cid))

    async def _wait(self, entry: dict[str, Any]) -> None:
        started = time.monotonic()
        while True:
            ended, counts = await self.client.batch_status(entry["id"])
            if ended:
                return
            if self.poll_s >= 10:  # a line a poll where polls are minutes apart (tests poll in ms)
                minutes = (time.monotonic() - started) / 60
                self._say(
                    f"batch round {self._of()}: {counts.get('processing', 0)} waiting, "
                    f"batch in progress {minutes:.0f} min"
                )
            await asyncio.sleep(self.poll_s)


class BatchRefused(ConfigError):
    """The Batches API would not take a batch: the run ends in one line (not an episode's model
    failure, which a ``ModelError`` would be: no example is scored on it)."""

    def __init__(self, exc: ModelError, first: bool) -> None:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        kept = "no example was run" if first else "the examples finished so far are kept"
        super().__init__(
            f"batch=true: the Message Batches API failed ({reason}); {kept}. Resume to try the batches again, "
            "or run without batch=true for live calls"
        )


class OverBudget(Exception):  # noqa: N818 - what it says, as the run reports it
    """``max_cost_usd``: the rounds stopped before this request; its example is not recorded."""


class _Retry(Exception):
    """An old batch's request that failed: asked again in a round."""

    def __init__(self, cid: str) -> None:
        super().__init__(cid)
        self.cid = cid


def _copy(done: asyncio.Future[ModelResponse], future: asyncio.Future[ModelResponse]) -> None:
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif done.exception() is not None:
        future.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        future.set_result(done.result())


def _chunks(items: list[tuple[str, _Waiting]], client: BatchClient) -> Iterator[list[tuple[str, _Waiting]]]:
    """The round's requests in batches within the API's limits on count and bytes, one endpoint
    a batch where the API asks that (``batch_group``: OpenAI's chat and completions)."""
    most, most_bytes = client.batch_limits
    groups: dict[str, list[tuple[str, _Waiting]]] = {}
    for cid, waiting in items:
        groups.setdefault(client.batch_group(waiting.request), []).append((cid, waiting))
    for group in groups.values():
        chunk: list[tuple[str, _Waiting]] = []
        size = 0
        for cid, waiting in group:
            body = len(json.dumps({"custom_id": cid, "params": client.batch_params(waiting.request)}, default=str)) + 2
            if chunk and (len(chunk) >= most or size + body > most_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append((cid, waiting))
            size += body
        if chunk:
            yield chunk
