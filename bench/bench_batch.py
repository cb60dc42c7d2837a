"""Benchmark batch rounds against live calls at a low tier's rate limit: cost and wall time.

    python bench/bench_batch.py                  # writes results/bench/batch.{md,json}
    python bench/bench_batch.py --examples 50    # quicker

One Table 1 run (HotpotQA, ReAct, the text runner, ``--examples`` questions of the offline split)
against the Messages API stand-in, twice: live at a low tier's limit (``--rpm``, 50 requests per
minute, enforced by the stand-in as the API documents it, the client's limiter set to it), then
with ``batch=true`` (every request through the Message Batches API, in rounds, each batch taking
``--round-minutes`` to end). The stand-in's walk takes 2 to 8 steps per question (8 passes the
step cap), its answers a function of the request alone, so both runs get the same answers.

Time is scaled, so that the run takes minutes and not hours: the limit is multiplied and the
batch latency divided by ``--scale``; wall times are reported at real scale (measured x scale).
Cost is what the stand-in billed (a batch's answers at half price; prompt-cache reads and writes
as billed, the batched run's cache written for an hour).

Goals (issue 48): billed cost of the batched run <= 0.55 x the live run's; the same predictions;
rounds <= the longest episode's model calls + 1. Reported beside: the wall times, their ratio,
and the round latency below which the batched run finishes first.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import KEY_ENV, check, checks_markdown, environment, environment_line, render_stored, write_results

from react_bench.console import quiet_console
from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.models.capabilities import calls_cost_usd
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import Walk, WalkResponder, asks_a_step, question_of
from react_bench.types import Usage

MODEL = "claude-haiku-4-5"


class VariedWalk:
    """A walk of 2 to 8 steps, chosen by the question (a stand-in model's answers, body only)."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.walks = {k: WalkResponder(Walk(steps=k, answers=golds)) for k in range(2, 9)}

    def __call__(self, body: dict[str, Any]) -> Reply:
        question = question_of(body).strip()
        if not asks_a_step(body):
            raise ValueError("a ReAct run asks only agent steps")
        return self.walks[2 + sum(map(ord, question)) % 7](body)


def billed(server: MessagesServer) -> float:
    full = calls_cost_usd(MODEL, [Usage.from_dict(b["usage"]) for b in server.billed if not b["batch"]]) or 0.0
    half = calls_cost_usd(MODEL, [Usage.from_dict(b["usage"]) for b in server.billed if b["batch"]]) or 0.0
    return full + 0.5 * half


def one_run(golds: dict[str, str], n: int, work: Path, *, batch: bool, rpm: float, round_s: float) -> dict[str, Any]:
    os.environ["REACT_BENCH_REQUEST_CACHE"] = str(work / ("cache-batch" if batch else "cache-live"))
    with MessagesServer(responder=VariedWalk(golds), requests_per_minute=None if batch else rpm) as server:
        server.batch_latency_s = round_s
        server.batch_polls = 1
        model = claude_model_config(server.base_url, KEY_ENV, MODEL, max_retries=8)
        if not batch:
            model["requests_per_minute"] = rpm
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n),
            model=model,  # type: ignore[arg-type]
            solve=SolveSettings(mode="react", runner="text"),
            results_dir=work / ("batch" if batch else "live"),
            run_id="run",
            progress=False,
            show="none",
            concurrency=8,
            batch=batch,
            batch_poll_s=min(1.0, round_s / 10) if batch else 30.0,
        )
        started = time.monotonic()
        result = asyncio.run(evaluate(cfg, out=io.StringIO()))
        wall = time.monotonic() - started
        cost = billed(server)
        rejected = server.limiter.rejected if server.limiter is not None else 0
    lines = (result.run_dir / "examples.jsonl").read_text().splitlines()
    records = {r["id"]: r for r in (json.loads(line) for line in lines)}
    rounds = 0
    if batch:
        state = json.loads((result.run_dir / "batches.json").read_text())
        rounds = len({b["round"] for b in state["batches"]})
    return {
        "wall_s": round(wall, 2),
        "billed_usd": round(cost, 6),
        "calls": sum(r["calls"] for r in records.values()),
        "longest_episode_calls": max(r["calls"] for r in records.values()),
        "rounds": rounds,
        "rejected_429": rejected,
        "predictions": {k: r["prediction"] for k, r in records.items()},
    }


