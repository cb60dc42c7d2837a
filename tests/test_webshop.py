"""WebShop: the page renderer, the reward formula, the project's server and the client, end to end.

The oracle (search the goal's words, open the goal's product, choose its options, buy) gets
reward 1 on every generated goal through both runners; a shopper that buys the first result
gets what the formula gives; a server that is down or answers 500 ends the example as an error
(re-runnable), a page that cannot be read is an ``is_error`` observation, an unknown button is
``Invalid action!``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from react_bench.environment import Action, Example
from react_bench.envs.webshop import WebShopConfig, webshop_format
from react_bench.envs.webshop.catalog import Catalog, Goal, Product, goal_query, oracle_actions
from react_bench.envs.webshop.env import INVALID, WebShopFactory, webshop_action
from react_bench.envs.webshop.render import render
from react_bench.envs.webshop.reward import fallback_nouns, reward
from react_bench.envs.webshop.server import WebShopServer
from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.types import ModelResponse, StopReason, TextBlock, ToolUseBlock
from tests.support import REPO, composed, eval_py, records, run_dir_of

SMALL = WebShopConfig(products=300, goals=40)


@pytest.fixture(scope="module")
def small() -> Catalog:
    return Catalog.generate(SMALL.seed, SMALL.products, SMALL.goals)


# --------------------------------------------------------------------------- the renderer

PAGE = """<html><head><title>ignored</title><style>p { color: red }</style></head><body>
<div><h4>Instruction:<br>buy a red mug</h4></div>
<form><button type="submit">Back to Search</button></form>
<script>var hidden = 1;</script><!-- a comment -->
<div><h4>color</h4><input type="radio"><label>red</label><input type="radio"><label>blue</label></div>
<div><h4>size</h4><label>small</label><label>large</label></div>
<h2>Red Mug \\xc3\\xa9</h2><h4>Price: $9.99</h4>
<a class="product-link" href="#">B0AAAAAAA1</a><h4>First</h4><h5>$1.00</h5>
<a class="product-link" href="#">B0AAAAAAA2</a><h4>Second</h4><h5>$2.00</h5>
<a class="product-link" href="#">B0AAAAAAA3</a><h4>Third</h4><h5>$3.00</h5>
<a class="product-link" href="#">B0AAAAAAA4</a><h4>Fourth</h4><h5>$4.00</h5>
<p>after the results</p>
</body></html>"""


def test_a_page_reads_as_the_notebook_read_it() -> None:
    page = render(PAGE, "http://shop/item_page/s/B0/mug/1/{'color': 'red'}")
    assert page.text == (
        "\n[Back to Search] "  # the first two plain texts (Instruction:, the instruction) are left out
        "\ncolor [[red]][blue]"  # the URL selects red
        "\nsize [small][large]"
        "\nRed Mug é "  # the notebook's clean_str decodes escaped UTF-8 bytes
        "\nPrice: $9.99 "
        "\n[B0AAAAAAA1] \nFirst \n$1.00 "
        "\n[B0AAAAAAA2] \nSecond \n$2.00 "
        "\n[B0AAAAAAA3] \nThird \n$3.00 "  # a fourth result: its ASIN, title and price are left out
        "\nafter the results "
    )
    assert page.asins == ["B0AAAAAAA1", "B0AAAAAAA2", "B0AAAAAAA3", "B0AAAAAAA4"]  # all four clickable
    assert page.options == {"red": "color", "blue": "color", "small": "size", "large": "size"}
    assert page.buttons == ["Back to Search"] and page.reward is None
    first = render(PAGE, "http://shop/s", first_page=True)
    assert first.text.startswith("\nInstruction: \nbuy a red mug \n[Back to Search] ")


def test_the_project_server_renders_like_webshop(small: Catalog) -> None:
    """A results page of the project's own server, through the same renderer, as the rules say it reads."""
    from react_bench.envs.webshop.server import Shop

    shop, goal = Shop(small), small.goals[0]
    status, html = shop.respond(f"/search_results/{goal.session}/{goal_query(goal).replace(' ', '%20')}/1")
    assert status == 200
    found = shop.engine.search(goal_query(goal))
    lines = "".join(f"\n[{p.asin}] \n{p.title} \n{p.price_text} " for p in found[:3])
    assert render(html, "u").text == f"\n[Back to Search] \nPage 1 (Total results: {len(found)}) \n[Next >] {lines}"
    status, start = shop.respond(f"/{goal.session}")
    assert render(start, "u", first_page=True).text == f"\nWebShop \nInstruction:  \n{goal.instruction} \n[Search] "


