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
import functools
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
from react_bench.models.base import (
    BatchClient,
    ModelClient,
    ModelError,
    ModelLayer,
    ModelRequest,
    endpoint_of,
    stream_response,
)
from react_bench.models.cache import CachedModel, read_entry, write_entry
from react_bench.models.collector import response_to_events
from react_bench.models.counting import count, served_from_cache
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
    """One episode of a run (an example's attempt); ``waiting``: its requests in a round."""

    waiting: int = 0


_LANE: contextvars.ContextVar[_Lane | None] = contextvars.ContextVar("react_bench_batch_lane", default=None)


@dataclass
class _Asker:
    """One episode's wait for an answer: its run, and whether another run asked it first (then it
    is that run's answer, served to this one as the request cache would serve it: not paid again)."""

    member: RoundBatcher
    future: asyncio.Future[ModelResponse]
    second: bool = False


@dataclass
class _Waiting:
    request: ModelRequest
    askers: list[_Asker] = field(default_factory=list)
    tries: int = 0

    @property
    def owner(self) -> RoundBatcher:
        """The run that asked first: its batch carries the request, its record pays for it."""
        return self.askers[0].member


def client_group(client: BatchClient) -> str:
    """Which runs' requests may share a batch: one provider client, endpoint, model and settings
    (the variable that holds the key included; its value never)."""
    import dataclasses

    config = getattr(client, "config", None)
    settings = dataclasses.asdict(config) if dataclasses.is_dataclass(config) and not isinstance(config, type) else {}
    endpoint = endpoint_of(client) if isinstance(client, ModelClient) else None
    data = [type(client).__name__, endpoint, getattr(client, "name", None), settings]
    return json.dumps(data, sort_keys=True, default=str)


@dataclass
class Ticket:
    """A run's place in shared rounds, given before it starts: a round waits until every run of the
    study has either joined (its episodes are open) or ended, so the first round holds them all."""

    rounds: Rounds
    member: RoundBatcher | None = None
    closed: bool = False

    def join(self, member: RoundBatcher) -> None:
        self.member = member
        self.rounds.join(member)

    def close(self) -> None:
        """The run is over (or never started): the rounds no longer wait for it."""
        if not self.closed:
            self.closed = True
            if self.member is not None:
                self.rounds.leave(self.member)
            self.rounds.wake()