def render(result: dict[str, Any]) -> str:
    s, live, batch = result["settings"], result["live"], result["batch"]
    return "\n".join(
        [
            "# Batch rounds against live calls at a low tier's rate limit",
            "",
            environment_line(result["environment"]),
            "",
            f"Produced by `python bench/bench_batch.py`: one Table 1 run (HotpotQA, ReAct, text runner, "
            f"{s['examples']} questions, {MODEL} prices) against the Messages API stand-in; live at {s['rpm']:g} "
            f"requests per minute, batched with each round taking {s['round_minutes']:g} minutes. Time scaled by "
            f"{s['scale']:g} (the limit multiplied, the round latency divided); wall times below at real scale.",
            "",
            *checks_markdown(result["checks"]),
            "",
            "| run | model calls | rounds | wall time (real scale) | billed USD |",
            "|---|---|---|---|---|",
            f"| live, {s['rpm']:g} requests/minute | {live['calls']} | - | {live['wall_real_min']:.1f} min | "
            f"{live['billed_usd']:.4f} |",
            f"| batch=true, {s['round_minutes']:g} min a round | {batch['calls']} | {batch['rounds']} | "
            f"{batch['wall_real_min']:.1f} min | {batch['billed_usd']:.4f} |",
            "",
            f"Cost ratio {result['cost_ratio']:.3f}; wall-time ratio (batch / live) {result['wall_ratio']:.2f}. "
            f"The batched run finishes first when a round takes less than {result['break_even_round_min']:.1f} "
            f"minutes (the live run's time / its {batch['rounds']} rounds).",
        ]
    )


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    live, batch = result["live"], result["batch"]
    ratio = result["cost_ratio"]
    same = sum(1 for k, v in live["predictions"].items() if batch["predictions"].get(k) == v)
    return [
        check("billed cost, batched / live", round(ratio, 3), "<= 0.55", ratio <= 0.55),
        check("predictions the same as live", same, f"== {len(live['predictions'])}", same == len(live["predictions"])),
        check(
            "rounds",
            batch["rounds"],
            f"<= {batch['longest_episode_calls'] + 1} (longest episode + 1)",
            batch["rounds"] <= batch["longest_episode_calls"] + 1,
        ),
        check("requests refused for the rate limit (live, 429)", live["rejected_429"], "0", live["rejected_429"] == 0),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--rpm", type=float, default=50.0)
    parser.add_argument("--round-minutes", type=float, default=30.0)
    parser.add_argument("--scale", type=float, default=60.0, help="time runs this many times faster")
    parser.add_argument("--render", action="store_true", help="rewrite the .md from the stored .json")
    args = parser.parse_args(argv)
    if args.render:
        return render_stored("batch", checks, render)
    quiet_console()
    os.environ.setdefault(KEY_ENV, "local-bench-key-not-real")
    examples = load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=args.examples))
    golds = {e.question.strip(): e.gold for e in examples}
    settings = {"examples": args.examples, "rpm": args.rpm, "round_minutes": args.round_minutes, "scale": args.scale}
    result: dict[str, Any] = {"environment": environment(), "settings": settings}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rpm, round_s = args.rpm * args.scale, args.round_minutes * 60 / args.scale
        for name in ("live", "batch"):
            run = one_run(golds, args.examples, work, batch=name == "batch", rpm=rpm, round_s=round_s)
            run["wall_real_min"] = round(run["wall_s"] * args.scale / 60, 2)
            result[name] = run
            print(name, {k: v for k, v in run.items() if k != "predictions"}, flush=True)
    live, batch = result["live"], result["batch"]
    result["cost_ratio"] = batch["billed_usd"] / live["billed_usd"]
    result["wall_ratio"] = batch["wall_real_min"] / live["wall_real_min"]
    result["break_even_round_min"] = live["wall_real_min"] / max(batch["rounds"], 1)
    result["checks"] = checks(result)
    write_results("batch", result, render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
