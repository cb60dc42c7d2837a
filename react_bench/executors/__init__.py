"""Where a run's episodes are solved, one floor below the run (``evaluate``) and above the
agent (``modes``, ``episode``): ``local`` (this process), ``batch`` (this process, every request
in batch rounds: ``rounds``), ``ray`` (Ray workers). ``base.Executor`` is what the run asks of
each; ``start_executor`` picks one from the settings (``executor=``, ``batch=``)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from react_bench.executors.base import Executor
from react_bench.executors.rounds import Ticket
from react_bench.methods.core import Solver
from react_bench.models import ModelStack
from react_bench.runconfig import RunConfig
from react_bench.tasks import Example


async def start_executor(
    cfg: RunConfig,
    solver: Solver,
    stack: ModelStack,
    run_dir: Path,
    run_id: str,
    out: TextIO,
    todo: list[Example],
    *,
    events: bool,
    ticket: Ticket | None = None,
) -> Executor:
    """The run's executor: Ray workers (``executor=ray``; this process stays the writer), batch
    rounds in this process (``batch=true``; ``ticket``: in a study's shared rounds), or this
    process alone."""
    if cfg.executor == "ray" and todo:
        from react_bench.executors.ray import WorkerPool

        return await WorkerPool.start(cfg, run_id, events=events, out=out)
    if cfg.batch:
        from react_bench.executors.batch import BatchExecutor

        return BatchExecutor(solver, stack, run_dir, out, cfg.batch_poll_s, ticket=ticket)
    from react_bench.executors.local import LocalExecutor

    return LocalExecutor(solver)