def test_the_grammar_is_the_notebooks() -> None:
    assert webshop_action("search[red mug]") == Action("search", {"query": "red mug"}, "search[red mug]")
    assert webshop_action("click[Buy Now]").arguments == {"button": "Buy Now"}
    assert webshop_action("think[a thought cut short").name == "think"  # any "think..." is answered OK.
    assert webshop_action("search[red mug").arguments == {"query": "red mu"}  # the last character is dropped
    assert webshop_action("Search[red mug]").name == ""  # case matters; it is an invalid action


def test_the_done_page_gives_the_score() -> None:
    done = "<html><body><h3>Your score (min 0.0, max 1.0)<pre>0.75</pre></h3><p>thanks</p></body></html>"
    page = render(done, "u")
    assert (page.text, page.reward) == ("Your score (min 0.0, max 1.0): 0.75", 0.75)


# --------------------------------------------------------------------------- the reward

MUG = Product(
    "B0MUG00001",
    "Acme Coffee Mug - Dishwasher Safe, Bpa Free",
    "kitchen",
    "coffee mug",
    12.99,
    ("dishwasher safe", "bpa free"),
    {"color": ("red", "blue"), "size": ("12 oz", "16 oz")},
    "A mug that keeps coffee hot.",
    ("Microwave safe: made for everyday use.",),
)


def goal(**changes: Any) -> Goal:
    base = {
        "session": "fixed_0",
        "asin": MUG.asin,
        "product_type": "coffee mug",
        "category": "kitchen",
        "attributes": ("dishwasher safe", "microwave safe"),
        "options": {"color": "red", "size": "16 oz"},
        "price_upper": 20.0,
        "name": MUG.title,
        "query": MUG.query,
        "product_category": MUG.product_category,
    }
    return Goal(**{**base, **changes})


def other(name: str, category: str = "fitness", kind: str = "yoga mat") -> dict[str, Any]:
    """A goal for another product: its name, query and breadcrumb (the type score's inputs)."""
    return {"name": name, "query": kind, "product_category": f"Sports & Outdoors › {category.title()} › {kind.title()}"}


