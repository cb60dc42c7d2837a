"""The project's own WebShop exemplar: one episode of the generated catalog's training goals,
walked through the project's own server and renderer, so every observation is what the
environment shows; the thoughts are ours (the paper's prompt is loaded by path, never copied).

The episode: search with the goal's words, open the goal's product (the walk takes the first
training goal whose product shows among the first three results), choose the goal's options,
buy. ``react`` has a thought before choosing the product and before the options; ``act`` the
same actions without them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2

from react_bench.environment import Action, Example
from react_bench.envs.webshop.catalog import Catalog, Goal
from react_bench.envs.webshop.env import WebShopEnv
from react_bench.envs.webshop.server import Shop
from react_bench.runners.formats import LineFormat


def _client(catalog: Catalog) -> httpx2.Client:
    shop = Shop(catalog)

    def handle(request: httpx2.Request) -> httpx2.Response:
        status, body = shop.respond(request.url.raw_path.decode())
        return httpx2.Response(status, text=body, headers={"content-type": "text/html; charset=utf-8"})

    return httpx2.Client(transport=httpx2.MockTransport(handle))


def _query(goal: Goal) -> str:
    return f"{' '.join(goal.attributes)} {goal.product_type}"


async def _walk(catalog: Catalog, goal: Goal, fmt: LineFormat, thoughts: bool) -> str | None:
    env = WebShopEnv("http://shop", _client(catalog))
    first = await env.reset(Example(goal.session, goal.instruction, ""))
    text = fmt.opening(first.text)
    step = 0

    async def act(action: str) -> str:
        nonlocal text, step
        step += 1
        observation = await env.step(fmt.grammar(action, env.actions()))
        text += fmt.piece(step, action, observation.text)
        return observation.text

    results = await act(f"search[{_query(goal)}]")
    if f"[{goal.asin}]" not in results:
        return None
    product = catalog.by_asin[goal.asin]
    if thoughts:
        await act(
            f"think[{goal.asin} is a {goal.product_type} that is {' and '.join(goal.attributes)}, "
            f"at {product.price_text}, under the price limit. I will check it.]"
        )
    await act(f"click[{goal.asin}]")
    if thoughts and goal.options:
        chosen = " and ".join(f"{k} {v}" for k, v in goal.options.items())
        await act(f"think[The item fits. The instruction asks for {chosen}: I choose them, then buy.]")
    for value in goal.options.values():
        await act(f"click[{value}]")
    done = await env.step(Action("click", {"button": "Buy Now"}, "click[Buy Now]"))
    if done.reward != 1.0:
        return None
    return text + f"{fmt.marker} click[Buy Now]\n"


def _run(walk: Coroutine[Any, Any, str | None]) -> str | None:
    """Run the walk on an event loop of its own (a run prepares its prompts inside its own loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, walk).result()


@functools.lru_cache(maxsize=4)
def own_exemplars(catalog: Catalog, fmt: LineFormat) -> dict[str, str]:
    """``{"react": text, "act": text}``: the first training goal the walk buys right."""
    for goal in catalog.train_goals:
        react = _run(_walk(catalog, goal, fmt, thoughts=True))
        if react is not None:
            act = _run(_walk(catalog, goal, fmt, thoughts=False))
            assert act is not None
            return {"react": react, "act": act}
    raise RuntimeError("no training goal of the generated catalog could be walked (a generator bug)")
