"""A study's runs in shared batch rounds: ``batch=true`` over several runs at once.

``experiment=paper batch=true`` (``paper.run_all``) and any sweep under ``batch=true``
(``experiment=paper_table1``, ``-m``: Hydra's launcher ``rounds``, ``hydra_plugins/react_bench_rounds``)
run every run of the study at once in one process, each with a ``Ticket`` to one ``rounds.Rounds``:
a round holds the waiting requests of every run, split only at the API's limits, so the study takes
the rounds of its longest episode, not the sum of its runs' (the paper batched: 506 hours one run
after another). Nothing else is shared: each run keeps its own folder, records, cassette,
batches.json (its own requests of each batch), request cache entries, budget line, resume and
metrics, exactly as when run alone; a request two runs ask at once (CoT-SC's samples in cot_sc
and react_cot_sc) goes once, paid by the run that asked first and served to the other as the
request cache would have served it.

Decisions:
- ``max_cost_usd`` under a study is the whole study's: no round is submitted once what the study
  spent (earlier sessions included) and the round at the mean half price of its answers so far
  would pass it (each run's own budget still applies; the study's is the stricter).
- Progress: the rounds' lines are the study's (``batch round 3/52: 412 request(s) from 14 run(s)``,
  then the runs done and open); one line per run as it ends. A run's own bar is off: 14 bars do not
  share one terminal.
- A run folder that exists is resumed (a study killed at any point and started again: each run
  collects its uncollected batches by their ids; nothing is sent twice).
- Episodes never start early: a run's next episode starts when a lane frees, as alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, TextIO

from react_bench.executors.rounds import Rounds
from react_bench.runconfig import RunConfig

_COLLECTING: list[list[RunConfig]] = []  # the launcher's first pass: the jobs' settings, not their runs


@contextlib.contextmanager
def collecting() -> Iterator[list[RunConfig]]:
    """While open, ``scripts/eval.py`` hands each job's resolved settings here (``collect``)
    instead of running it: Hydra's launcher ``rounds`` then runs them all together."""
    jobs: list[RunConfig] = []
    _COLLECTING.append(jobs)
    try:
        yield jobs
    finally:
        _COLLECTING.remove(jobs)


def collect(cfg: RunConfig) -> bool:
    """Take a job's settings if a study is collecting them (then the job does not run itself)."""
    if not _COLLECTING:
        return False
    _COLLECTING[-1].append(cfg)
    return True


def resumable(cfg: RunConfig) -> RunConfig:
    """The run as the study starts it: its folder resumed where it exists, its own bar off."""
    from react_bench.evaluate import run_dir_for

    cfg = replace(cfg, progress=False)
    if cfg.run_id and (run_dir_for(cfg, cfg.run_id) / "run.json").exists():
        cfg = replace(cfg, resume=True)
    return cfg


async def run_together(
    cfgs: Sequence[RunConfig], out: TextIO = sys.stdout, max_cost_usd: float | None = None
) -> list[Any]:
    """Every run of ``cfgs`` at once, their batch requests in shared rounds; each run's
    ``RunResult``, or the exception that ended it (the others go on)."""
    from react_bench.evaluate import evaluate

    rounds = Rounds(out=out, say=lambda line: print(line, file=out, flush=True), max_cost_usd=max_cost_usd)
    tickets = [rounds.ticket() for _ in cfgs]
    print(f"study: {len(cfgs)} run(s) at once, their requests in shared batch rounds", file=out, flush=True)

    async def one(cfg: RunConfig, ticket: Any) -> Any:
        try:
            result = await evaluate(cfg, out=out, ticket=ticket)
        except Exception as exc:  # noqa: BLE001 - said, and the study goes on
            ticket.close()
            print(f"  {label(cfg)}: not run: {type(exc).__name__}: {first_line(exc)}", file=out, flush=True)
            return exc
        print(f"  {label(cfg)}: {result.n_new} new example(s): {result.run_dir}", file=out, flush=True)
        return result

    return await asyncio.gather(*(one(c, t) for c, t in zip(cfgs, tickets, strict=True)))


def label(cfg: RunConfig) -> str:
    return f"{cfg.task.name} {cfg.solve.mode}/{cfg.solve.runner}" + (
        f" pair {list(cfg.prompt_pair)}" if cfg.prompt_pair is not None else ""
    )


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else ""