# Each expected value worked by hand from WebShop's formula (reward.py's docstring): r_type x
# (attributes + options + price) / (goal attributes + goal options + 1). The MUG's nouns (the
# fallback's): acme coffee mug dishwasher safe bpa free. Token-set ratios, by hand: "12 count" /
# "24 count" 88, "pack of 3" / "pack of 12" 88 (87.5), "large" / "x-large" 100 (all > 85: a match),
# "microwave safe" / "dishwasher safe" 62 (no match: the features' text matches it instead).
@pytest.mark.parametrize(
    ("the_goal", "options", "expected"),
    [
        (goal(), {"color": "red", "size": "16 oz"}, 1.0),  # both attributes (one from the features), options, price
        (goal(), {}, 3 / 5),  # no option chosen: 2 attributes + price of 5
        (goal(), {"color": "blue", "size": "16 oz"}, 4 / 5),
        (goal(price_upper=10.0), {"color": "red", "size": "16 oz"}, 4 / 5),  # over the price bound
        (goal(attributes=("dishwasher safe", "stainless steel")), {"color": "red", "size": "16 oz"}, 4 / 5),
        (goal(attributes=("dishwasher-safe",)), {"color": "red", "size": "16 oz"}, 1.0),  # fuzzy: ratio 100
        (goal(options={"color": "rose gold"}), {"color": "gold"}, 1.0),  # both "gold" in WebShop's colour form
        (goal(options={"color": "heather gray"}), {"color": "gray"}, 1.0),  # "gray" precedes "heather"
        (goal(options={"count": "12 count"}), {"count": "24 count"}, 1.0),  # ratio 88 > 85
        (goal(options={"count": "pack of 3"}), {"count": "pack of 12"}, 1.0),  # ratio 88 > 85
        (goal(options={"size": "large"}), {"size": "x-large"}, 1.0),  # ratio 100
        (goal(options={"flavor": "sea salt"}), {"flavor": "teriyaki"}, 3 / 4),  # no match
        # the type score: another product's name; 1/7 of its nouns shared (acme): 0.5 (no query, no breadcrumb)
        (goal(**other("Acme Yoga Mat - Non Slip, Extra Thick")), {"color": "red", "size": "16 oz"}, 0.5),
        # 1/12 shared: below 0.1, so 0.1
        (goal(**other("Acme Yoga Mat Pro Max - Non Slip, Extra Thick, Eco Friendly, Portable")), {}, 0.1 * 3 / 5),
        (goal(**other("Zenith Yoga Mat - Non Slip")), {"color": "red", "size": "16 oz"}, 0.0),  # none shared
        # the same breadcrumb's category (two parts) but no noun shared: title_score 0 makes it 0 all the same
        (
            goal(
                name="Zenith Chef Knife - Stainless Steel",
                query="chef knife",
                product_category="Home & Kitchen › Kitchen › Chef Knife",
            ),
            {"color": "red", "size": "16 oz"},
            0.0,
        ),
        # 3 of 6 nouns shared (acme, dishwasher, safe) and the same breadcrumb: 1
        (
            goal(
                name="Acme Mixing Bowl Set - Dishwasher Safe",
                query="mixing bowl set",
                product_category="Home & Kitchen › Kitchen › Mixing Bowl Set",
            ),
            {"color": "red", "size": "16 oz"},
            1.0,
        ),
        (goal(options={}), {}, 1.0),  # a goal without options
    ],
)
def test_the_reward_is_webshops(the_goal: Goal, options: dict[str, str], expected: float) -> None:
    assert reward(MUG, the_goal, options, noun_of=fallback_nouns).total == pytest.approx(expected)


def test_the_nouns_come_from_spacy_when_its_model_is_installed_else_from_the_fallback(monkeypatch) -> None:
    import react_bench.envs.webshop.reward as module

    assert fallback_nouns("Copperleaf Wireless Mouse G367 - Usb-C, For Small Hands") == [
        "copperleaf",
        "wireless",
        "mouse",
        "g367",
        "usb",
        "c",
        "small",
        "hands",
    ]
    module._spacy.cache_clear()
    module.nouns.cache_clear()
    monkeypatch.setitem(sys.modules, "spacy", None)  # not installed: the fallback, said as such
    try:
        assert module.noun_backend() == "fallback" and module.nouns("Acme Coffee Mug") == ("acme", "coffee", "mug")
    finally:
        module._spacy.cache_clear()
        module.nouns.cache_clear()


def test_the_catalog_is_deterministic_and_every_goal_can_be_found() -> None:
    a, b = Catalog.generate(3, 200, 20), Catalog.generate(3, 200, 20)
    assert [g.instruction for g in a.goals] == [g.instruction for g in b.goals]
    assert [p.asin for p in a.products] == [p.asin for p in b.products]
    assert [g.instruction for g in Catalog.generate(4, 200, 20).goals] != [g.instruction for g in a.goals]
    assert len({p.asin for p in a.products}) == 200
    default = Catalog.generate()
    assert len(default.products) == 2000 and len(default.goals) == 500
    assert len({p.category for p in default.products}) >= 24
    from react_bench.envs.webshop.catalog import Search

    engine = Search(default.products)
    for g in default.goals:
        product = default.by_asin[g.asin]
        assert set(g.attributes) <= set(product.attributes) and g.price_upper >= product.price
        assert all(v in product.options[k] for k, v in g.options.items())
        assert g.asin in [p.asin for p in engine.search(goal_query(g), 10)]  # on the first page of its own words
        assert g.instruction.endswith(f"price lower than {g.price_upper:.2f} dollars")


