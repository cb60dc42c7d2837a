"""``batch=true``: every request through the provider's batch API in rounds (``rounds.py``): the
round layer goes beneath the request cache, and the examples all run at once (up to
``BATCH_LANES``), each a lane that a round waits for. Given a study's ``Ticket``
(``react_bench.shared_rounds``), the run's requests go in the rounds the study's runs share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from react_bench.episode import Solved, solve_example
from react_bench.errors import ConfigError
from react_bench.estimate import rounds
from react_bench.events import AgentEvent
from react_bench.executors.base import Price
from react_bench.executors.rounds import BATCH_LANES, RoundBatcher, Ticket, batch_client, batch_response_ids
from react_bench.methods.core import Solver
from react_bench.models import ModelStack
from react_bench.models.base import endpoint_host
from react_bench.tasks import Example


@dataclass
class BatchExecutor:
    solver: Solver
    stack: ModelStack
    run_dir: Path
    out: TextIO
    poll_s: float
    capacity: int = 1
    ticket: Ticket | None = None  # a study's shared rounds (None: the run's own)
    batcher: RoundBatcher | None = None  # once prepared

    def concurrency(self, asked: int) -> int:
        return self.capacity  # every example at once: a round goes when every open episode waits

    async def prepare(self, todo: list[Example]) -> None:
        if not todo:
            if self.ticket is not None:
                self.ticket.close()  # nothing to ask: the study's rounds do not wait for this run
            return
        cache, client = batch_client(self.stack)
        if not await client.batch_supported():  # an OpenAI-compatible server without /v1/batches
            raise ConfigError(
                f"batch=true: the server at {endpoint_host(self.stack.client)} has no Batch API (/v1/batches); "
                "run without batch=true"
            )
        self.batcher = RoundBatcher(
            inner=cache.inner, client=client, cache=cache, run_dir=self.run_dir, out=self.out, poll_s=self.poll_s
        )
        cache.inner = self.batcher
        self.solver.first_sample_alone = False  # CoT-SC's samples: all in one round
        self.batcher.most = rounds(self.solver)
        self.capacity = max(1, min(len(todo), BATCH_LANES))
        self.batcher.start(self.ticket)

    async def solve(self, example: Example, sink: Callable[[AgentEvent], None] | None) -> Solved:
        if self.batcher is None:
            return await solve_example(self.solver, example, sink)
        with self.batcher.lane():
            return await solve_example(self.solver, example, sink)

    def limit_cost(self, max_usd: float, spent: float, price: Price) -> None:
        if self.batcher is not None:
            self.batcher.limit(max_usd, spent, price)

    def say_through(self, write: Callable[[str], None]) -> None:
        if self.batcher is not None:
            self.batcher.say = write  # the rounds' lines above the bar

    def batched_ids(self, run_dir: Path) -> set[str]:
        # the set the rounds add to as responses come (the earlier sessions' read from the folder)
        return self.batcher.batched if self.batcher is not None else batch_response_ids(run_dir)

    def close(self) -> None:
        if self.ticket is not None:
            self.ticket.close()
        if self.batcher is not None:
            self.batcher.stop()
            self.batcher.cache.inner = self.batcher.inner  # the stack as it was (a notebook's next run)
