"""What every executor offers the run (``evaluate.Run``), and what most leave as it is.

An executor is where a run's episodes are solved: in this process (``local.LocalExecutor``), in
this process with every request sent in Message Batches rounds (``batch.BatchExecutor``), or on
Ray workers (``ray.WorkerPool``). Whichever it is, the run's own process stays its one writer: an
executor returns each example's ``Solved`` and the run writes it. The run asks an executor, never
what kind it is:

- ``concurrency(asked)``: how many examples the run keeps in flight (batch rounds: all of them;
  Ray: at least one per worker);
- ``limit_cost``: the cost budget, where the executor itself must stop sending (batch rounds: a
  round's requests are priced before it goes);
- ``say_through``: where the executor's own lines go (above the progress bar);
- ``batched_ids``: the responses that came at batch price (half), for the example's cost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from react_bench.episode import Solved
from react_bench.events import AgentEvent
from react_bench.tasks import Example
from react_bench.types import Usage

Price = Callable[[Usage], "float | None"]


class Executor(Protocol):
    """Where a run's episodes are solved (module docstring)."""

    def concurrency(self, asked: int) -> int:
        """Examples in flight at once, given the run's ``concurrency`` (already capped)."""

    async def prepare(self, todo: list[Example]) -> None:
        """What runs once before the first episode (batch rounds: the round loop starts)."""

    async def solve(self, example: Example, sink: Callable[[AgentEvent], None] | None) -> Solved: ...

    def limit_cost(self, max_usd: float, spent: float, price: Price) -> None:
        """The run's budget, ``spent`` of it already: where the executor must stop sending."""

    def say_through(self, write: Callable[[str], None]) -> None:
        """Where the executor's own lines go (the progress bar's ``write``)."""

    def batched_ids(self, run_dir: Path) -> set[str]:
        """The ids of the responses that came from batches (priced at half)."""

    def close(self) -> None: ...


class Plain:
    """The defaults of an executor that sends each request as it comes: no budget of its own, no
    lines of its own, and the batch-priced responses those of an earlier ``batch=true`` session
    of the run (a run resumed without it)."""

    def limit_cost(self, max_usd: float, spent: float, price: Price) -> None:
        return None

    def say_through(self, write: Callable[[str], None]) -> None:
        return None

    def batched_ids(self, run_dir: Path) -> set[str]:
        from react_bench.executors.rounds import batch_response_ids

        return batch_response_ids(run_dir)