@dataclass
class Rounds:
    """The round loop: one for a run alone, or one shared by the runs of a study
    (``react_bench.shared_rounds``), whose waiting requests go in the same batches. A round goes
    when every open episode of every run waits on the model (and every run expected has joined or
    ended); its requests are grouped by
    client (``client_group``), split at the API's limits, submitted once, and each answer handed to
    the episodes that asked it. Each run keeps its own batches.json (its own requests of each
    batch), request cache, budget and price."""

    out: TextIO | None = None
    say: Callable[[str], None] | None = None  # the study's lines (None: the first run's)
    max_cost_usd: float | None = None  # the whole study's budget (runs alone: their own)
    rounds: int = 0
    members: list[RoundBatcher] = field(default_factory=list)
    tickets: list[Ticket] = field(default_factory=list)
    _open: dict[int, _Lane] = field(default_factory=dict)
    _queue: dict[str, _Waiting] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _driver: asyncio.Task[None] | None = None
    _stopped: str | None = None  # the study's budget: why no round goes any more
    _left: list[RoundBatcher] = field(default_factory=list)  # runs that ended: their spending still counts

    def ticket(self) -> Ticket:
        ticket = Ticket(self)
        self.tickets.append(ticket)
        return ticket

    def join(self, member: RoundBatcher) -> None:
        self.members.append(member)
        if self._driver is None or self._driver.done():
            self._driver = asyncio.create_task(self._drive())
        self._wake.set()

    def leave(self, member: RoundBatcher) -> None:
        if member in self.members:
            self.members.remove(member)
            self._left.append(member)
        if not self.members and not [t for t in self.tickets if not t.closed] and self._driver is not None:
            self._driver.cancel()

    def wake(self) -> None:
        self._wake.set()

    @property
    def shared(self) -> bool:
        return len(self.tickets) > 1

    def open_lane(self, lane: _Lane) -> None:
        self._open[id(lane)] = lane

    def close_lane(self, lane: _Lane) -> None:
        del self._open[id(lane)]
        self._wake.set()

    def ask(self, member: RoundBatcher, cid: str, request: ModelRequest) -> _Asker:
        """Queue ``member``'s request for the next round (an episode's wait for its answer)."""
        future: asyncio.Future[ModelResponse] = asyncio.get_running_loop().create_future()
        waiting = self._queue.setdefault(cid, _Waiting(request))
        asker = _Asker(member, future, second=bool(waiting.askers) and waiting.owner is not member)
        waiting.askers.append(asker)
        self._wake.set()
        return asker

    def _ready(self) -> bool:
        """Every run expected has joined or ended, every open lane waits, something is queued."""
        return (
            bool(self._queue)
            and all(t.member is not None or t.closed for t in self.tickets)
            and all(lane.waiting > 0 for lane in self._open.values())
        )

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
                if not self.shared:
                    return  # every episode waiting was told; the run ends

    def _say(self, line: str) -> None:
        say = self.say or next((m.say for m in self.members if m.say is not None), None)
        if say is not None:
            say(line)
        else:
            print(line, file=self.out or (self.members[0].out if self.members else None), flush=True)

    def _of(self) -> str:
        most = max((m.most for m in self.members), default=0)
        return f"{self.rounds}/{max(most, self.rounds)}" if most else str(self.rounds)

    async def _round(self, queue: dict[str, _Waiting]) -> None:
        if any(m.resumed for m in [*self.members, *self._left]):  # a killed session left batches: not sent again
            for cid in [c for c, w in queue.items() if self._cached(c, w)]:  # collected since it was asked
                queue.pop(cid)
            for cid in [c for c in queue if self._old(c) is not None]:  # in a batch not collected yet
                owner, future = self._old(cid)  # type: ignore[misc]
                asyncio.create_task(self._answer_from(owner, future, cid, queue.pop(cid)))
        for cid in [c for c, w in queue.items() if self._over_budget(w, queue)]:
            waiting = queue.pop(cid)
            for asker in waiting.askers:
                if not asker.future.done():
                    asker.future.set_exception(OverBudget(asker.member.stopped or self._stopped or ""))
        live = {cid: w for cid, w in queue.items() if w.tries >= MAX_BATCH_TRIES}
        batched = {cid: w for cid, w in queue.items() if cid not in live}
        for waiting in live.values():
            asyncio.create_task(self._live(waiting))
        if not batched:
            return
        self.rounds += 1
        started = time.monotonic()
        groups: dict[str, list[tuple[str, _Waiting]]] = {}
        for cid, waiting in batched.items():
            groups.setdefault(waiting.owner.group, []).append((cid, waiting))
        made: list[tuple[str, BatchClient, list[tuple[str, _Waiting]]]] = []
        for items in groups.values():
            client = items[0][1].owner.client
            for chunk in _chunks(items, client):
                batch_id = await self._create(client, chunk, queue)
                for member in {w.owner for _, w in chunk}:  # each run's own requests of the batch, first
                    member.record_batch(batch_id, self.rounds, [(c, w) for c, w in chunk if w.owner is member])
                made.append((batch_id, client, chunk))
        runs = len({w.owner.run_dir for w in batched.values()})
        self._say(
            f"batch round {self._of()}: {len(batched)} request(s)"
            + (f" from {runs} run(s)" if self.shared else "")
            + f" in {len(made)} batch(es) ({', '.join(b for b, _, _ in made)})"
        )
        results = await asyncio.gather(
            *(self._collect(b, client, chunk) for b, client, chunk in made), return_exceptions=True
        )
        failed = 0
        for (_, _, chunk), result in zip(made, results, strict=True):
            if isinstance(result, ModelError) and not result.retryable:  # the API failed the batch itself
                self._refuse(BatchRefused(result, first=self.rounds == 1), batched)
            answers: dict[str, ModelResponse | str] = (
                {cid: f"{type(result).__name__}: {result}" for cid, _ in chunk}  # unread: asked again
                if isinstance(result, BaseException)
                else result
            )
            for cid, answer in answers.items():
                found = batched.get(cid)
                if found is None:
                    continue
                waiting = found
                if isinstance(answer, ModelResponse):
                    for asker in waiting.askers:
                        if not asker.future.done():
                            asker.future.set_result(answer)
                else:  # errored, expired, canceled: the next round (or live, past the limit)
                    failed += 1
                    waiting.tries += 1
                    self._requeue(cid, waiting)
        if self.shared:
            open_runs = len({m.run_dir for m in self.members})
            done = sum(1 for t in self.tickets if t.closed)
            tail = f"; runs done {done}/{len(self.tickets)}, {open_runs} open, {len(self._open)} episode(s) open"
        else:
            tail = ""
        self._say(
            f"batch round {self._of()}: answered in {time.monotonic() - started:.1f} s"
            + (f"; {failed} failed, asked again" if failed else "")
            + tail
        )

    def _over_budget(self, waiting: _Waiting, queue: dict[str, _Waiting]) -> bool:
        """The study's budget stops every round, or the request's run has stopped for its own. The
        study's is asked first: it is the stricter, and which run asked a shared request first (and
        so whose own budget it meets) is an accident of timing that must not decide the line said."""
        member = waiting.owner
        if self._study_over_budget(queue):
            return True
        return member.over_budget(sum(1 for w in queue.values() if w.owner is member), self.rounds)

    def _study_over_budget(self, queue: dict[str, _Waiting]) -> bool:
        if self.max_cost_usd is None or self._stopped is not None:
            return self._stopped is not None
        every = [*self.members, *self._left]  # a run that has ended spent too
        spent = sum(m.spent_before + m.spent for m in every)
        answered = sum(m.answered for m in every)
        mean = sum(m.spent for m in every) / answered if answered else 0.0
        if spent + len(queue) * mean > self.max_cost_usd:
            self._stopped = (
                f"max_cost_usd: {spent:.4f} USD spent by the study in {self.rounds} rounds; the next round of "
                f"{len(queue)} requests (about {len(queue) * mean:.4f} USD) would pass the study's budget"
            )
            self._say(f"batch: {self._stopped}; no more rounds")
        return self._stopped is not None

    async def _create(self, client: BatchClient, chunk: list[tuple[str, _Waiting]], queue: dict[str, _Waiting]) -> str:
        """Submit one batch; a refusal ends the run (``BatchRefused`` to every episode waiting)."""
        for attempt in range(CREATE_TRIES):
            try:
                return await client.batch_create([(cid, w.request) for cid, w in chunk])
            except ModelError as exc:
                if not exc.retryable or attempt == CREATE_TRIES - 1:
                    first = not any(b.get("collected") for m in self.members for b in m.state["batches"])
                    self._refuse(BatchRefused(exc, first=first), queue)
                await asyncio.sleep(min(2.0**attempt, 30.0))
        raise AssertionError("unreachable")

    @staticmethod
    def _refuse(refused: BatchRefused, queue: dict[str, _Waiting]) -> NoReturn:
        """The runs end: every episode waiting is told (its task raises; the run says it in one line)."""
        for waiting in queue.values():
            for asker in waiting.askers:
                if not asker.future.done():
                    asker.future.set_exception(refused)
        raise refused

    def _cached(self, cid: str, waiting: _Waiting) -> bool:
        """Whether another run's batch of a killed session, collected after this request was asked,
        put its answer in the request cache: then it is served from there (that run paid), not sent."""
        cache = waiting.owner.cache
        if cache.mode != "on":
            return False
        stored = read_entry(cache.directory / cid[:2] / f"{cid}.json")
        if stored is None:
            return False
        for asker in waiting.askers:
            asker.second = True
            if not asker.future.done():
                asker.future.set_result(stored)
        return True

    def _old(self, cid: str) -> tuple[RoundBatcher, asyncio.Future[ModelResponse]] | None:
        """The run whose killed session put ``cid`` in a batch not yet collected, and its answer to come."""
        for member in self.members:
            future = member.pending(cid)
            if future is not None:
                return member, future
        return None

    async def _answer_from(
        self, owner: RoundBatcher, old: asyncio.Future[ModelResponse], cid: str, waiting: _Waiting
    ) -> None:
        """Another run of the study asks what ``owner``'s old batch holds: it waits for that batch,
        and is served as the request cache serves (``owner`` paid); a failed one goes into a round."""
        try:
            response = await asyncio.shield(old)
        except _Retry:
            self._requeue(cid, waiting)
            return
        for asker in waiting.askers:
            asker.second = asker.second or asker.member is not owner
            if not asker.future.done():
                asker.future.set_result(response)

    def _requeue(self, cid: str, waiting: _Waiting) -> None:
        queued = self._queue.setdefault(cid, _Waiting(waiting.request, tries=waiting.tries))
        queued.askers += waiting.askers
        queued.tries = max(queued.tries, waiting.tries)
        self._wake.set()

    async def _live(self, waiting: _Waiting) -> None:
        try:
            items = [item async for item in stream_response(waiting.owner.inner, waiting.request)]
        except Exception as exc:  # noqa: BLE001 - handed to the episode, as a live call's failure is
            for asker in waiting.askers:
                if not asker.future.done():
                    asker.future.set_exception(exc)
            return
        response = items[-1]
        assert isinstance(response, ModelResponse)
        for asker in waiting.askers:
            if not asker.future.done():
                asker.future.set_result(response)

    async def _collect(
        self, batch_id: str, client: BatchClient, chunk: list[tuple[str, _Waiting]]
    ) -> dict[str, ModelResponse | str]:
        """Wait for a batch to end, then hand each run its own results (``RoundBatcher.take``)."""
        await _wait(client, batch_id, self.poll_s, self._say, self._of)
        stops = {cid: tuple(client.batch_stops(w.request)) for cid, w in chunk}
        results = await client.batch_results(batch_id, stops)
        kept: dict[str, ModelResponse | str] = {}
        for member in {w.owner for _, w in chunk}:
            kept |= member.take(batch_id, results)
        for cid in stops:  # asked for and not in the results: the API lost it; asked again
            kept.setdefault(cid, "batch result missing")
        return kept

    @property
    def poll_s(self) -> float:
        return min((m.poll_s for m in self.members), default=30.0)


