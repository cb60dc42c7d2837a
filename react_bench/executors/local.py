"""The episodes in this process, on its event loop (``concurrency`` at once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from react_bench.episode import Solved, solve_example
from react_bench.events import AgentEvent
from react_bench.executors.base import Plain
from react_bench.methods.core import Solver
from react_bench.tasks import Example


@dataclass
class LocalExecutor(Plain):
    solver: Solver

    def concurrency(self, asked: int) -> int:
        return asked

    async def prepare(self, todo: list[Example]) -> None:
        return None

    async def solve(self, example: Example, sink: Callable[[AgentEvent], None] | None) -> Solved:
        return await solve_example(self.solver, example, sink)

    def close(self) -> None:
        pass
