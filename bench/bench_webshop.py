"""WebShop on the project's own server: page latency, the client's render time, the whole step.

    python bench/bench_webshop.py            # measures, writes results/bench/webshop.{json,md}
    python bench/bench_webshop.py --render   # the page again from the stored JSON

The oracle's episodes (search the goal's words, open the product, choose its options, buy) on
the first ``--goals`` goals of the default catalog (2,000 products), through ``WebShopEnv``
against the server on 127.0.0.1 in its own process (so the client's figures are its own): for
every step, the server's page time (the HTTP round trip), the render time (BeautifulSoup and the
notebook's rules) and the whole step. Also the catalog's generation time. Goal: a whole step
<= 5 ms (median) on the offline server.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import check, checks_markdown, environment, environment_line, percentile, render_stored, write_results

NAME = "webshop"


def _serve(conn: Any) -> None:
    from react_bench.envs.webshop.catalog import Catalog
    from react_bench.envs.webshop.server import WebShopServer

    server = WebShopServer(Catalog.generate()).start()
    conn.send(server.url)
    conn.recv()  # until told to stop
    server.stop()


async def _episodes(url: str, goals: int) -> dict[str, list[float]]:
    import react_bench.envs.webshop.env as env_module
    from react_bench.environment import Example
    from react_bench.envs.webshop.catalog import Catalog, oracle_actions
    from react_bench.envs.webshop.env import WebShopFactory, webshop_action

    times: dict[str, list[float]] = {"get_ms": [], "render_ms": [], "step_ms": []}
    real_render = env_module.render

    def timed_render(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real_render(*args, **kwargs)
        finally:
            times["render_ms"].append(1000 * (time.perf_counter() - start))

    env_module.render = timed_render
    factory = WebShopFactory(url)
    real_get = factory.client.get

    def timed_get(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return real_get(*args, **kwargs)
        finally:
            times["get_ms"].append(1000 * (time.perf_counter() - start))

    factory.client.get = timed_get  # type: ignore[method-assign]
    catalog = Catalog.generate()
    for goal in catalog.goals[:goals]:
        env = factory()
        await env.reset(Example(goal.session, goal.instruction, ""))
        for text in oracle_actions(goal):
            start = time.perf_counter()
            observation = await env.step(webshop_action(text))
            times["step_ms"].append(1000 * (time.perf_counter() - start))
        assert observation.reward == 1.0, (goal.session, observation.text)
    factory.close()
    env_module.render = real_render
    return times


def measure(goals: int) -> dict[str, Any]:
    from react_bench.envs.webshop.catalog import _generate

    start = time.perf_counter()
    _generate(1, 2000, 500)  # a fresh seed: not the cached default
    generate_s = time.perf_counter() - start
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(child,), daemon=True)
    process.start()
    url = parent.recv()
    try:
        times = asyncio.run(_episodes(url, goals))
    finally:
        parent.send("stop")
        process.join(timeout=30)
    summary = {
        k: {"p50": round(percentile(v, 50), 3), "p90": round(percentile(v, 90), 3), "n": len(v)}
        for k, v in times.items()
    }
    return {
        "goals": goals,
        "catalog": {"products": 2000, "goals": 500, "generate_s": round(generate_s, 3)},
        "times": summary,
        "environment": environment(),
    }


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    step = result["times"]["step_ms"]["p50"]
    render = result["times"]["render_ms"]["p50"]
    return [
        check("whole step (HTTP + render), median ms", step, "<= 5", step <= 5),
        check("client render time per page, median ms", render, "<= 5", render <= 5),
    ]


def render_page(result: dict[str, Any]) -> str:
    t = result["times"]
    lines = [
        "# WebShop on the project's own server",
        "",
        "The oracle's episodes on the first "
        f"{result['goals']} goals of the default catalog (2,000 products), client in this process, server in "
        "its own (`python bench/bench_webshop.py`). Every episode bought the goal with reward 1.",
        "",
        "| per step | median ms | p90 ms | samples |",
        "|---|---|---|---|",
        f"| server page (HTTP round trip) | {t['get_ms']['p50']} | {t['get_ms']['p90']} | {t['get_ms']['n']} |",
        f"| client render (BeautifulSoup, the notebook's rules) | {t['render_ms']['p50']} | {t['render_ms']['p90']} | "
        f"{t['render_ms']['n']} |",
        f"| whole step (`WebShopEnv.step`) | {t['step_ms']['p50']} | {t['step_ms']['p90']} | {t['step_ms']['n']} |",
        "",
        f"Generating the catalog (2,000 products, 500 goals, each checked findable): "
        f"{result['catalog']['generate_s']} s.",
        "",
        *checks_markdown(result["checks"]),
        "",
        environment_line(result["environment"]),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--goals", type=int, default=200)
    parser.add_argument("--render", action="store_true", help="rewrite the page from the stored JSON")
    args = parser.parse_args()
    if args.render:
        return render_stored(NAME, checks_of, render_page)
    result = measure(args.goals)
    result["checks"] = checks_of(result)
    write_results(NAME, result, render_page(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
