"""Benchmark throughput against the ideal: concurrency, model latency and a rate limit.

    python bench/bench_concurrency.py               # writes results/bench/concurrency.{md,json}
    python bench/bench_concurrency.py --examples 50 --levels 1 4   # quicker

The project's Messages API server runs in its own process with a fixed latency (``--latency``,
1 s: every reply waits that long before its first byte) and a requests-per-minute limit
(``--rpm``, enforced as the API documents it: a token bucket holding one second's worth;
an empty bucket answers 429). Runs go through ``evaluate``, the Claude client and the
official SDK, the tool-use runner, mode=react, with walks of 2 calls per example (a search,
then the answer), the client's own limiter set to the same rpm, ``--examples`` examples at
each concurrency level.

Throughput is examples / (last example written - first model call). The ideal, as the issue
states it, is the steady rate min(concurrency / (latency x calls per example), rpm / 60 /
calls per example). A finite run cannot reach a steady rate exactly: at concurrency 64, 200
examples are three full waves and a partial one. So each level is checked against the ideal
for a run of its size, examples / the shortest possible time:
max(ceil(examples / concurrency) x calls x latency, (examples x calls - 1) / (rpm / 60) + latency)
(waves of examples; or requests spaced by the limit, the last one answered a latency later),
and the steady-rate ratio is reported beside it. The limit is checked by the server: no 429
and no 60-second window with more than ``rpm`` requests.

Also reported: the ceiling at 200 ms latency and no limit (``--ceiling-examples`` at
concurrency 64 and 128), where the harness's CPU bounds throughput on this machine.

Goal (issue 16): at least 90% of the ideal at every level; the limit never exceeded.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import (
    check,
    checks_markdown,
    claude_model,
    environment,
    environment_line,
    hotpotqa_split,
    render_stored,
    server_process,
    write_results,
)

from react_bench.console import quiet_console
from react_bench.evaluate import evaluate
from react_bench.events import AgentEvent, RunProgress
from react_bench.methods.core import SolveSettings
from react_bench.models import ModelSpec
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig

CALLS = 2  # a search, then the answer


def run_level(concurrency: int, n: int, latency: float, rpm: float | None, work: Path) -> dict[str, Any]:
    times: dict[str, float] = {}

    def on_event(example_id: str, event: AgentEvent) -> None:
        now = time.monotonic()
        times.setdefault("first", now)
        if isinstance(event, RunProgress):
            times["last"] = now

    with server_process(steps=CALLS, plans=n, latency_s=latency, rpm=rpm) as server:
        model = claude_model(server.base_url, max_retries=8, **({"requests_per_minute": rpm} if rpm else {}))
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n, split=hotpotqa_split(n)),
            model=ModelSpec.from_mapping(model),
            solve=SolveSettings(mode="react", runner="tool_use"),
            results_dir=work / f"c{concurrency}-{latency}",
            concurrency=concurrency,
            progress=False,
            show="none",
            request_cache="off",
        )
        cpu = time.process_time()
        result = asyncio.run(evaluate(cfg, out=io.StringIO(), on_event=on_event))
        cpu = time.process_time() - cpu
    stats = server.stats
    assert stats is not None
    metrics = result.metrics
    assert metrics["n"] == n and metrics["errors"] == 0 and metrics["mean_steps"] == CALLS, metrics
    elapsed = times["last"] - times["first"]
    eps = n / elapsed
    steady = concurrency / (latency * CALLS)
    shortest = math.ceil(n / concurrency) * CALLS * latency
    if rpm:
        steady = min(steady, rpm / 60 / CALLS)
        shortest = max(shortest, (n * CALLS - 1) / (rpm / 60) + latency)
    return {
        "concurrency": concurrency,
        "examples": n,
        "latency_s": latency,
        "rpm": rpm,
        "elapsed_s": round(elapsed, 2),
        "examples_per_s": round(eps, 3),
        "ideal_steady_per_s": round(steady, 3),
        "ideal_run_per_s": round(n / shortest, 3),
        "of_ideal_run": round(eps / (n / shortest), 4),
        "of_ideal_steady": round(eps / steady, 4),
        "client_cpu_s": round(cpu, 2),
        "requests": len(stats.received),
        "rejected_429": stats.rejected,
        "max_requests_in_60s": stats.max_in_window(60.0),
        "max_requests_in_1s": stats.max_in_window(1.0),
        "retries": metrics["retries"],
    }


def render(result: dict[str, Any]) -> str:
    s = result["settings"]
    lines = [
        "# Throughput against the ideal",
        "",
        environment_line(result["environment"]),
        "",
        f"Produced by `python bench/bench_concurrency.py`: the Messages API server in its own process with "
        f"{s['latency_s']} s latency and a limit of {s['rpm']} requests per minute; tool-use runner, {CALLS} calls "
        "per example, through the Claude client and the official SDK. The run's ideal is examples / the shortest "
        "possible time (waves of examples, or requests spaced by the limit); the steady ideal is "
        "min(concurrency / (latency x calls), rpm / 60 / calls).",
        "",
        *checks_markdown(result["checks"]),
        "",
        "| concurrency | examples | elapsed (s) | examples/s | run's ideal | of it | steady ideal | of it | "
        "max requests in 1 s / 60 s | 429s | client CPU (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["levels"] + result["ceiling"]:
        lines.append(
            f"| {r['concurrency']}{' (200 ms, no limit)' if r['rpm'] is None else ''} | {r['examples']} | "
            f"{r['elapsed_s']} | {r['examples_per_s']} | {r['ideal_run_per_s']} | {100 * r['of_ideal_run']:.1f}% | "
            f"{r['ideal_steady_per_s']} | {100 * r['of_ideal_steady']:.1f}% | {r['max_requests_in_1s']} / "
            f"{r['max_requests_in_60s']} | {r['rejected_429']} | {r['client_cpu_s']} |"
        )
    best = max(result["ceiling"], key=lambda r: r["examples_per_s"], default=None)
    if best is not None:
        calls_per_s = CALLS * best["examples_per_s"]
        lines += [
            "",
            f"Ceiling at 200 ms latency, no limit: {best['examples_per_s']} examples/s "
            f"({calls_per_s:.1f} model calls/s) at concurrency {best['concurrency']}.",
        ]
    return "\n".join(lines)


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in result["levels"]:
        value = round(100 * r["of_ideal_run"], 1)
        out.append(
            check(f"throughput at concurrency {r['concurrency']} (% of the run's ideal)", value, ">= 90", value >= 90)
        )
    rejected = sum(r["rejected_429"] for r in result["levels"])
    worst = max(r["max_requests_in_60s"] for r in result["levels"])
    rpm = result["settings"]["rpm"]
    out.append(check("requests the server refused for the rate limit (429)", rejected, "0", rejected == 0))
    out.append(check("most requests in any 60 s window", worst, f"<= {rpm}", worst <= rpm))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--rpm", type=float, default=2400.0)
    parser.add_argument("--ceiling-examples", type=int, default=600)
    parser.add_argument("--render", action="store_true", help="rewrite the .md from the stored .json")
    args = parser.parse_args(argv)
    if args.render:
        return render_stored("concurrency", checks, render)
    quiet_console()
    settings = {"latency_s": args.latency, "rpm": args.rpm, "examples": args.examples}
    result: dict[str, Any] = {"environment": environment(), "levels": [], "ceiling": [], "settings": settings}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run_level(4, 8, 0.05, None, work / "warm")  # warm-up: the SDK's import and first connections
        for level in args.levels:
            result["levels"].append(run_level(level, args.examples, args.latency, args.rpm, work))
            print(result["levels"][-1], flush=True)
        if args.ceiling_examples:
            for level in (64, 128):
                result["ceiling"].append(run_level(level, args.ceiling_examples, 0.2, None, work))
                print(result["ceiling"][-1], flush=True)
    result["checks"] = checks(result)
    write_results("concurrency", result, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