# --------------------------------------------------------------------------- runs


def as_tool_turns(actions: list[str]) -> list[ModelResponse]:
    turns = []
    for i, text in enumerate(actions):
        action = webshop_action(text)
        block = ToolUseBlock(f"toolu_{i}", action.name, dict(action.arguments))
        turns.append(ModelResponse((TextBlock("next"), block), StopReason.TOOL_USE))
    return turns


def run_config(tmp_path: Path, runner: str, env: WebShopConfig = SMALL, **task: Any) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="webshop", **task),
        model={"provider": "scripted", "label": "shopper"},
        solve=SolveSettings(mode="react", runner=runner),
        env=env,
        results_dir=tmp_path,
        progress=False,
        run_id=runner,
    )


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_oracle_buys_right_on_every_goal(scripted: Any, small: Catalog, tmp_path: Path, runner: str) -> None:
    actions = [a for g in small.goals for a in oracle_actions(g)]
    model = scripted([f" {a}" for a in actions] if runner == "text" else as_tool_turns(actions))
    result = await evaluate(run_config(tmp_path, runner), model=model)
    rows = records(result.run_dir)
    assert [r["id"] for r in rows] == [g.session for g in small.goals]
    assert all((r["reward"], r["reason"], r["success"]) == (1.0, "done", 1.0) for r in rows), rows[0]
    assert result.metrics["score"]["mean"] == 1.0 and result.metrics["success"]["mean"] == 1.0
    assert rows[0]["question"] == small.goals[0].instruction


@pytest.mark.slow
@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_oracle_buys_right_on_all_500_default_goals(scripted: Any, tmp_path: Path, runner: str) -> None:
    catalog = Catalog.generate()
    actions = [a for g in catalog.goals for a in oracle_actions(g)]
    model = scripted([f" {a}" for a in actions] if runner == "text" else as_tool_turns(actions))
    result = await evaluate(run_config(tmp_path, runner, WebShopConfig()), model=model)
    assert result.metrics["n"] == 500 and result.metrics["success"]["mean"] == 1.0


async def test_buying_the_first_result_gets_what_the_formula_gives(scripted: Any, small: Catalog, tmp_path: Path):
    from react_bench.envs.webshop.catalog import Search

    engine, chosen = Search(small.products), small.goals[:10]
    actions, expected = [], []
    for g in chosen:
        first = engine.search(goal_query(g))[0]
        actions += [f" search[{goal_query(g)}]", f" click[{first.asin}]", " click[Buy Now]"]
        expected.append(reward(first, g, {}).total)
    result = await evaluate(run_config(tmp_path, "text", n=10), model=scripted(actions))
    assert [r["reward"] for r in records(result.run_dir)] == pytest.approx(expected)
    assert result.metrics["score"]["mean"] == pytest.approx(sum(expected) / 10)


# --------------------------------------------------------------------------- faults


async def _episode(factory: WebShopFactory, session: str, actions: list[str]) -> list[Any]:
    env = factory()
    out = [await env.reset(Example(session, "", ""))]
    for text in actions:
        out.append(await env.step(webshop_action(text)))
    return out


