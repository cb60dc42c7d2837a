"""Episodes on Ray (``executor=ray``): ALFWorld throughput with one and two worker nodes, and the
driver's own cost per episode.

    python bench/bench_ray.py            # measures, writes results/bench/ray.{json,md}
    python bench/bench_ray.py --render   # the page again from the stored JSON

A real local cluster (``react_bench.testing.ray_cluster``: a head with no CPU and one or two
worker nodes of one CPU each, separate ``ray start`` processes), ALFWorld's generated eval
games on the real text engine, the text runner with a scripted model that answers at once
(``look`` every step), so each episode is 50 engine steps and CPU-bound: the model costs
nothing, the engine everything. The driver is this process (``evaluate`` in-process), as
``scripts/eval.py executor=ray`` would be.

- episodes/s: in the steady state, from the k-th episode written to the last (each worker's
  first episode also imports the engine, a fixed cost of the worker, not of an episode);
- the driver's CPU: this process's CPU time over the same span, per episode, all threads. Part of
  it is not the episodes' at all: a connected Ray driver's own threads (gRPC polling, heartbeats)
  burn CPU by the second, idle or not, measured here for 3 s before each run on the same
  connection. The driver's *overhead per episode* is the
  total less that background over the same wall time: sending the example, receiving the outcome
  with its 50 calls and trajectory (about 24 KB), writing its lines. Both are reported; the goal
  is on the overhead (the background does not grow with episodes: more workers spread it thinner);
- repeats: each configuration three times, alternating; the median is reported.

Goals: two worker nodes >= 1.7x one (on this 2-core machine), driver <= 5 ms per episode.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import check, checks_markdown, environment, environment_line, render_stored, wait_for_quiet, write_results

NAME = "ray"
EPISODES = 16
STEPS = 50
REPEATS = 3
GAMES: dict[str, Any] = {"games": 24, "train_games": 18, "seed": 0}  # the alfworld benchmark's generated set
DRIVER_KEYS = ("driver_ms_per_episode", "background_ms_per_episode", "overhead_ms_per_episode")
IDLE_S = 3.0  # the driver connected and idle, before each run: the background rate of Ray's own threads


def _run(address: str, workers: int, work: Path) -> dict[str, float]:
    from react_bench import rundir
    from react_bench.evaluate import evaluate
    from react_bench.executors import ray as cluster
    from react_bench.loop import LoopConfig
    from react_bench.methods.core import SolveSettings
    from react_bench.models import ModelSpec
    from react_bench.runconfig import RaySettings, RunConfig
    from react_bench.tasks import TaskConfig
    from react_bench.tasks.alfworld import AlfworldConfig

    work.mkdir(parents=True)
    script = work / "script.json"
    script.write_text(json.dumps([" look"] * (STEPS * EPISODES)))  # each worker's own copy of the model
    cfg = RunConfig(
        task=TaskConfig(name="alfworld", n=EPISODES),
        model=ModelSpec.from_mapping({"provider": "scripted", "script": str(script)}),
        solve=SolveSettings(mode="act", loop=LoopConfig(max_steps=STEPS)),
        env=AlfworldConfig(**GAMES),
        protocol="custom",
        results_dir=work / "runs",
        progress=False,
        show="none",
        request_cache="off",
        executor="ray",
        ray=RaySettings(address=address),
    )
    marks: list[tuple[float, float]] = []  # (wall, this process's CPU) as each episode is written
    write = rundir.RunWriter.write

    async def timed_write(self: rundir.RunWriter, *lines: bytes) -> None:  # no event sink: the CLI's path
        await write(self, *lines)
        marks.append((time.perf_counter(), time.process_time()))

    rundir.RunWriter.write = timed_write  # type: ignore[method-assign,assignment]
    cluster.connect(address, cluster.worker_env(cfg))  # as evaluate would; connected first, to time it idle
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        time.sleep(IDLE_S)
        idle_ms_per_s = 1000 * (time.process_time() - c0) / (time.perf_counter() - w0)
        result = asyncio.run(evaluate(cfg, out=io.StringIO()))
    finally:
        rundir.RunWriter.write = write  # type: ignore[method-assign]
        import ray

        ray.shutdown()
    assert result.metrics["errors"] == 0 and result.metrics["n"] == EPISODES, result.metrics
    assert result.metrics["mean_steps"] == STEPS
    (w0, c0), (w1, c1) = marks[workers - 1], marks[-1]
    span = EPISODES - workers
    total = 1000 * (c1 - c0) / span
    background = idle_ms_per_s * (w1 - w0) / span  # what the connection alone costs over the same wall time
    return {
        "episodes_per_s": round(span / (w1 - w0), 3),
        "driver_ms_per_episode": round(total, 2),
        "background_ms_per_episode": round(background, 2),
        "overhead_ms_per_episode": round(total - background, 2),
    }


def measure() -> dict[str, Any]:
    from react_bench.tasks import TaskConfig
    from react_bench.tasks.alfworld import AlfworldConfig, AlfworldTask
    from react_bench.testing.ray_cluster import LocalCluster

    AlfworldTask().examples(TaskConfig(name="alfworld"), AlfworldConfig(**GAMES))  # generated once, then cached
    load = wait_for_quiet()
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with LocalCluster(workers=1) as cluster, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(cluster.driver_env)  # this process drives it as its nodes run: the user's ~/.ray unread
        for repeat in range(REPEATS):
            for workers in (1, 2):
                if workers == 2 and len(cluster.nodes) == 2:  # alternate: the second node joins, then leaves
                    cluster.add_worker()
                    cluster.wait_nodes(2)
                if workers == 1 and len(cluster.nodes) == 3:
                    cluster.kill_node(1)
                    cluster.nodes.pop()
                    cluster.wait_nodes(1)
                runs[workers].append(_run(cluster.address, workers, Path(tmp) / f"{workers}-{repeat}"))
                print(f"repeat {repeat + 1}, {workers} worker node(s): {runs[workers][-1]}", flush=True)

    def median(workers: int, key: str) -> float:
        return round(statistics.median(r[key] for r in runs[workers]), 3)

    one, two = median(1, "episodes_per_s"), median(2, "episodes_per_s")
    return {
        "episodes": EPISODES,
        "steps_per_episode": STEPS,
        "repeats": REPEATS,
        "one_node": {"episodes_per_s": one, **{k: median(1, k) for k in DRIVER_KEYS}, "runs": runs[1]},
        "two_nodes": {"episodes_per_s": two, **{k: median(2, k) for k in DRIVER_KEYS}, "runs": runs[2]},
        "speedup": round(two / one, 3),
        "load_at_start": load,
        "environment": environment(),
    }


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    driver = max(result["one_node"]["overhead_ms_per_episode"], result["two_nodes"]["overhead_ms_per_episode"])
    return [
        check("episodes/s, two worker nodes over one", result["speedup"], ">= 1.7x", result["speedup"] >= 1.7),
        check("driver overhead per episode (ms CPU, the larger of the two)", driver, "<= 5 ms", driver <= 5.0),
    ]


def render_page(result: dict[str, Any]) -> str:
    one, two = result["one_node"], result["two_nodes"]
    lines = [
        "# Episodes on Ray (`executor=ray`)",
        "",
        f"ALFWorld generated eval games on the real text engine, {result['steps_per_episode']} steps an episode (the "
        f"text runner, a scripted model answering `look` at once: the engine is the whole cost), "
        f"{result['episodes']} episodes a run, on a real local Ray cluster (a head with no CPU, worker nodes of one "
        f"CPU each, each a `ray start` process). The driver is the benchmark's process. Steady state: from the "
        f"k-th episode written to the last (k workers), medians of {result['repeats']} alternating repeats "
        "(`python bench/bench_ray.py`).",
        "",
        "| worker nodes | episodes/s | driver CPU per episode | of which Ray's background | overhead per episode |",
        "|---|---|---|---|---|",
        *(
            f"| {k} | {r['episodes_per_s']} | {r['driver_ms_per_episode']} ms | {r['background_ms_per_episode']} ms | "
            f"{r['overhead_ms_per_episode']} ms |"
            for k, r in ((1, one), (2, two))
        ),
        "",
        "The background is what a connected Ray driver's own threads spend by the second, idle or not (measured "
        "for 3 s before each run on the same connection, times the run's wall time per episode); the overhead, "
        "the rest, is what each episode costs the driver (sending it, receiving its outcome, writing its lines).",
        "",
        f"Two nodes over one: **{result['speedup']}x**.",
        "",
        *checks_markdown(result["checks"]),
        "",
        environment_line(result["environment"]),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", action="store_true", help="rewrite the page from the stored JSON")
    args = parser.parse_args()
    if args.render:
        return render_stored(NAME, checks_of, render_page)
    result = measure()
    result["checks"] = checks_of(result)
    write_results(NAME, result, render_page(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
