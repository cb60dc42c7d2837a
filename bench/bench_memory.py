"""Benchmark memory over a long run: resident set size from start to summary.

    python bench/bench_memory.py                   # writes results/bench/memory.{md,json}
    python bench/bench_memory.py --examples 1000   # quicker

One ``evaluate`` of ``--examples`` HotpotQA questions (split=all), mode=react, the text
runner, the offline wiki, concurrency 8, with the in-process walker (no latency, 7 steps per
episode, every trajectory written in full). A thread reads this process's RSS from
``/proc/self/statm`` every 20 ms. Reported: RSS before the run, when half the examples are
written (the middle), when the last is written (the end), and the peak over the whole run
including the summary (``metrics.json``) that follows the last example.

Goal (issue 16): peak at most 1.2 x the middle (flat while running, and a summary that does
not load every trajectory).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import (
    check,
    checks_markdown,
    environment,
    environment_line,
    hotpotqa_plans,
    hotpotqa_split,
    render_stored,
    write_results,
)

from react_bench.console import quiet_console
from react_bench.evaluate import evaluate
from react_bench.events import AgentEvent, RunProgress
from react_bench.methods.core import SolveSettings
from react_bench.models import ModelSpec
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.walker import Walk, WalkingModel

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2**20


class Sampler(threading.Thread):
    def __init__(self, every_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.every_s, self.peak, self.samples = every_s, 0.0, 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.peak = max(self.peak, rss_mb())
            self.samples += 1
            time.sleep(self.every_s)

    def stop(self) -> float:
        self._halt.set()
        self.join()
        return max(self.peak, rss_mb())


def measure(n: int, work: Path) -> dict[str, Any]:
    model = WalkingModel(Walk(7, hotpotqa_plans(n)))
    cfg = RunConfig(
        task=TaskConfig(name="hotpotqa", n=n, split=hotpotqa_split(n)),
        model=ModelSpec.from_mapping({"provider": "scripted", "label": "walker"}),
        solve=SolveSettings(mode="react", runner="text"),
        results_dir=work,
        concurrency=8,
        progress=False,
        show="none",
        request_cache="off",
    )
    marks: dict[str, float] = {}
    timeline: list[tuple[int, float]] = []

    def on_event(example_id: str, event: AgentEvent) -> None:
        if isinstance(event, RunProgress):
            if event.done % max(1, n // 20) == 0:
                timeline.append((event.done, round(rss_mb(), 1)))
            if event.done == n // 2:
                marks["middle"] = rss_mb()
            if event.done == n:
                marks["end"] = rss_mb()

    marks["start"] = rss_mb()
    sampler = Sampler()
    sampler.start()
    started = time.perf_counter()
    result = asyncio.run(evaluate(cfg, out=io.StringIO(), on_event=on_event, model=model))
    wall = time.perf_counter() - started
    peak = sampler.stop()
    assert result.metrics["n"] == n, result.metrics
    examples_mb = (result.run_dir / "examples.jsonl").stat().st_size / 2**20
    return {
        "examples": n,
        "wall_s": round(wall, 1),
        "examples_jsonl_mb": round(examples_mb, 1),
        "rss_mb": {k: round(v, 1) for k, v in marks.items()} | {"peak": round(peak, 1)},
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "growth_kb_per_example_middle_to_end": round(1024 * (marks["end"] - marks["middle"]) / (n - n // 2), 2),
        "timeline": timeline,
        "samples": sampler.samples,
    }


def render(result: dict[str, Any]) -> str:
    r = result["run"]
    rss = r["rss_mb"]
    lines = [
        "# Memory over a long run",
        "",
        environment_line(result["environment"]),
        "",
        f"Produced by `python bench/bench_memory.py`: {r['examples']} HotpotQA examples, mode=react, text runner, "
        f"offline wiki, concurrency 8, the in-process walker (7 steps each); {r['wall_s']} s, examples.jsonl "
        f"{r['examples_jsonl_mb']} MB.",
        "",
        *checks_markdown(result["checks"]),
        "",
        "| point | RSS (MB) |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in rss.items()),
        "",
        f"Growth from the middle to the end: {r['growth_kb_per_example_middle_to_end']} KB per example.",
        "",
        "RSS as examples are written: " + ", ".join(f"{done}: {mb}" for done, mb in r["timeline"]),
    ]
    return "\n".join(lines)


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    rss = result["run"]["rss_mb"]
    ratio = round(rss["peak"] / rss["middle"], 3)
    return [check("peak RSS (summary included) / RSS at the middle of the run", ratio, "<= 1.2", ratio <= 1.2)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--render", action="store_true", help="rewrite the .md from the stored .json")
    args = parser.parse_args(argv)
    if args.render:
        return render_stored("memory", checks, render)
    quiet_console()
    result: dict[str, Any] = {"environment": environment()}
    with tempfile.TemporaryDirectory() as tmp:
        result["run"] = measure(args.examples, Path(tmp))
    print(result["run"]["rss_mb"], flush=True)
    result["checks"] = checks(result)
    write_results("memory", result, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