async def _wait(
    client: BatchClient, batch_id: str, poll_s: float, say: Callable[[str], None], of: Callable[[], str]
) -> None:
    started = time.monotonic()
    while True:
        ended, counts = await client.batch_status(batch_id)
        if ended:
            return
        if poll_s >= 10:  # a line a poll where polls are minutes apart (tests poll in ms)
            minutes = (time.monotonic() - started) / 60
            say(f"batch round {of()}: {counts.get('processing', 0)} waiting, batch in progress {minutes:.0f} min")
        await asyncio.sleep(poll_s)


@dataclass(eq=False)
class RoundBatcher(ModelLayer):
    """One run's layer (module docstring) in a round loop (``Rounds``: its own, or a study's); a
    request's ``custom_id`` is its key in ``cache``."""

    inner: ModelClient  # live calls (a request that failed in MAX_BATCH_TRIES rounds)
    client: BatchClient
    cache: CachedModel
    run_dir: Path
    out: TextIO
    poll_s: float = 30.0
    loop: Rounds | None = None  # the study's rounds (None: a loop of its own)
    batched: set[str] = field(default_factory=set)  # ids of the responses the batches gave
    most: int = 0  # the most rounds the run can take (estimate.rounds), for "round 4/8"
    say: Callable[[str], None] | None = None  # the progress bar's line writer, once there is one
    state: dict[str, Any] = field(default_factory=dict)
    spent: float = 0.0  # what this run's batch answers cost (half price)
    answered: int = 0
    spent_before: float = 0.0  # what earlier sessions of the run spent (the study's budget adds it)
    stopped: str | None = None  # why this run sends no more rounds (its budget)
    resumed: bool = False  # it started with batches a killed session left uncollected
    _pending: dict[str, asyncio.Future[ModelResponse]] = field(default_factory=dict)  # old batches' requests
    _collectors: list[asyncio.Task[None]] = field(default_factory=list)
    _budget: float | None = None  # max_cost_usd, less what earlier runs of this folder spent
    _price: Callable[[Usage], float | None] | None = None  # an answer's full price
    _ticket: Ticket | None = None

    @property
    def rounds(self) -> int:
        return self.loop.rounds if self.loop is not None else 0

    @functools.cached_property
    def group(self) -> str:
        """Which batches this run's requests may share (``client_group``), worked out once."""
        return client_group(self.client)

    # --- the run's side -------------------------------------------------------------------------

    def start(self, ticket: Ticket | None = None) -> None:
        """Collect the batches a killed run left uncollected; join the round loop (``ticket``: a
        study's place; else a loop of its own)."""
        self.state = load_state(self.run_dir)
        self.resumed = any(not b.get("collected") for b in self.state["batches"])
        self.batched |= {i for b in self.state["batches"] for i in b.get("responses", [])}
        loop = asyncio.get_running_loop()
        for batch in self.state["batches"]:
            if batch.get("collected"):
                continue
            for cid in batch["requests"]:
                self._pending[cid] = loop.create_future()
            self._collectors.append(asyncio.create_task(self._collect_old(batch)))
        if ticket is None:
            self.loop = Rounds(out=self.out)
            ticket = self.loop.ticket()
        self.loop, self._ticket = ticket.rounds, ticket
        ticket.join(self)

    def limit(self, max_cost_usd: float, spent_before: float, price: Callable[[Usage], float | None]) -> None:
        """The run's budget (module docstring); ``spent_before``: what the folder's records spent."""
        self._budget, self._price, self.spent_before = max_cost_usd - spent_before, price, spent_before

    def pending(self, cid: str) -> asyncio.Future[ModelResponse] | None:
        """The answer to come of ``cid`` where a killed session of this run put it in a batch."""
        return self._pending.get(cid)

    def stop(self) -> None:
        for task in self._collectors:
            if not task.done():
                task.cancel()
        if self._ticket is not None:
            self._ticket.close()

    @contextlib.contextmanager
    def lane(self) -> Iterator[None]:
        """The scope of one episode: a round waits for every open lane to be waiting on it."""
        assert self.loop is not None, "start() first"
        lane = _Lane()
        self.loop.open_lane(lane)
        token = _LANE.set(lane)
        try:
            yield
        finally:
            _LANE.reset(token)
            self.loop.close_lane(lane)

    # --- the model layer ------------------------------------------------------------------------

    async def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        lane = _LANE.get()
        if lane is None or self.loop is None:  # outside an episode (a probe): live
            async for item in stream_response(self.inner, request):
                yield item
            return
        if self.stopped is not None:
            raise OverBudget(self.stopped)
        cid = self.cache.path(request).stem
        lane.waiting += 1
        try:
            response = None
            old = self._pending.get(cid)
            if old is not None:  # in a batch a killed run submitted: its answer, once collected
                with contextlib.suppress(_Retry):
                    response = await asyncio.shield(old)
            if response is None:
                asker = self.loop.ask(self, cid, request)
                response = await asker.future
                if asker.second:
                    count("cache_hits")  # another run of the study paid for it: served as the cache would
                    served_from_cache(response.id)
        finally:
            lane.waiting -= 1
        for event in response_to_events(response):
            yield event
        yield response

    # --- what the rounds hand the run -----------------------------------------------------------

    def record_batch(self, batch_id: str, round_no: int, chunk: list[tuple[str, _Waiting]]) -> None:
        """This run's requests of a batch just made, in batches.json before anything else: a crash
        loses no batch (a batch the study shares is listed in each run's file with its own requests).
        The one window: a kill after the API made the batch and before every run's file lists it (a few
        small file writes) leaves those requests unlisted, and the next session sends them again."""
        entry: dict[str, Any] = {
            "id": batch_id,
            "round": round_no,
            "requests": {cid: list(self.client.batch_stops(w.request)) for cid, w in chunk},
        }
        self.state["batches"].append(entry)
        rundir.write_json(self.run_dir / BATCHES, self.state)

    def take(self, batch_id: str, results: dict[str, Any]) -> dict[str, ModelResponse | str]:
        """This run's results of a batch that ended: each answer into the request cache and into
        ``batches.json``'s ``responses`` (priced at half), the run's entry marked collected."""
        kept: dict[str, ModelResponse | str] = {}
        for entry in self.state["batches"]:
            if entry["id"] != batch_id or entry.get("collected"):
                continue
            entry["responses"] = []
            for cid in entry["requests"]:
                result = results.get(cid)
                if result is None or not _CACHE_KEY.fullmatch(cid):
                    continue  # not answered (asked again), or not a key this run could have sent: never a path
                kept[cid] = result
                if isinstance(result, ModelResponse):
                    write_entry(self.cache.directory / cid[:2] / f"{cid}.json", response_to_dict(result))
                    entry["responses"].append(result.id)
                    self.batched.add(result.id)
                    price = self._price(result.usage) if self._price is not None else None
                    self.spent += 0.5 * (price or 0.0)
                    self.answered += 1
            entry["collected"] = True
        rundir.write_json(self.run_dir / BATCHES, self.state)
        return kept

    def over_budget(self, requests: int, rounds: int) -> bool:
        """Whether this run's budget stops its next round of ``requests`` (said once)."""
        if self._budget is None or self.stopped is not None:
            return self.stopped is not None
        mean = self.spent / self.answered if self.answered else 0.0
        if self.spent + requests * mean > self._budget:
            self.stopped = (
                f"max_cost_usd: {self.spent:.4f} USD spent in {rounds} rounds; the next round of {requests} "
                f"requests (about {requests * mean:.4f} USD) would pass the budget"
            )
            line = f"batch: {self.stopped}; no more rounds"
            if self.say is not None:
                self.say(line)
            else:
                print(line, file=self.out, flush=True)
        return self.stopped is not None

    async def _collect_old(self, entry: dict[str, Any]) -> None:
        """A batch a killed run submitted: collected by its id; its requests are answered when
        the resumed episodes ask them again, a failed one goes into a round like any other."""
        stops = {cid: tuple(s) for cid, s in entry["requests"].items()}
        try:
            await _wait(self.client, entry["id"], self.poll_s, self._say_old, lambda: "of a killed session")
            results = self.take(entry["id"], await self.client.batch_results(entry["id"], stops))
        except ModelError as exc:
            results = {cid: f"{type(exc).__name__}: {exc}" for cid in entry["requests"]}
        for cid in entry["requests"]:
            result = results.get(cid, "batch result missing")
            future = self._pending.pop(cid, None)
            if future is None or future.done():
                continue
            if isinstance(result, ModelResponse):
                future.set_result(result)
            else:
                future.set_exception(_Retry(cid))

    def _say_old(self, line: str) -> None:
        print(line, file=self.out, flush=True)


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