async def test_actions_the_page_does_not_offer_are_invalid(small: Catalog) -> None:
    g = small.goals[1]
    with WebShopServer(small) as server:
        factory = WebShopFactory(server.url)
        obs = await _episode(
            factory,
            g.session,
            [
                "click[Buy Now]",  # nothing to buy on the instruction page
                "dance[now]",  # not an action
                f"search[{goal_query(g)}]",
                f"search[{goal_query(g)}]",  # search only from the instruction page
                "click[B0NOSUCH00]",  # not a result
                "click[Next >]",  # the notebook allowed the first page only
                "think[let me see]",
                f"click[{g.asin}]",
                "click[no such option]",
            ],
        )
        factory.close()
    texts = [o.text for o in obs]
    assert texts[1:3] == [INVALID, INVALID] and texts[4:7] == [INVALID, INVALID, INVALID]
    assert texts[7] == "OK." and texts[9] == INVALID and texts[8].startswith("\n[Back to Search] \n[< Prev] ")
    assert all(o.is_error for o in obs if o.text == INVALID) and not any(o.done for o in obs)


GARBAGE = {
    "an empty page": b"",
    "binary bytes": bytes(range(256)) * 4,
    "garbage HTML": b"<html><body><h1>It works!</h1><p>nginx default page</p></body></html>",
    "a score that is no number": b"<h3>Your score (min 0.0, max 1.0)<pre>not a number</pre></h3>",
    "a score out of bounds": b"<h3>Your score (min 0.0, max 1.0)<pre>7.5</pre></h3>",
}


@pytest.mark.parametrize("route", ["index", "search_results", "item_page", "item_sub_page", "done"])
async def test_a_page_the_server_cannot_have_meant_is_an_error_that_reruns(
    scripted: Any, small: Catalog, tmp_path: Path, route: str
) -> None:
    """An empty page, binary bytes or HTML that is not the page asked for, on any page of an
    episode: the example ends with reason error (never scored as the model's failure), and
    ``retry_errors`` reruns it right once the server mends."""
    from dataclasses import replace

    chosen = small.goals[: len(GARBAGE)]
    with WebShopServer(small) as server:
        shop = server.httpd.RequestHandlerClass.shop  # type: ignore[attr-defined]
        real, broken, served = shop.respond, {"on": True}, iter(GARBAGE.values())
        pages: dict[str, bytes] = {}

        def respond(path: str) -> tuple[int, str | bytes]:
            parts = path.strip("/").split("/")
            if broken["on"] and (parts[0] == route or (route == "index" and len(parts) == 1)):
                session = parts[0 if route == "index" else 1]
                if session not in pages:
                    pages[session] = next(served)
                return 200, pages[session]
            return real(path)

        shop.respond = respond
        cfg = replace(run_config(tmp_path, "text", replace(SMALL, url=server.url), n=len(chosen)), run_id="garbage")
        walk = [" search[{q}]", " click[{asin}]", " click[Description]", " click[< Prev]", " click[Buy Now]"]
        taken = {"index": 0, "search_results": 1, "item_page": 2, "item_sub_page": 3, "done": 5}[route]
        actions = [a.format(q=goal_query(g), asin=g.asin) for g in chosen for a in walk[:taken]]
        first = await evaluate(cfg, model=scripted(actions))
        rows = records(first.run_dir)
        assert [r["reason"] for r in rows] == ["error"] * len(chosen), [(r["reason"], r["error"]) for r in rows]
        assert all("WebShop server sent" in r["error"] for r in rows), [r["error"] for r in rows]
        broken["on"] = False
        again = await evaluate(
            replace(cfg, resume=True, retry_errors=True),
            model=scripted([f" {a}" for g in chosen for a in oracle_actions(g)]),
        )
    assert [r["reward"] for r in records(again.run_dir)] == [1.0] * len(chosen) and again.metrics["errors"] == 0


