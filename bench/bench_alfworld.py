"""ALFWorld on the real text engine: game build rate, reset and step time, the harness's share.

    python bench/bench_alfworld.py            # measures, writes results/bench/alfworld.{json,md}
    python bench/bench_alfworld.py --render   # the page again from the stored JSON

- build rate: generated games kept per minute (each checked by the package's expert), for a seed
  no cache holds, with one worker process per CPU;
- reset: ``ALFWorldEnv.reset`` of each generated eval game in a fresh process (the game's PDDL
  translation read from the cache that generation filled; the engine loaded anew);
- step: the expert's walkthrough of each game through ``ALFWorldEnv.step``;
- harness share: a 50-step episode (the text runner, a scripted model answering at once) with the
  model's time counted as 1 s a call: (the harness's own time) / (harness + engine + 50 s).
Goals: reset <= 1 s (median), step <= 50 ms (median), harness share <= 1%.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import check, checks_markdown, environment, environment_line, percentile, render_stored, write_results

NAME = "alfworld"
GAMES = 24


def _timed_episodes(config: dict[str, Any]) -> dict[str, list[float]]:
    """In a fresh process: reset and step times over the eval games (printed as JSON)."""
    code = f"""
import asyncio, json, time
from react_bench.envs.alfworld.env import ALFWorldFactory, alfworld_action
from react_bench.tasks import TaskConfig
from react_bench.tasks.alfworld import AlfworldConfig, AlfworldTask
games = AlfworldTask().examples(TaskConfig(name="alfworld"), AlfworldConfig(**{config!r}))
out = {{"reset_s": [], "step_ms": []}}
async def main():
    for example in games:
        env = ALFWorldFactory()()
        start = time.perf_counter(); await env.reset(example); out["reset_s"].append(time.perf_counter() - start)
        for command in json.load(open(example.metadata["gamefile"]))["walkthrough"]:
            start = time.perf_counter(); obs = await env.step(alfworld_action(command))
            out["step_ms"].append(1000 * (time.perf_counter() - start))
        assert obs.reward == 1.0
        env.close()
asyncio.run(main())
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _build_rate(work: Path) -> dict[str, float]:
    from react_bench.envs.alfworld.generate import generate_split

    start = time.perf_counter()
    kept = generate_split(work, "valid_unseen", 12, seed=9, progress=False)
    seconds = time.perf_counter() - start
    return {"games": kept, "seconds": round(seconds, 1), "games_per_minute": round(60 * kept / seconds, 1)}


def _harness_share(config: dict[str, Any], work: Path) -> dict[str, float]:
    """A 50-step text-runner episode against the first eval game, a scripted model, timed."""
    import react_bench.envs.alfworld.env as env_module
    from react_bench.evaluate import evaluate
    from react_bench.loop import LoopConfig
    from react_bench.methods.core import SolveSettings
    from react_bench.models import ModelSpec
    from react_bench.models.scripted import ScriptedModel
    from react_bench.runconfig import RunConfig
    from react_bench.tasks import TaskConfig
    from react_bench.tasks.alfworld import AlfworldConfig

    engine = {"step": 0.0, "reset": 0.0}
    step, reset = env_module.Game.step, env_module.Game.reset

    def timed_step(self: Any, command: str) -> Any:
        start = time.perf_counter()
        try:
            return step(self, command)
        finally:
            engine["step"] += time.perf_counter() - start

    def timed_reset(self: Any) -> Any:
        start = time.perf_counter()
        try:
            return reset(self)
        finally:
            engine["reset"] += time.perf_counter() - start

    env_module.Game.step, env_module.Game.reset = timed_step, timed_reset  # type: ignore[method-assign]
    cfg = RunConfig(
        task=TaskConfig(name="alfworld", n=1),
        model=ModelSpec.from_mapping({"provider": "scripted"}),
        solve=SolveSettings(mode="react", loop=LoopConfig(max_steps=50)),
        env=AlfworldConfig(**config),
        results_dir=work,
        progress=False,
        show="none",
        request_cache="off",
    )
    model = ScriptedModel([" look"] * 50)
    start = time.perf_counter()
    result = asyncio.run(evaluate(cfg, out=io.StringIO(), model=model))
    wall = time.perf_counter() - start
    env_module.Game.step, env_module.Game.reset = step, reset  # type: ignore[method-assign]
    assert result.metrics["mean_steps"] == 50
    harness = wall - engine["step"] - engine["reset"]
    per_step = harness / 50
    share = harness / (harness + engine["step"] + 50 * 1.0)
    figures = {
        "wall_s": wall,
        "engine_step_s": engine["step"],
        "engine_reset_s": engine["reset"],
        "harness_s": harness,
    }
    return {
        **{k: round(v, 3) for k, v in figures.items()},
        "harness_ms_per_step": round(1000 * per_step, 2),
        "share_at_1s_model": round(share, 5),
    }


