"""Benchmark the embedded model on a 7-step ReAct episode, with and without KV prefix reuse.

    python bench/bench_local.py [--model smollm2-135m] [--repeats 2] [--out results/bench]

The episode is HotpotQA-shaped: the paper's HotpotQA ReAct prompt (``webthink_simple6``,
loaded by path from the offline data, never copied) and a dev question from the offline
distractor set; at each step the model writes ``Thought i / Action i`` (greedy, at most 100
tokens, stop ``\\nObservation i:``) and a scripted observation follows: the first five
sentences of the question's context paragraphs in turn, as ``search`` would return them. So
the prompt only grows, as in a real episode.

The episode is run first with KV reuse (the default); the exact prompts it produced are then
replayed with a reset context before every step, so both modes do the same work. Each mode
runs ``--repeats`` times; per-step figures are medians. Timings come from the client
(``LocalModel.last_stats``): prompt time is until the first generated token. Writes
``local.json`` (everything) and ``local.md`` (tables) under ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path

from react_bench.models.base import ModelRequest, generate
from react_bench.models.local import LocalConfig, LocalModel
from react_bench.types import TextBlock

REPO = Path(__file__).resolve().parents[1]
STEPS = 7
INSTRUCTION = (
    "Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason "
    "about the current situation, and Action can be three types: Search[entity], Lookup[keyword], Finish[answer].\n"
    "Here are some examples.\n"
)


def data_dir() -> Path:
    env = os.environ.get("REACT_BENCH_DATA_DIR")
    for candidate in ([Path(env)] if env else []) + [REPO / "data", REPO.parent / "shared" / "data"]:
        if candidate.is_dir():
            return candidate
    sys.exit("the offline data is missing: put ../shared/data beside the repo or set REACT_BENCH_DATA_DIR")


def episode_material(data: Path) -> tuple[str, list[str], str]:
    """(prompt up to ``Thought 1:``, one observation per step, where the prompt came from)."""
    prompt_file = data / "prompts" / "react_hotpotqa_prompts.json"
    exemplars = json.loads(prompt_file.read_text())["webthink_simple6"]
    example = json.loads((data / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())[0]
    observations = [" ".join(sentences[:5]).strip() for _title, sentences in example["context"]]
    prompt = f"{INSTRUCTION}{exemplars}\nQuestion: {example['question']}\nThought 1:"
    return prompt, (observations * STEPS)[:STEPS], f"{prompt_file.name}#webthink_simple6 + dev {example['_id']}"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def run_step(model: LocalModel, prompt: str, step: int) -> tuple[str, dict[str, float]]:
    request = ModelRequest(prompt=prompt, max_tokens=100, temperature=0.0, stop=(f"\nObservation {step}:",))
    started = time.perf_counter()
    response = await generate(model, request)
    latency = time.perf_counter() - started
    stats = model.last_stats
    assert stats is not None
    text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
    return text, {"step": step, **asdict(stats), "latency_seconds": latency}


async def reuse_episode(
    model: LocalModel, prompt: str, observations: list[str]
) -> tuple[list[str], list[str], list[dict]]:
    prompts, texts, rows = [], [], []
    for step in range(1, STEPS + 1):
        prompts.append(prompt)
        text, row = await run_step(model, prompt, step)
        texts.append(text)
        rows.append(row)
        prompt += f"{text}\nObservation {step}: {observations[step - 1]}\nThought {step + 1}:"
    return prompts, texts, rows


async def replay(model: LocalModel, prompts: list[str]) -> tuple[list[str], list[dict]]:
    done = [await run_step(model, p, step) for step, p in enumerate(prompts, start=1)]
    return [text for text, _ in done], [row for _, row in done]


def middle(values: list) -> float:
    """The median; of counts, one that was seen (they are the same in every run anyway)."""
    if all(isinstance(v, int) for v in values):
        return statistics.median_low(values)
    return round(statistics.median(values), 3)


def medians(runs: list[list[dict]]) -> list[dict]:
    return [{key: middle([run[i][key] for run in runs]) for key in runs[0][i]} for i in range(STEPS)]


def aggregate(result: dict) -> dict:
    """Per-step medians and the summary, from the raw runs (also used by --render)."""
    with_reuse, without = medians(result["runs"]["kv_reuse"]), medians(result["runs"]["no_reuse"])
    result["episode"] |= {
        "first_prompt_tokens": with_reuse[0]["prompt_tokens"],
        "last_prompt_tokens": with_reuse[-1]["prompt_tokens"],
    }
    result["summary"] = {
        mode: {key: middle([summary(run)[key] for run in runs]) for key in summary(runs[0])}
        for mode, runs in result["runs"].items()
    }
    result["steps_median"] = {"kv_reuse": with_reuse, "no_reuse": without}
    result["checks"] = checks(result)
    return result


def checks(result: dict) -> list[dict]:
    """What this benchmark claims (issue 6): KV prefix reuse makes a ReAct episode cheaper."""
    reuse, fresh = result["summary"]["kv_reuse"], result["summary"]["no_reuse"]
    speedup = round(fresh["episode_seconds"] / reuse["episode_seconds"], 2)
    share = round(reuse["prompt_tokens_evaluated"] / fresh["prompt_tokens_evaluated"], 3)
    return [
        {"name": "7-step episode: time without reuse / with reuse", "value": speedup, "goal": "> 1", "ok": speedup > 1},
        {"name": "prompt tokens evaluated with reuse / without", "value": share, "goal": "< 0.5", "ok": share < 0.5},
    ]


def summary(steps: list[dict]) -> dict[str, float]:
    evaluated = sum(s["prompt_tokens"] - s["reused_tokens"] for s in steps)
    prompt_s = sum(s["prompt_seconds"] for s in steps)
    generated = sum(s["output_tokens"] - 1 for s in steps)  # the first token is timed with the prompt
    gen_s = sum(s["generation_seconds"] for s in steps)
    return {
        "episode_seconds": round(sum(s["latency_seconds"] for s in steps), 3),
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_per_second": round(evaluated / prompt_s, 1),
        "generated_tokens": sum(s["output_tokens"] for s in steps),
        "generation_tokens_per_second": round(generated / gen_s, 1) if gen_s else float("nan"),
    }


async def bench(args: argparse.Namespace) -> dict:
    prompt, observations, source = episode_material(data_dir())
    rss_before = rss_mb()
    started = time.perf_counter()
    reuse = LocalModel(LocalConfig(name=args.model))
    load_seconds = time.perf_counter() - started
    fresh = LocalModel(LocalConfig(name=args.model, kv_reuse=False))  # the same loaded model
    load_avg_start = os.getloadavg()
    reuse_runs, fresh_runs, same_outputs = [], [], True
    for _ in range(args.repeats):
        reuse.engine.llama.reset()  # every repeat starts cold
        prompts, texts, rows = await reuse_episode(reuse, prompt, observations)
        fresh_texts, fresh_rows = await replay(fresh, prompts)
        reuse_runs.append(rows)
        fresh_runs.append(fresh_rows)
        same_outputs = same_outputs and texts == fresh_texts
    engine = reuse.engine
    return aggregate(
        {
            "machine": {
                "cpu": platform.processor() or platform.machine(),
                "cores": os.cpu_count(),
                "load_average_1m": [round(load_avg_start[0], 2), round(os.getloadavg()[0], 2)],
            },
            "model": {
                "name": args.model,
                "file": Path(engine.path).name,
                "size_mb": round(Path(engine.path).stat().st_size / 2**20, 1),
                "load_seconds": round(load_seconds, 3),
            },
            "settings": {
                "n_ctx": reuse.config.n_ctx,
                "n_threads": reuse.config.n_threads or os.cpu_count(),
                "n_threads_batch": reuse.config.n_threads_batch or os.cpu_count(),
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                "flash_attn": reuse.config.flash_attn,
                "max_tokens": 100,
                "temperature": 0.0,
                "llama_cpp_python": _llama_version(),
                "repeats": args.repeats,
            },
            "episode": {
                "prompt_source": source,
                "steps": STEPS,
            },
            "same_outputs_both_modes": same_outputs,  # greedy text identical with and without reuse
            "memory_mb": {
                "rss_before_load": round(rss_before, 1),
                "rss_end": round(rss_mb(), 1),
                "peak_rss": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            },
            "runs": {"kv_reuse": reuse_runs, "no_reuse": fresh_runs},
        }
    )


def _llama_version() -> str:
    import llama_cpp

    return llama_cpp.__version__


def checks_table(result: dict) -> list[str]:
    rows = ["", "## Checks", "", "| check | value | goal | ok |", "| --- | ---: | --- | --- |"]
    return rows + [
        f"| {c['name']} | {c['value']} | {c['goal']} | {'yes' if c['ok'] else 'NO'} |" for c in result["checks"]
    ]


def markdown(result: dict) -> str:
    s, m, e = result["settings"], result["model"], result["episode"]
    machine = result["machine"]
    header = (
        f"Model `{m['file']}` ({m['size_mb']} MB, loaded in {m['load_seconds']} s), llama-cpp-python "
        f"{s['llama_cpp_python']}, n_ctx {s['n_ctx']}, {s['n_threads']} threads ({s['n_threads_batch']} for prompts, "
        f"OMP_WAIT_POLICY={s['omp_wait_policy']}), flash_attn {s['flash_attn']}, "
        f"greedy, at most {s['max_tokens']} tokens per step. Machine: {machine['cores']} cores ({machine['cpu']}), "
        f"1-min load average {machine['load_average_1m']} at start and end (a shared machine)."
    )
    episode = (
        f"Prompt: {e['prompt_source']}, {e['first_prompt_tokens']} tokens at step 1, "
        f"{e['last_prompt_tokens']} at step {e['steps']}. Medians of {s['repeats']} runs; both modes see the same "
        f"prompts (generated text identical in both: {result['same_outputs_both_modes']})."
    )
    lines = [
        "# Embedded model: a 7-step ReAct episode with and without KV prefix reuse",
        "",
        header,
        "",
        episode,
        "",
        "| step | prompt tokens | reused | evaluated | generated (reuse / no reuse) | latency, reuse (s) | "
        + "latency, no reuse (s) | speed-up |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r, f in zip(result["steps_median"]["kv_reuse"], result["steps_median"]["no_reuse"], strict=True):
        lines.append(
            f"| {r['step']} | {r['prompt_tokens']:.0f} | {r['reused_tokens']:.0f} | "
            f"{r['prompt_tokens'] - r['reused_tokens']:.0f} | {r['output_tokens']:.0f} / {f['output_tokens']:.0f} | "
            f"{r['latency_seconds']:.2f} | "
            f"{f['latency_seconds']:.2f} | {f['latency_seconds'] / r['latency_seconds']:.1f}x |"
        )
    lines += [
        "",
        "| mode | episode (s) | prompt tokens evaluated | prompt tok/s | generated tokens | generation tok/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode, label in (("kv_reuse", "KV prefix reuse"), ("no_reuse", "fresh context each step")):
        t = result["summary"][mode]
        lines.append(
            f"| {label} | {t['episode_seconds']} | {t['prompt_tokens_evaluated']} | {t['prompt_tokens_per_second']} | "
            f"{t['generated_tokens']} | {t['generation_tokens_per_second']} |"
        )
    mem = result["memory_mb"]
    lines += ["", f"Memory (RSS): {mem['rss_before_load']} MB before loading the model, peak {mem['peak_rss']} MB."]
    return "\n".join([*lines, *checks_table(result), ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "bench")
    parser.add_argument("--render", action="store_true", help="only rebuild local.md from --out/local.json's runs")
    args = parser.parse_args()
    if args.render:
        result = aggregate(json.loads((args.out / "local.json").read_text()))
    else:
        result = asyncio.run(bench(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "local.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "local.md").write_text(markdown(result))
    print(markdown(result))
    print(f"wrote {args.out / 'local.json'} and {args.out / 'local.md'}")


if __name__ == "__main__":
    main()