async def test_a_server_that_answers_500_makes_error_examples_that_rerun(
    scripted: Any, small: Catalog, tmp_path: Path
) -> None:
    from dataclasses import replace

    chosen = small.goals[:3]
    with WebShopServer(small) as server:
        shop = server.httpd.RequestHandlerClass.shop  # type: ignore[attr-defined]
        real, broken = shop.respond, {"on": True}
        shop.respond = lambda path: (
            (500, "<h1>Internal Server Error</h1>") if broken["on"] and "search_results" in path else real(path)
        )
        cfg = replace(run_config(tmp_path, "text", replace(SMALL, url=server.url), n=3), run_id="faulty")
        first = await evaluate(cfg, model=scripted([f" search[{goal_query(g)}]" for g in chosen]))
        rows = records(first.run_dir)
        assert [r["reason"] for r in rows] == ["error"] * 3 and "answered 500" in rows[0]["error"]
        assert first.metrics["errors"] == 3 and first.metrics["score"]["mean"] == 0.0
        broken["on"] = False
        rerun = replace(cfg, resume=True, retry_errors=True)
        actions = [f" {a}" for g in chosen for a in oracle_actions(g)]
        again = await evaluate(rerun, model=scripted(actions))
    assert [r["reward"] for r in records(again.run_dir)] == [1.0, 1.0, 1.0] and again.metrics["errors"] == 0


async def test_a_server_that_is_down_is_one_clear_error(scripted: Any, small: Catalog, tmp_path: Path) -> None:
    from dataclasses import replace

    from react_bench.tasks import DataError
    from react_bench.tasks.webshop import WebShopTask

    with WebShopServer(small) as server:
        url = server.url
    with pytest.raises(DataError, match="cannot be reached"):  # the sessions' instructions are read first
        await evaluate(
            replace(run_config(tmp_path, "text", replace(SMALL, url=url, timeout_s=2)), run_id="down"),
            model=scripted([]),
        )
    assert not (tmp_path / "webshop").exists()  # nothing written
    # an episode whose server goes away: the example ends with reason error (re-runnable)
    from react_bench.methods.core import Solver

    task = WebShopTask()
    solver = Solver(
        SolveSettings(mode="react"),
        scripted([]),
        {"react": task.prompt("react", None, None, None)},
        WebShopFactory(url, timeout_s=2),
        task.text_format(),
    )
    outcome = await solver.solve(Example("fixed_0", "", ""))
    assert outcome.reason == "error" and "cannot be reached" in (outcome.error or "")


def test_eval_py_runs_webshop_offline_and_against_the_standalone_server(tmp_path: Path) -> None:
    catalog = Catalog.generate(SMALL.seed, SMALL.products, SMALL.goals)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f" {a}" for g in catalog.goals[:2] for a in oracle_actions(g)]))
    common = [
        "task=webshop",
        "n=2",
        f"results_dir={tmp_path}",
        "model=scripted",
        f"model.script={script}",
        f"webshop.products={SMALL.products}",
        f"webshop.goals={SMALL.goals}",
    ]
    offline = eval_py(*common, "run_id=offline")
    assert offline.returncode == 0, offline.stderr
    in_process = records(run_dir_of(offline.stdout))
    assert [r["reward"] for r in in_process] == [1.0, 1.0] and "WebShop score" not in offline.stderr
    server = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "scripts" / "webshop_server.py"),
            "--port",
            "0",
            "--seed",
            "0",
            "--products",
            str(SMALL.products),
            "--goals",
            str(SMALL.goals),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline().split()
        assert first[0] == "PORT" and int(first[1]) > 0
        remote = eval_py(*common, f"webshop.url=http://127.0.0.1:{first[1]}", "run_id=remote")
        assert remote.returncode == 0, remote.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    against = records(run_dir_of(remote.stdout))
    assert [(r["id"], r["question"], r["reward"]) for r in against] == [
        (r["id"], r["question"], r["reward"]) for r in in_process
    ]  # the same goals, the same catalog


