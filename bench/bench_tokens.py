"""Prompt caching, measured: billed-equivalent input tokens with caching on and off.

    python bench/bench_tokens.py            # writes results/bench/tokens.{md,json}

HotpotQA ReAct episodes that search for all 7 steps (a model that never answers, so every
episode is as long as the protocol allows) through the real SDK against the project's
Messages API server, whose prompt cache follows Anthropic's documented rules (the model's
minimum cacheable length, reads at block boundaries up to 20 blocks before a breakpoint).
Billed-equivalent input = uncached + 1.25 x cache writes + 0.1 x cache reads. For each
runner (the tool-use runner with its few-shot exemplars as native turns), for one episode
and for a 100-question run (concurrency 1, so every request sees the cache the one before
it left, as consecutive API calls do), on two models: one whose documented minimum is
1,024 tokens (Claude Opus 4.1) and Claude Sonnet 4.6 (2,048).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import io
import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.evaluate import evaluate  # noqa: E402
from react_bench.methods.core import SolveSettings  # noqa: E402
from react_bench.models import ModelSpec
from react_bench.models.capabilities import min_cache_tokens  # noqa: E402
from react_bench.results import billed_equivalent_input  # noqa: E402
from react_bench.runconfig import RunConfig  # noqa: E402
from react_bench.tasks import TaskConfig  # noqa: E402
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config  # noqa: E402
from react_bench.testing.sse import prompt_tokens  # noqa: E402
from react_bench.types import TextBlock, ToolUseBlock  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "REACT_BENCH_BENCH_KEY"
MODELS = ("claude-opus-4-1", "claude-sonnet-4-6")
GOALS = {"episode": 0.35, "run": 0.20}
# A zero-shot 7-step episode's prompt stays under the model's minimum cacheable length: caching can
# save nothing there, so its goal is never dearer than no caching (issue 36; issue 28 asked 0.6).
ZERO_SHOT_GOAL = 1.0
ZERO_SHOT_RUN = 20
_STEP = re.compile(r"(?:Thought|Action) (\d+):")


def keeps_searching(body: dict[str, Any]) -> Reply:
    """A model that searches at every step and never finishes."""
    if body.get("tools"):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply((TextBlock("I need more."), ToolUseBlock("", "search", {"entity": f"Topic {turn}"})))
    last = body["messages"][-1]
    text = "".join(b.get("text", "") for b in last["content"]) if isinstance(last["content"], list) else last["content"]
    if last["role"] == "assistant":  # prefill: the reply continues "Thought k:"
        step = int(_STEP.findall(text)[-1])
        return Reply.text(f" I need more.\nAction {step}: Search[Topic {step}]")
    step = int(_STEP.findall(text.rsplit("Begin your reply with", 1)[1])[0])
    return Reply.text(f"Thought {step}: I need more.\nAction {step}: Search[Topic {step}]")


async def measure(
    model: str, runner: str, n: int, caching: bool, work: Path, shots: int | None = None
) -> dict[str, Any]:
    with MessagesServer(responder=keeps_searching) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n),
            model=ModelSpec.from_mapping(claude_model_config(server.base_url, KEY_ENV, model, prompt_caching=caching)),
            solve=SolveSettings(mode="react", runner=runner, shots=shots),  # type: ignore[arg-type]
            results_dir=work / f"{model}-{runner}-{n}-{caching}-{shots}",
            request_cache="off",  # every request really goes to the server
            progress=False,
        )
        result = await evaluate(config, out=io.StringIO())
        requests = len(server.requests)
        sizes = [prompt_tokens(r.body) for r in server.requests]
    usage = result.metrics["usage"]
    return {
        "usage": usage,
        "billed_equivalent": billed_equivalent_input(usage),
        "requests": requests,
        "prompt_tokens": sizes,  # each request's input as the server counts it
        "examples": result.metrics["n"],
    }


async def run_all(work: Path) -> dict[str, Any]:
    rows = []
    for model in MODELS:
        for runner, shots in (("text", None), ("tool_use", None), ("tool_use", 0)):
            for scope, n in (("episode", 1), ("run", 100 if shots is None else ZERO_SHOT_RUN)):
                on = await measure(model, runner, n, True, work, shots)
                off = await measure(model, runner, n, False, work, shots)
                ratio = on["billed_equivalent"] / off["billed_equivalent"]
                above = sum(t >= min_cache_tokens(model) for t in off["prompt_tokens"])
                rows.append(
                    {
                        "model": model,
                        "min_cache_tokens": min_cache_tokens(model),
                        "runner": runner,
                        "shots": "all" if shots is None else shots,
                        "scope": scope,
                        "questions": n,
                        "on": on,
                        "off": off,
                        "ratio": ratio,
                        "above_minimum": above,
                    }
                )
                print(f"{model} {runner} shots={shots} {scope}: on/off {ratio:.3f}", flush=True)
    return {"rows": rows}


def checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if row["model"] == MODELS[0] and row["shots"] == 0 and row["scope"] == "episode":
            out.append(
                {
                    "name": f"zero-shot tool_use episode: billed input on/off ({row['model']})",
                    "value": round(row["ratio"], 4),
                    "goal": f"<= {ZERO_SHOT_GOAL}",
                    "ok": row["ratio"] <= ZERO_SHOT_GOAL,
                }
            )
        elif row["model"] == MODELS[0] and row["shots"] == "all":
            out.append(
                {
                    "name": f"{row['runner']} {row['scope']}: billed input on/off ({row['model']})",
                    "value": round(row["ratio"], 4),
                    "goal": f"<= {GOALS[row['scope']]}",
                    "ok": row["ratio"] <= GOALS[row["scope"]],
                }
            )
    worst = max(rows, key=lambda r: r["ratio"])
    out.append(
        {
            "name": "caching never dearer than no caching (every configuration)",
            "value": round(worst["ratio"], 4),
            "goal": "<= 1.0",
            "ok": worst["ratio"] <= 1.0,
        }
    )
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Prompt caching: billed-equivalent input tokens, on vs off",
        "",
        f"Measured {result['date']} by `python bench/bench_tokens.py` ({result['environment']}).",
        "HotpotQA ReAct, 7 steps every episode (a model that keeps searching), real SDK against the",
        "project's Messages API server with Anthropic's documented cache rules. Billed-equivalent",
        "input = uncached + 1.25 x writes + 0.1 x reads.",
        "",
        "| model (min cacheable) | runner | shots | scope | requests | at or above the minimum | "
        "on: uncached / written / read | on | off | on/off |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:
        u = r["on"]["usage"]
        parts = f"{u['input_tokens']} / {u['cache_creation_input_tokens']} / {u['cache_read_input_tokens']}"
        lines.append(
            f"| {r['model']} ({r['min_cache_tokens']}) | {r['runner']} | {r['shots']} | {r['scope']} "
            f"({r['questions']} q) | {r['on']['requests']} | {r['above_minimum']} | {parts} | "
            f"{r['on']['billed_equivalent']:.0f} | "
            f"{r['off']['billed_equivalent']:.0f} | {r['ratio']:.3f} |"
        )
    lines += ["", "## Checks", "", "| check | value | goal | ok |", "| --- | ---: | --- | --- |"]
    lines += [f"| {c['name']} | {c['value']} | {c['goal']} | {'yes' if c['ok'] else 'NO'} |" for c in result["checks"]]
    lines += [
        "",
        "Breakpoints sit where the next request repeats the prompt: after the exemplars (shared by",
        "every question) and after the newest step (read by the next step). A breakpoint whose",
        "prefix is below the model's minimum cacheable length is not sent (the API would not cache",
        "it). At the step cap no request follows, so the last step writes nothing (a write costs",
        "1.25x, and this one would never be read): its breakpoint goes where the step before wrote,",
        "and that prefix is read. 'At or above the minimum': the requests whose whole input reaches",
        "the model's minimum cacheable length; a request's prefix can be read from the cache only if",
        "the request before it reached that length. Zero-shot (shots=0), a 7-step HotpotQA episode's",
        "prompt passes 1,024 tokens only in its last request(s), so no breakpoint placement can save",
        "anything there: caching costs the same as no caching, never more.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=REPO / "results" / "bench")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/react-bench-bench-tokens"))
    args = parser.parse_args(argv)
    os.environ.setdefault(KEY_ENV, "bench-key-not-real")
    import shutil

    shutil.rmtree(args.work_dir, ignore_errors=True)
    result = asyncio.run(run_all(args.work_dir))
    result["date"] = dt.date.today().isoformat()
    result["environment"] = f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores"
    result["checks"] = checks(result["rows"])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "tokens.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out_dir / "tokens.md").write_text(render(result))
    print(render(result))
    return 0 if all(c["ok"] for c in result["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
