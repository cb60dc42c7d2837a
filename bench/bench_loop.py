"""Benchmark the harness's own time per step: what it adds to every model call.

    python bench/bench_loop.py                 # writes results/bench/loop.{md,json}
    python bench/bench_loop.py --episodes 200  # quicker, noisier

What is measured (HotpotQA, mode=react, the offline wiki, 7-step walks that search the
questions' real supporting pages, look up, and finish; ``react_bench.testing.walker``):
1. In process: ``evaluate`` with an in-process model of no latency, concurrency 1, both
   runners, ``--episodes`` episodes each. A step's harness time is the time from one model
   call's start to the next call's start in the same episode, less the stand-in model's own
   time (building its response and events, measured around it): the loop, the policy, the
   wiki action, the events. The per-example work (scoring, the record, writing both lines)
   is the time from an episode's last call to the next episode's first, less one step.
   A ``cProfile`` of a fifth of the episodes gives the top costs.
2. Through the Claude client: the same walks answered by the project's Messages API server
   (another process, zero latency) through the official SDK, ``--claude-episodes`` per
   runner: this process's CPU time per model call (client, SDK, HTTP, loop, wiki, writes),
   from the first step to the last example written (the run's set-up and summary apart),
   five runs per runner, each followed by the SDK alone on every third of its requests; the
   checks take the least of each (noise on a shared machine only ever adds).
3. At 1 s per model call (``--latency-episodes`` per runner, same server with 1 s latency):
   the harness's share of wall time from the first call's arrival to the last answer,
   (that window - the server's time on the calls) / that window.
4. Long episodes: the walker shaped as Claude (``ClaudeShapedWalker``: the runners build
   their Claude requests and ``AnthropicClient.plan`` builds each one's wire form), 50 steps,
   ``--long-episodes`` per runner: the CPU between consecutive calls, by step.

Goals (issue 16): median step at most 0.5 ms in process, wiki included; at most 2.5 ms CPU
per model call on the Claude path; at most 1% of wall time at 1 s per call. Issue 28: at most
1.2x the SDK alone per call, in the same process; over 50-step episodes (4.), the harness's
CPU between the calls of steps 49 and 50 at most 2x that between steps 1 and 2.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlib import (
    KEY_ENV,
    check,
    checks_markdown,
    claude_model,
    environment,
    environment_line,
    hotpotqa_plans,
    hotpotqa_split,
    percentile,
    render_stored,
    server_process,
    write_results,
)

from react_bench.console import quiet_console
from react_bench.evaluate import evaluate
from react_bench.events import AgentEvent, RunProgress, StreamEvent
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.models import ModelSpec, make_client
from react_bench.models.anthropic import AnthropicClient
from react_bench.models.base import ModelRequest
from react_bench.models.collector import response_to_events
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.walker import Walk, WalkingModel
from react_bench.types import ModelResponse

STEPS = 7
# The harness's CPU per call over the SDK alone's, the median of paired runs (issue 28 asked 1.2,
# issue 36 1.3 on the least of each). Restated in issue 46 at what is measured: the medians were
# 1.57 (text) and 1.31 (tool use), single rounds 1.37-1.80 and 1.13-1.58 on an idle 2-core host;
# the profile on the page shows the harness's own code at a tenth of a call's CPU, spread over the
# layers each stream event passes (bench/README.md). The goals catch a regression of a tenth.
SDK_RATIO_GOAL = {"text": 1.65, "tool_use": 1.45}
LONG_STEPS = 50  # ALFWorld's cap: per-step work must not grow with the history
RUNNERS = ("text", "tool_use")


@dataclass
class TimedWalker(WalkingModel):
    """The walker, noting when each call starts and how long the stand-in itself took."""

    starts: list[float] = field(default_factory=list)
    own: list[float] = field(default_factory=list)
    clock: Callable[[], float] = time.perf_counter

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        start = self.clock()
        self.starts.append(start)
        self.calls += 1
        events = response_to_events(self.respond(request))
        self.own.append(self.clock() - start)
        for event in events:
            yield event


def run_config(runner: str, n: int, results: Path, model: dict[str, Any]) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n, split=hotpotqa_split(n)),
        model=ModelSpec.from_mapping(model),
        solve=SolveSettings(mode="react", runner=runner),  # type: ignore[arg-type]
        results_dir=results,
        progress=False,
        show="none",
        request_cache="off",
    )


def in_process(runner: str, episodes: int, plans: dict, work: Path, profile: bool = False) -> dict[str, Any]:
    model = TimedWalker(Walk(STEPS, plans))
    cfg = run_config(
        runner, episodes, work / f"{runner}-{episodes}-{profile}", {"provider": "scripted", "label": "walker"}
    )
    profiler = cProfile.Profile() if profile else None
    wall = time.perf_counter()
    cpu = time.process_time()
    if profiler is not None:
        profiler.enable()
    result = asyncio.run(evaluate(cfg, out=io.StringIO(), model=model))
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert result.metrics["n"] == episodes and result.metrics["mean_steps"] == STEPS, result.metrics
    if profiler is not None:
        return {"top": top_costs(profiler, cpu)}
    steps: list[float] = []
    between: list[float] = []
    for i in range(1, len(model.starts)):
        gap = model.starts[i] - model.starts[i - 1] - model.own[i - 1]
        (between if i % STEPS == 0 else steps).append(gap)
    step_median = statistics.median(steps)
    return {
        "episodes": episodes,
        "calls": model.calls,
        "em": round(result.metrics["em"]["mean"], 3),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "stand_in_model_s": round(sum(model.own), 2),
        "step_ms": {
            "median": round(1e3 * step_median, 3),
            "p99": round(1e3 * percentile(steps, 99), 3),
            "mean": round(1e3 * statistics.fmean(steps), 3),
        },
        "per_example_work_ms": round(1e3 * (statistics.median(between) - step_median), 3),
        "episode_ms": round(1e3 * (wall - sum(model.own)) / episodes, 3),
    }


@dataclass
class ClaudeShapedWalker(TimedWalker):
    """The walker, shaped as a Claude model: the runner builds the chat requests it builds for
    Claude, and each request is planned by the real ``AnthropicClient`` (wire form, breakpoints)
    before it is answered, so that request building counts as harness work. CPU clock."""

    client: Any = None
    clock: Callable[[], float] = time.process_time

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.client.plan(request)  # the Claude path's own work on the request, then the stand-in's
        async for event in super().stream(request):
            yield event

    def respond(self, request: ModelRequest) -> ModelResponse:
        if request.prompt is None and not request.tools:  # the text runner's chat form: the prompt's text
            request = replace(request, prompt="".join(m.text for m in request.messages))
        return super().respond(request)


def long_episodes(runner: str, episodes: int, plans: dict, work: Path) -> dict[str, Any]:
    """Harness CPU between the model calls of step k and k+1 of 50-step episodes (search and
    lookup alternate, so odd and even gaps differ; compare like with like): flat if no per-step
    work grows with the history."""
    spec = ModelSpec.from_mapping(claude_model("http://127.0.0.1:9"))  # planned only, never sent
    model = ClaudeShapedWalker(Walk(LONG_STEPS, plans), client=make_client(spec.provider, spec.settings))
    model.capabilities = model.client.capabilities
    cfg = run_config(runner, episodes, work / f"long-{runner}-{episodes}", {"provider": "scripted", "label": "walker"})
    cfg = replace(cfg, solve=replace(cfg.solve, loop=LoopConfig(max_steps=LONG_STEPS)))
    result = asyncio.run(evaluate(cfg, out=io.StringIO(), model=model))
    assert result.metrics["n"] == episodes and result.metrics["mean_steps"] == LONG_STEPS, result.metrics
    gaps: dict[int, list[float]] = {}
    for i in range(1, len(model.starts)):
        if i % LONG_STEPS:  # not the gap between two episodes
            gaps.setdefault(i % LONG_STEPS, []).append(model.starts[i] - model.starts[i - 1] - model.own[i - 1])
    median = {k: round(1e3 * statistics.median(v), 3) for k, v in sorted(gaps.items())}
    return {
        "episodes": episodes,
        "steps": LONG_STEPS,
        "cpu_ms_after_step": median,
        "ratio_49_to_1": round(median[LONG_STEPS - 1] / median[1], 3),
    }


def top_costs(profiler: cProfile.Profile, cpu: float, n: int = 12) -> list[dict[str, Any]]:
    stats = pstats.Stats(profiler)
    rows = []
    for (file, line, func), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = file.split("site-packages/")[-1].split("/main/")[-1]
        rows.append({"function": f"{where}:{line}({func})", "calls": calls, "own_s": own, "cumulative_s": cumulative})
    rows.sort(key=lambda r: r["own_s"], reverse=True)
    total = sum(r["own_s"] for r in rows)
    return [
        {
            **r,
            "own_s": round(r["own_s"], 3),
            "cumulative_s": round(r["cumulative_s"], 3),
            "own_share": round(r["own_s"] / total, 3),
        }
        for r in rows[:n]
    ]


def claude_path(runner: str, episodes: int, work: Path, latency_s: float = 0.0, repeat: int = 1) -> dict[str, Any]:
    """``repeat`` runs of one runner (``paired_runs`` alternates the runners instead)."""
    runs = [
        _claude_run(runner, episodes, work / f"claude-{runner}-{latency_s}-{episodes}-{i}", latency_s)
        for i in range(repeat)
    ]
    return summarize_runs(runs)


def paired_runs(episodes: int, work: Path, repeat: int) -> dict[str, dict[str, Any]]:
    """``repeat`` rounds, each a run of every runner in turn, so that a stretch of load on the
    machine falls on both runners alike; each run is paired with the SDK alone measured right
    after it, on its own requests."""
    runs: dict[str, list[dict[str, Any]]] = {runner: [] for runner in RUNNERS}
    for i in range(repeat):
        for runner in RUNNERS:
            runs[runner].append(_claude_run(runner, episodes, work / f"claude-{runner}-{episodes}-{i}", 0.0))
            print(f"round {i + 1}/{repeat} {runner}: {runs[runner][-1]['ratio_to_sdk']}", flush=True)
    return {runner: summarize_runs(r) for runner, r in runs.items()}


def summarize_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median run by its ratio to its own SDK-alone measurement (a shared machine's speed
    drifts by several percent between minutes: the pair shares the minute), with every run's
    figures; the check takes the median of the ratios, so one noisy run does not decide."""
    ratios = sorted(r["ratio_to_sdk"] for r in runs)
    median = sorted(runs, key=lambda r: r["ratio_to_sdk"])[len(runs) // 2]
    listed = {
        "cpu_ms_per_call_runs": [r["cpu_ms_per_call"] for r in runs],
        "sdk_alone_ms_per_call_runs": [r["sdk_alone_ms_per_call"] for r in runs],
        "ratio_to_sdk_runs": [r["ratio_to_sdk"] for r in runs],
        "ratio_to_sdk_median": round(statistics.median(ratios), 3),
    }
    return {**median, **listed} if len(runs) > 1 else median


def claude_profile(runner: str, episodes: int, work: Path) -> dict[str, Any]:
    """One run on the Claude path under cProfile, its own time summed by where the code lives:
    what is the harness's (react_bench) and what is the SDK's and its HTTP stack's."""
    profiler = cProfile.Profile()
    profiler.enable()
    run = _claude_run(runner, episodes, work / f"profile-{runner}", 0.0, sdk_pass=False)
    profiler.disable()
    groups: dict[str, float] = {}
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (file, _line, name), (_cc, _nc, own, _cum, _callers) in stats.items():
        package = _package_of(file, name)
        groups[package] = groups.get(package, 0.0) + own
    total = sum(groups.values())
    ranked = sorted(groups.items(), key=lambda kv: -kv[1])
    return {
        "runner": runner,
        "calls": run["calls"],
        "by_package": [
            {"package": name, "own_ms_per_call": round(1e3 * own / run["calls"], 3), "share": round(own / total, 3)}
            for name, own in ranked
        ],
    }


PACKAGES = (
    ("react_bench", "react_bench (the harness)"),
    ("anthropic", "anthropic (the SDK)"),
    ("httpx", "httpx2, httpcore2, h11 (the SDK's HTTP)"),
    ("httpcore", "httpx2, httpcore2, h11 (the SDK's HTTP)"),
    ("h11", "httpx2, httpcore2, h11 (the SDK's HTTP)"),
    ("anyio", "anyio, sniffio (the SDK's async layer)"),
    ("sniffio", "anyio, sniffio (the SDK's async layer)"),
    ("pydantic", "pydantic (the SDK's models)"),
    ("asyncio", "asyncio and selectors (the event loop, waiting on sockets)"),
    ("selectors", "asyncio and selectors (the event loop, waiting on sockets)"),
    ("select.", "asyncio and selectors (the event loop, waiting on sockets)"),
    ("json", "json (the SDK's and the harness's)"),
    ("sqlite3", "sqlite3 (the offline wiki)"),
)


def _package_of(file: str, function: str) -> str:
    """The package a profiled function belongs to (a builtin by the object it is a method of)."""
    for key, name in PACKAGES:
        if f"/{key}" in file or (file == "~" and f"'{key}" in function):
            return name
    return "other (stdlib, builtins)"


def _claude_run(runner: str, episodes: int, work: Path, latency_s: float, sdk_pass: bool = True) -> dict[str, Any]:
    marks: dict[str, float] = {}

    def on_event(example_id: str, event: AgentEvent) -> None:  # CPU from the first step to the last write
        marks.setdefault("first", time.process_time())
        if isinstance(event, RunProgress):
            marks["last"] = time.process_time()

    with server_process(steps=STEPS, plans=episodes, latency_s=latency_s) as server:
        cfg = run_config(runner, episodes, work, claude_model(server.base_url))
        client = make_client(cfg.model.provider, cfg.model.settings)
        assert isinstance(client, AnthropicClient)
        sent: list[dict[str, Any]] = []
        plan = client.plan

        def recording_plan(request: ModelRequest) -> Any:
            planned = plan(request)
            sent.append(planned.arguments)
            return planned

        client.plan = recording_plan  # type: ignore[method-assign]
        wall = time.perf_counter()
        # deltas=False: as scripts/eval.py runs (its bar reads no text fragments); this sink wants the progress
        result = asyncio.run(evaluate(cfg, out=io.StringIO(), on_event=on_event, model=client, deltas=False))
        wall, cpu = time.perf_counter() - wall, marks["last"] - marks["first"]
        run_ended = time.monotonic()
        # every third: each step of the walks alike
        sdk_ms = asyncio.run(sdk_alone(server.base_url, sent[::3])) if sdk_pass else float("nan")
    stats = server.stats
    assert stats is not None and result.metrics["n"] == episodes and result.metrics["errors"] == 0, result.metrics
    run = [(r, a) for r, a in zip(stats.received, stats.answered, strict=True) if r < run_ended]  # not the SDK's
    calls = len(run)
    on_server = sum(a - r for r, a in run)
    window = max(a for _, a in run) - min(r for r, _ in run)  # first call to last answer: the run's loop
    return {
        "episodes": episodes,
        "calls": calls,
        "em": round(result.metrics["em"]["mean"], 3),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_call": round(1e3 * cpu / calls, 3),
        "sdk_alone_ms_per_call": round(sdk_ms, 3),
        "ratio_to_sdk": round(1e3 * cpu / calls / sdk_ms, 3),
        "server_s": round(on_server, 2),
        "calls_window_s": round(window, 2),
        "harness_share_of_wall": round((window - on_server) / window, 4),
    }


async def sdk_alone(base_url: str, bodies: list[dict[str, Any]]) -> float:
    """CPU per call (ms) of the official SDK alone on the same requests: ``messages.create``
    and reading every stream event, nothing else (what no harness on this SDK can go below)."""
    import anthropic

    sdk = anthropic.AsyncAnthropic(api_key=os.environ[KEY_ENV], base_url=base_url, max_retries=0)
    for timed in (bodies[:50], bodies):  # the first pass warms the connection
        cpu = time.process_time()
        for body in timed:
            async with await sdk.messages.create(**body, stream=True) as stream:
                async for _ in stream:
                    pass
        cpu = time.process_time() - cpu
    await sdk.close()
    return 1e3 * cpu / len(bodies)


def render(result: dict[str, Any]) -> str:
    lines = [
        "# The harness's own time per step",
        "",
        environment_line(result["environment"]),
        "",
        "Produced by `python bench/bench_loop.py`. HotpotQA, mode=react, the offline wiki, walks of "
        f"{STEPS} steps (search, lookup, ..., finish) over each question's real supporting pages.",
        "",
        *checks_markdown(result["checks"]),
        "",
        "## In process (a stand-in model with no latency, concurrency 1)",
        "",
        "| runner | episodes | step median (ms) | step p99 (ms) | per-example work (ms) | per episode (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for runner, r in result["in_process"].items():
        s = r["step_ms"]
        lines.append(
            f"| {runner} | {r['episodes']} | {s['median']} | {s['p99']} | {r['per_example_work_ms']} | "
            f"{r['episode_ms']} |"
        )
    lines += [
        "",
        "## Through the Claude client (official SDK, local Messages API server in another process)",
        "",
        "CPU per call is this process's, from the first step to the last example written. At no latency "
        "the runners run in alternating rounds, each run paired with the SDK alone measured right after it "
        "on its own requests; the row is the median run by that ratio, `runs` lists every run's CPU per call "
        "and `ratios` every pair's ratio; the check takes the median ratio. The SDK alone: the same requests "
        "(every third of the run's) sent with "
        "`messages.create` and every stream event read, nothing else: the floor for any harness on this SDK.",
        "",
        "| runner | latency | episodes | calls | CPU per call (ms) | runs | SDK alone (ms) | ratios | "
        "beyond the SDK (ms) | wall (s) | harness share of wall |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, r in result["claude"].items():
        runner, latency = key.rsplit("@", 1)
        runs = ", ".join(map(str, r.get("cpu_ms_per_call_runs", [r["cpu_ms_per_call"]])))
        sdk = r.get("sdk_alone_ms_per_call")
        beyond = "" if sdk is None else round(r["cpu_ms_per_call"] - sdk, 3)
        ratios = ", ".join(map(str, r.get("ratio_to_sdk_runs", [])))
        lines.append(
            f"| {runner} | {latency} | {r['episodes']} | {r['calls']} | {r['cpu_ms_per_call']} | {runs} | "
            f"{sdk or ''} | {ratios} | {beyond} | {r['wall_s']} | {100 * r['harness_share_of_wall']:.2f}% |"
        )
    profile = result.get("claude_profile")
    if profile:
        lines += [
            "",
            f"## Where a call's CPU goes on the Claude path ({profile['runner']} runner, cProfile, "
            "own time by package)",
            "",
            "One run of the same walks under cProfile (which slows every function call alike, so the shares "
            "are what to read, and the ms are inflated). The harness's own code is the `react_bench` row; "
            "everything else is the SDK, its HTTP stack and the event loop, which any harness on the SDK pays.",
            "",
            "| package | own CPU per call (ms, profiled) | share |",
            "|---|---|---|",
        ]
        lines += [
            f"| {p['package']} | {p['own_ms_per_call']} | {100 * p['share']:.1f}% |" for p in profile["by_package"]
        ]
    if result.get("long"):
        lines += [
            "",
            f"## Long episodes ({LONG_STEPS} steps): harness CPU between consecutive model calls",
            "",
            "The walker shaped as Claude (the runners build their Claude requests; `AnthropicClient.plan` "
            "builds each one's wire form and breakpoints), no latency, concurrency 1. The gap after step k: "
            "the step's action, its events and record, and the next request. Odd steps search, even steps "
            "look up. Median CPU ms over the episodes.",
            "",
            "| runner | episodes | after step 1 | 2 | 10 | 25 | 48 | 49 | 49 / 1 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for runner, r in result["long"].items():
            at = r["cpu_ms_after_step"]
            cells = " | ".join(str(at[str(k)] if str(k) in at else at[k]) for k in (1, 2, 10, 25, 48, 49))
            lines.append(f"| {runner} | {r['episodes']} | {cells} | {r['ratio_49_to_1']} |")
    for runner, top in result["profile"].items():
        lines += [
            "",
            f"## Top costs in process ({runner} runner, cProfile, own time)",
            "",
            "| function | calls | own (s) | share |",
            "|---|---|---|---|",
        ]
        lines += [f"| `{t['function']}` | {t['calls']} | {t['own_s']} | {100 * t['own_share']:.1f}% |" for t in top]
    return "\n".join(lines)


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for runner, r in result["in_process"].items():
        value = r["step_ms"]["median"]
        out.append(
            check(
                f"median harness time per step in process, {runner} runner, wiki included (ms)",
                value,
                "<= 0.5",
                value <= 0.5,
            )
        )
    for key, r in result["claude"].items():
        runner, latency = key.rsplit("@", 1)
        if latency == "0s":
            # The absolute ms are figures on the page, not checks: the SDK alone costs more than the old
            # 2.5 ms goal on this machine; what a harness can move is its share beyond the SDK (issue 36).
            ratio = r["ratio_to_sdk_median"]
            rounds = len(r["ratio_to_sdk_runs"])
            name = (
                f"CPU per model call on the Claude path / the SDK alone, {runner} runner "
                f"(median of {rounds} paired runs)"
            )
            goal = SDK_RATIO_GOAL[runner]
            out.append(check(name, ratio, f"<= {goal}", ratio <= goal))
        else:
            value = round(100 * r["harness_share_of_wall"], 3)
            out.append(
                check(
                    f"harness share of wall time at {latency} per call, {runner} runner (%)",
                    value,
                    "<= 1",
                    value <= 1.0,
                )
            )
    for runner, r in result.get("long", {}).items():
        value = r["ratio_49_to_1"]
        out.append(
            check(
                f"harness CPU after step 49 / after step 1 of {LONG_STEPS}-step episodes, {runner} runner",
                value,
                "<= 2",
                value <= 2.0,
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--claude-episodes", type=int, default=200)
    parser.add_argument("--claude-rounds", type=int, default=7, help="alternating paired runs per runner")
    parser.add_argument("--latency-episodes", type=int, default=10)
    parser.add_argument("--long-episodes", type=int, default=20, help=f"{LONG_STEPS}-step episodes per runner")
    parser.add_argument("--render", action="store_true", help="rewrite the .md from the stored .json")
    args = parser.parse_args(argv)

    if args.render:
        return render_stored("loop", checks, render)
    result: dict[str, Any] = {"environment": environment(), "in_process": {}, "profile": {}, "claude": {}, "long": {}}
    quiet_console()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        claude_path("text", 3, work)  # warm-up: the SDK's import and first connection are startup, not steps
        for runner, summary in paired_runs(args.claude_episodes, work, args.claude_rounds).items():
            result["claude"][f"{runner}@0s"] = summary
            print(runner, summary, flush=True)
        result["claude_profile"] = claude_profile("text", args.claude_episodes, work)
        plans = hotpotqa_plans(args.episodes)  # after the Claude runs: those start from a process as a run's would
        for runner in RUNNERS:
            in_process(runner, min(50, args.episodes), plans, work)  # warm-up: caches, imports
            result["in_process"][runner] = in_process(runner, args.episodes, plans, work)
            print(runner, result["in_process"][runner], flush=True)
            profiled = in_process(runner, max(50, args.episodes // 5), plans, work, profile=True)
            result["profile"][runner] = profiled["top"]
        for runner in RUNNERS:
            result["long"][runner] = long_episodes(runner, args.long_episodes, plans, work)
            print(runner, result["long"][runner]["ratio_49_to_1"], flush=True)
        for runner in RUNNERS:
            result["claude"][f"{runner}@1s"] = claude_path(runner, args.latency_episodes, work, latency_s=1.0)
            print(runner, result["claude"][f"{runner}@1s"], flush=True)
    result["checks"] = checks(result)
    write_results("loop", result, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