def test_the_protocol_the_modes_and_the_papers_prompt(reference_text, tmp_path: Path) -> None:
    from react_bench.episode import build_prompts
    from react_bench.errors import ConfigError

    run = RunConfig.from_mapping(composed("task=webshop"))
    assert (run.solve.loop.max_steps, run.solve.context.name, run.solve.context.window_chars) == (15, "window", 6400)
    with pytest.raises(ConfigError, match="task=webshop does not run mode=cot"):
        RunConfig.from_mapping(composed("task=webshop", "mode=cot"))
    for style, variable in (("react", "prompt1"), ("act", "prompt1_actonly")):  # WebShop.ipynb's, as it sends them
        notebook = reference_text(f"react/webshop_{style}")
        cfg = RunConfig.from_mapping(composed("task=webshop", f"mode={style}", "prompt=paper"))
        (spec,) = build_prompts(cfg).values()
        assert spec.instruction == "" and spec.exemplars == notebook and notebook.startswith("Webshop \nInstruction:")
        assert spec.source == f"paper: ysymyth/ReAct@6bdb3a1:WebShop.ipynb#{variable}"
    paper = tmp_path / "prompts.json"  # any file of that layout, by path
    paper.write_text(json.dumps({"react": "Webshop \nInstruction: x"}))
    cfg = RunConfig.from_mapping(composed("task=webshop", f"prompt.file={paper}", "prompt.key=react"))
    (spec,) = build_prompts(cfg).values()
    assert spec.instruction == "" and spec.exemplars == "Webshop \nInstruction: x"
    own = build_prompts(RunConfig.from_mapping(composed("task=webshop")))["react"]
    episodes = webshop_format().exemplar_episodes(own.exemplars)
    assert len(episodes) == 1 and episodes[0].steps[-1].action == "click[Buy Now]"
    assert episodes[0].opening.startswith("WebShop \nInstruction:")


# --------------------------------------------------------------------------- protocol=paper is the notebook's


def _webshop_run_config(tmp_path: Path, protocol: str) -> RunConfig:
    from tests.support import composed

    cfg = composed(
        "task=webshop",
        "model=scripted",
        f"protocol={protocol}",
        "webshop.products=200",
        "webshop.goals=20",
        "n=1",
        f"results_dir={tmp_path / protocol}",
        "progress=false",
        "show=none",
    )
    return RunConfig.from_mapping(cfg)