def measure() -> dict[str, Any]:
    from react_bench.tasks import TaskConfig
    from react_bench.tasks.alfworld import AlfworldConfig, AlfworldTask, generated_split, own_exemplars

    config: dict[str, Any] = {"games": GAMES, "train_games": 18, "seed": 0}
    AlfworldTask().examples(TaskConfig(name="alfworld"), AlfworldConfig(**config))  # generate (once) first
    from react_bench.envs.alfworld.engine import tw_env

    start = time.perf_counter()
    tw_env()  # the engine's import: once per process, not per episode
    imported = round(time.perf_counter() - start, 3)
    cached = (generated_split(AlfworldConfig(**config), "train") / "exemplars.json").exists()
    start = time.perf_counter()
    own_exemplars(AlfworldConfig(**config))  # built once per generated set, then kept beside it
    exemplars = {"seconds": round(time.perf_counter() - start, 2), "cached": cached}
    times = _timed_episodes(config)
    with tempfile.TemporaryDirectory() as tmp:
        build = _build_rate(Path(tmp) / "build")
        harness = _harness_share(config, Path(tmp) / "runs")

    def spread(samples: list[float], digits: int) -> dict[str, float]:
        return {
            "p50": round(percentile(samples, 50), digits),
            "p90": round(percentile(samples, 90), digits),
            "n": len(samples),
        }

    return {
        "games": GAMES,
        "reset_s": spread(times["reset_s"], 3),
        "step_ms": spread(times["step_ms"], 2),
        "build": build,
        "harness": harness,
        "exemplars": exemplars,
        "engine_import_s": imported,
        "environment": environment(),
    }


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    reset, step, share = result["reset_s"]["p50"], result["step_ms"]["p50"], result["harness"]["share_at_1s_model"]
    return [
        check("reset, median s", reset, "<= 1", reset <= 1),
        check("step, median ms", step, "<= 50", step <= 50),
        check("harness share of a 50-step episode with a 1 s model", share, "<= 0.01", share <= 0.01),
    ]


def render_page(result: dict[str, Any]) -> str:
    r, s, b, h = result["reset_s"], result["step_ms"], result["build"], result["harness"]
    lines = [
        "# ALFWorld on the real text engine",
        "",
        f"Generated games (`python bench/bench_alfworld.py`): {result['games']} eval games, each played by the "
        "package's expert to its win.",
        "",
        "| figure | median | p90 | samples |",
        "|---|---|---|---|",
        f"| reset (fresh process, translation cached), s | {r['p50']} | {r['p90']} | {r['n']} |",
        f"| step (the expert's commands), ms | {s['p50']} | {s['p90']} | {s['n']} |",
        "",
        f"Game build rate: {b['games']} games kept in {b['seconds']} s ({b['games_per_minute']} per minute; each "
        "checked by the expert, one worker per CPU).",
        "",
        f"A 50-step episode (text runner, scripted model, the engine imported before: "
        f"{result.get('engine_import_s', '?')} s once per process): {h['wall_s']} s in all, the engine's steps "
        f"{h['engine_step_s']} s and reset {h['engine_reset_s']} s, the harness {h['harness_s']} s "
        f"({h['harness_ms_per_step']} ms a step): with 1 s per model call the harness is "
        f"{100 * h['share_at_1s_model']:.2f}% of the episode.",
        "",
        f"Our exemplars (36 expert episodes on the train games, once per generated set, then read from "
        f"`exemplars.json`): {result['exemplars']['seconds']} s "
        f"({'read back' if result['exemplars']['cached'] else 'built in this run'}), before the episode is timed.",
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
