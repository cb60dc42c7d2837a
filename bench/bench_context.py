"""Context growth and its remedies, measured: ``python bench/bench_context.py [--local-n 20]``.

Writes ``results/bench/context.{md,json,png}``. HotpotQA ReAct episodes run to 7 steps (a model
that keeps searching; under ``subagent`` it delegates each step with ``research[...]``, whose
inner episodes search for 3 steps) through the real SDK against the project's Messages API
server (documented prompt-cache rules; Claude Opus 4.1, a 1,024-token minimum), text runner, 20
questions per remedy: input tokens per turn by step (the mean over episodes, the outer turns),
and billed-equivalent input per episode (uncached + 1.25 x writes + 0.1 x reads, inner episodes
and summary calls included), with prompt caching on and off. Then each remedy with the embedded
local model on ``--local-n`` questions (its scores mean nothing; it proves the path).
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
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.context import ContextConfig  # noqa: E402
from react_bench.evaluate import evaluate  # noqa: E402
from react_bench.loop import LoopConfig  # noqa: E402
from react_bench.methods.core import SolveSettings  # noqa: E402
from react_bench.models import ModelSpec
from react_bench.results import billed_equivalent_input  # noqa: E402
from react_bench.runconfig import RunConfig  # noqa: E402
from react_bench.studies import tokens_per_step  # noqa: E402
from react_bench.tasks import TaskConfig  # noqa: E402
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "REACT_BENCH_BENCH_KEY"
MODEL = "claude-opus-4-1"
REMEDIES = {
    "full": ContextConfig(),
    "truncate": ContextConfig("truncate", keep_last=2),
    "compact": ContextConfig("compact", threshold_tokens=400, keep_recent=1),
    "subagent": ContextConfig("subagent", inner_max_steps=3),
}


TITLES: list[str] = []  # pages of the offline wiki, so that every search finds a real page


def load_titles() -> None:
    from react_bench.tasks import resolve_data_dir

    rows = json.loads((resolve_data_dir(None) / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())
    TITLES.extend(dict.fromkeys(title for row in rows[:60] for title, _ in row["context"]))


def keeps_searching(body: dict[str, Any]) -> Reply:
    text = "".join(
        b.get("text", "")
        for m in body["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])
        if isinstance(b, dict)
    )
    if "Summarise the steps below" in text:
        return Reply.text("The searches so far found pages on several topics; the answer is still unknown.")
    last = body["messages"][-1]
    tail = "".join(b.get("text", "") for b in last["content"]) if isinstance(last["content"], list) else last["content"]
    if last["role"] == "assistant":
        step = int(re.findall(r"(?:Thought|Action) (\d+):", tail)[-1])
        prefix = ""
    else:
        step = int(re.findall(r"Begin your reply with `Thought (\d+):", tail)[-1])
        prefix = f"Thought {step}:"
    title = TITLES[(len(text) + 7 * step) % len(TITLES)]
    action = f"Research[What is {title}?]" if "Research[question]" in text else f"Search[{title}]"
    return Reply.text(f"{prefix} I need more.\nAction {step}: {action}")


async def measure(remedy: str, caching: bool, n: int, work: Path) -> dict[str, Any]:
    with MessagesServer(responder=keeps_searching) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=n),
            model=ModelSpec.from_mapping(claude_model_config(server.base_url, KEY_ENV, MODEL, prompt_caching=caching)),
            solve=SolveSettings(mode="react", context=REMEDIES[remedy], loop=LoopConfig(max_steps=7)),
            results_dir=work / f"{remedy}-{caching}",
            progress=False,
            request_cache="off",
            protocol="custom",
        )
        result = await evaluate(config, out=io.StringIO())
    usage = result.metrics["usage"]
    per_turn = [s["uncached"] + s["written"] + s["read"] for s in tokens_per_step(result.run_dir)]
    return {
        "per_turn": per_turn,
        "billed_per_episode": billed_equivalent_input(usage) / result.metrics["n"],
        "usage": usage,
    }


async def local(remedy: str, n: int, work: Path) -> dict[str, Any]:
    config = RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model=ModelSpec.from_mapping({"provider": "local", "name": "smollm2-135m"}),
        solve=SolveSettings(mode="react", context=REMEDIES[remedy], parser="robust"),
        results_dir=work / f"local-{remedy}",
        progress=False,
        request_cache="off",
        protocol="custom",
    )
    result = await evaluate(config, out=io.StringIO())
    m = result.metrics
    return {
        "em": m["em"]["mean"],
        "n": m["n"],
        "input_tokens": sum(
            m["usage"][k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        ),
    }


def plot(rows: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for remedy, row in rows.items():
        turns = row["on"]["per_turn"]
        ax.plot(range(1, len(turns) + 1), turns, marker="o", label=remedy)
    ax.set_xlabel("step")
    ax.set_ylabel("input tokens of the turn (mean)")
    ax.set_title("Input tokens per turn, HotpotQA ReAct to 7 steps (text runner)", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def checks(rows: dict[str, Any]) -> list[dict[str, Any]]:
    """Full grows at every turn; a remedy's growth over steps 4-7 is at most half of full's."""
    full = rows["full"]["on"]["per_turn"]
    monotone = all(b > a for a, b in zip(full, full[1:], strict=False))
    out = [
        {
            "name": "full: input tokens per turn grow at every step (turn 7 - turn 1)",
            "value": round(full[-1] - full[0]),
            "goal": "> 0 at every step",
            "ok": monotone,
        }
    ]
    full_growth = full[6] - full[3]
    for remedy in ("truncate", "compact", "subagent"):
        turns = rows[remedy]["on"]["per_turn"]
        share = (turns[6] - turns[3]) / full_growth
        out.append(
            {
                "name": f"{remedy}: growth of the turn over steps 4-7 against full's",
                "value": round(share, 3),
                "goal": "<= 0.5",
                "ok": share <= 0.5,
            }
        )
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Context growth: the remedies measured",
        "",
        f"Measured {result['date']} by `python bench/bench_context.py` ({result['environment']}).",
        "HotpotQA ReAct to 7 steps, text runner, 20 questions per remedy, real SDK against the project's",
        f"Messages API server ({MODEL}: documented cache rules). Inner episodes and summary calls included.",
        "",
        "| remedy | input tokens per turn, steps 1-7 (caching on) | billed input / episode, on | off |",
        "| --- | --- | ---: | ---: |",
    ]
    for remedy, row in result["rows"].items():
        turns = ", ".join(f"{t:.0f}" for t in row["on"]["per_turn"])
        lines.append(
            f"| {remedy} | {turns} | {row['on']['billed_per_episode']:.0f} | {row['off']['billed_per_episode']:.0f} |"
        )
    if result.get("local"):
        head = f"Embedded local model (SmolLM2-135M, {result['local_n']} questions each; its scores mean nothing):"
        lines += ["", head, "", "| remedy | EM | input tokens |", "| --- | ---: | ---: |"]
        lines += [f"| {k} | {100 * v['em']:.1f} | {v['input_tokens']} |" for k, v in result["local"].items()]
    lines += [
        "",
        "![tokens per turn](context.png)",
        "",
        "## Checks",
        "",
        "| check | value | goal | ok |",
        "| --- | ---: | --- | --- |",
    ]
    lines += [f"| {c['name']} | {c['value']} | {c['goal']} | {'yes' if c['ok'] else 'NO'} |" for c in result["checks"]]
    lines += [
        "",
        "Truncation and compaction rewrite the prefix a prompt cache needs: compare the billed input",
        "with caching on against full's; a subagent keeps the outer prompt short but pays for its inner",
        "episodes.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=REPO / "results" / "bench")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/react-bench-bench-context"))
    parser.add_argument("--local-n", type=int, default=20)
    args = parser.parse_args(argv)
    os.environ.setdefault(KEY_ENV, "bench-key-not-real")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    load_titles()
    rows: dict[str, Any] = {}
    for remedy in REMEDIES:
        rows[remedy] = {c: asyncio.run(measure(remedy, c == "on", 20, args.work_dir)) for c in ("on", "off")}
        print(remedy, [round(t) for t in rows[remedy]["on"]["per_turn"]], flush=True)
    result: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "rows": rows,
        "local_n": args.local_n,
        "environment": f"Python {platform.python_version()}, {os.cpu_count()} cores",
    }
    if args.local_n:
        result["local"] = {r: asyncio.run(local(r, args.local_n, args.work_dir)) for r in REMEDIES}
    result["checks"] = checks(rows)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    plot(rows, args.out_dir / "context.png")
    (args.out_dir / "context.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out_dir / "context.md").write_text(render(result))
    print(render(result))
    return 0 if all(c["ok"] for c in result["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