@pytest.mark.parametrize(("protocol", "bought"), [("paper", False), ("custom", True)])
async def test_the_15th_action_is_asked_for_and_never_run_under_the_papers_protocol(
    scripted: Any, tmp_path: Path, protocol: str, bought: bool
) -> None:
    """The notebook's loop: 15 model calls, 14 actions executed; a Buy Now decided 15th scores 0
    (as the notebook scored it). protocol=custom executes it."""
    goal = Catalog.generate(0, 200, 20).goals[0]  # the run's catalog (webshop.products=200, goals=20)
    actions = [f"search[{goal_query(goal)}]", f"click[{goal.asin}]", *["think[not yet]"] * 12, "click[Buy Now]"]
    model = scripted([f" {a}" for a in actions])
    result = await evaluate(_webshop_run_config(tmp_path, protocol), model=model)
    (row,) = records(result.run_dir)
    assert len(model.requests) == 15 and row["steps"] == 15
    executed = [e for e in row["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"]
    assert "[Buy Now]" in executed[1]["observation"]  # the item page: Buy Now is offered
    if bought:
        assert (row["reason"], len(executed)) == ("done", 15) and row["reward"] > 0
    else:
        assert (row["reason"], row["reward"], row["score"], len(executed)) == ("step_limit", None, 0.0, 14)


@pytest.mark.parametrize("protocol", ["paper", "custom"])
async def test_a_click_the_page_does_not_offer_shows_it_again_under_the_papers_protocol(
    scripted: Any, tmp_path: Path, protocol: str
) -> None:
    goal = Catalog.generate(0, 200, 20).goals[0]
    actions = [
        "click[Nonsense]",
        f"search[{goal_query(goal)}]",
        f"click[{goal.asin}]",
        "click[Features]",
        "click[Nonsense]",
        "click[Buy Now]",
        "click[< Prev]",
        "click[Buy Now]",
    ]
    model = scripted([f" {a}" for a in actions])
    result = await evaluate(_webshop_run_config(tmp_path, protocol), model=model)
    (row,) = records(result.run_dir)
    seen = [e["observation"] for e in row["trajectory"][0]["events"] if e["type"] == "tool_execution_finished"]
    first = row["trajectory"][0]["first_observation"]
    if protocol == "paper":  # the instruction page, then the sub-page, again; a known button stays invalid
        assert seen[0] == first and seen[4] == seen[3] and seen[5] == "Invalid action!"
    else:
        assert seen[0] == seen[4] == seen[5] == "Invalid action!"
    assert row["reason"] == "done" and row["reward"] is not None  # the last Buy Now, from the item page


async def test_a_page_past_the_size_cap_is_not_read_and_the_record_says_so(
    scripted: Any, small: Catalog, tmp_path: Path
) -> None:
    """A 6 MB search page (a hostile or broken server): read no further than 5,000,000 bytes, the
    example an error that names the cap; nothing of it is held or parsed."""
    from dataclasses import replace

    from react_bench.envs.webshop.env import MAX_PAGE_BYTES

    chosen = small.goals[:1]
    with WebShopServer(small) as server:
        shop = server.httpd.RequestHandlerClass.shop  # type: ignore[attr-defined]
        real = shop.respond
        huge = b"<html><body>" + b"<p>Back to Search</p>" * (MAX_PAGE_BYTES // 20) + b"</body></html>"
        shop.respond = lambda path: (200, huge) if "search_results" in path else real(path)
        cfg = replace(run_config(tmp_path, "text", replace(SMALL, url=server.url), n=1), run_id="huge")
        result = await evaluate(cfg, model=scripted([f" search[{goal_query(g)}]" for g in chosen]))
    (row,) = records(result.run_dir)
    assert row["reason"] == "error" and f"larger than {MAX_PAGE_BYTES:,} bytes" in row["error"]


def test_an_observation_past_the_cap_is_cut_and_says_so() -> None:
    from react_bench.environment import Observation
    from react_bench.loop import MAX_OBSERVATION_CHARS, capped

    small_one = Observation("a page")
    assert capped(small_one) is small_one
    cut = capped(Observation("x" * (3 * MAX_OBSERVATION_CHARS), done=True, reward=1.0))
    assert cut.text.startswith("x" * MAX_OBSERVATION_CHARS) and len(cut.text) < MAX_OBSERVATION_CHARS + 200
    assert cut.text.endswith(f"[observation cut: {3 * MAX_OBSERVATION_CHARS:,} characters, at most 200,000 are kept]")
    assert (cut.done, cut.reward) == (True, 1.0)


async def test_a_search_of_any_length_or_shape_is_answered_with_a_page(small: Catalog) -> None:
    """A model's search text never ends an episode as an error: 20,000 characters of words, of a
    list literal, of brackets or of non-ASCII letters are each cut to MAX_QUERY (the page says so)
    and answered with a results page; the episode goes on to its purchase as any other would."""
    from react_bench.envs.webshop.env import CUT_NOTE, MAX_QUERY

    g = small.goals[1]
    long_queries = ["a b " * 5000, "[" + "'x', " * 4000 + "]", "[" * 20000, "é" * 20000, "-" * 19999 + "1"]
    with WebShopServer(small) as server:
        factory = WebShopFactory(server.url)
        for query in long_queries:
            obs = await _episode(factory, g.session, [f"search[{query}]", "click[Back to Search]"])
            assert not obs[1].is_error and "[Back to Search]" in obs[1].text and obs[1].text.endswith(CUT_NOTE)
            assert not obs[2].is_error  # the instruction page again
        odd = await _episode(factory, g.session, [f"search[[{goal_query(g)}]", f"search[{goal_query(g)}]"])
        assert "[Back to Search]" in odd[1].text and CUT_NOTE not in odd[1].text  # a bracket, read as words
        bought = await _episode(
            factory, g.session, [f"search[{goal_query(g)} " + "x" * 30000 + "]", f"click[{g.asin}]", "click[Buy Now]"]
        )
        factory.close()
    assert len(f"{goal_query(g)} ") < MAX_QUERY and bought[1].text.endswith(CUT_NOTE)
    assert bought[-1].done and bought[-1].reward is not None and bought[-1].reward > 0
