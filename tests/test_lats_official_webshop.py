"""``task=webshop lats.protocol=official`` (methods/lats_official_webshop.py): LATS's WebShop code, ported.

The shop's steps are checked against the code's ``webshopEnv`` rules; the search, with templates of
the test's own, in the project's shop (its quirks: the root's doubled samples, failed trajectories
shown as dicts and cut a step at each value call, the best vote plus one for a terminal child, the
simulation off the tree, the best reward chosen). Through ``evaluate`` against the Messages stand-in:
the requests, the record and Table 1's label; where LATS's pinned ``webshop/prompt.py`` can be had
(a prepared copy, the cache, or ``REACT_BENCH_GITHUB``), the first expansion's and the value calls'
requests are compared with the code's prompts byte for byte.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from react_bench import upstream
from react_bench.envs.webshop import WebShopConfig, start_server
from react_bench.envs.webshop.catalog import Catalog, Goal, goal_query, oracle_actions
from react_bench.evaluate import evaluate
from react_bench.methods import lats_official_webshop as shop_code
from react_bench.methods.core import SolveSettings
from react_bench.methods.lats import LatsConfig
from react_bench.methods.lats_official_webshop import (
    INVALID,
    Refused,
    ShopPrompts,
    ShopSearch,
    ShopSessions,
    generate_prompt,
    shop_text,
)
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.github_raw import RawStandIn
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config

KEY_ENV = "REACT_BENCH_TEST_LATS_WEBSHOP_KEY"
ENV = WebShopConfig(products=300, goals=40)
OWN = ShopPrompts(
    prompt1="S|{input}\n",
    prompt1_feedback="SF|{trajectories}|{input}\n",
    score_prompt='V|conclude "The verdict: {s}"|{input}\n',
    score_prompt_feedback='VF|conclude "The verdict: {s}"|{trajectories}|{input}\n',
    reflection_prompt="R|{trajectory}|",
)


def goals(n: int) -> list[Goal]:
    return list(Catalog.generate(ENV.seed, ENV.products, ENV.goals).goals[:n])


# --- the shop: webshopEnv's rules ----------------------------------------------------------------


def test_the_shops_steps_are_the_codes() -> None:
    pages: list[dict[str, Any]] = []

    async def page_text(**state: Any) -> tuple[str, dict[str, Any]]:
        pages.append(dict(state))
        info: dict[str, Any] = {
            "search": {"asins": ["B1", "B2"]},
            "item": {"option_types": {"red": "color", "large": "size"}},
            "end": {"reward": 1.0 if state.get("options") == {"color": "red"} else 0.5},
        }.get(state["page_type"], {})
        return f"<{state['page_type']}>", info

    shop = ShopSessions(page_text)

    def step(action: str) -> tuple[str, float, bool]:
        return asyncio.run(shop.step("fixed_0", action))

    assert step("reset") == ("<init>", 0.0, False)
    for refused in ("click[Buy Now]", "click[< Prev]", "click[Next >]", "buy[it]"):
        with pytest.raises(Refused):
            step(refused)
    assert step("think[what to buy]") == ("<init>", 0.0, False)  # the code's "OK." is overwritten by the page
    assert step("click[anything]") == ("<init>", 0.0, False)  # the instruction page: shown again
    assert step("search[red shirt]") == ("<search>", 0.0, False)
    with pytest.raises(Refused):
        step("search[again]")  # only from the instruction page
    with pytest.raises(Refused):
        step("click[B9]")  # not a result of the page
    assert step("click[B2]") == ("<item>", 0.0, False)
    with pytest.raises(Refused):
        step("click[blue]")  # not an option of the page
    assert step("click[red]") == ("You have clicked red.", 0.0, False)
    assert shop.sessions["fixed_0"]["options"] == {"color": "red"}
    assert step("click[Buy Now]") == ("<end>", 1.0, True)  # only a reward of 1 is done
    assert pages[-1]["page_type"] == "end" and pages[-1]["asin"] == "B2"
    step("reset")
    step("search[red shirt]")
    step("click[B1]")
    assert step("click[Buy Now]") == ("<end>", 0.5, False)  # a partial score: the code's done stays False


# --- the search, with the test's own templates, in the project's shop ------------------------------


class Script:
    """The search test's model: a step's k-th sample of a prompt is the expert's next action, buying
    at once, or an action the page does not allow; a value 6 (a feedback prompt's: "no score");
    a reflection said plainly. Every call is kept."""

    def __init__(self, goal: Goal) -> None:
        self.expert = oracle_actions(goal)
        self.seen: Counter[tuple[str, str | None]] = Counter()
        self.calls: list[tuple[str, int, str | None, str]] = []

    async def __call__(self, prompt: str, n: int, stop: str | None, what: str) -> list[str]:
        self.calls.append((prompt, n, stop, what))
        out = []
        for _ in range(n):
            k = self.seen[(prompt, stop)] % 3
            self.seen[(prompt, stop)] += 1
            if what == "value":
                out.append("no score" if prompt.startswith("VF|") else "I rate it 6")
            elif what == "reflection":
                out.append("I bought before choosing the options.")
            else:
                taken = prompt.count("\nAction: ") - 1
                out.append([self.expert[min(taken, len(self.expert) - 1)], "click[Buy Now]", "click[Size: L]"][k])
        return out


def search_in_shop(goal_index: int, n: int, iterations: int) -> tuple[Any, Script, ShopSearch]:
    goal = goals(goal_index + 1)[goal_index]
    script = Script(goal)
    import httpx2

    server = start_server(ENV)
    client = httpx2.Client()

    def get(path: str) -> str:
        return client.get(server.url + path).text

    from react_bench.envs.webshop.env import WebShopEnv

    site = WebShopEnv(server.url, client)
    search = ShopSearch(
        OWN, script, ShopSessions(shop_text(site, get)), goal.session, n, 1, iterations, random.Random(0)
    )
    try:
        found = asyncio.run(search.run())
    finally:
        client.close()
        server.stop()
    return found, script, search


def test_the_search_keeps_the_codes_quirks_in_the_projects_shop() -> None:
    found, script, search = search_in_shop(0, n=2, iterations=8)
    first_prompt, first_n, stop, what = script.calls[0]
    root = found.nodes[0]
    assert (first_prompt, first_n, stop, what) == (f"S|{root.question}\nAction: \n", 4, "Observation", "step")
    assert "Instruction:" in root.question and "[Search]" in root.question  # the instruction page, all of it
    children = [c for c in root.children]
    # the root's four samples, one child an action: the expert's search (twice), a purchase the instruction
    # page refuses (Invalid action!, reward -1), and a click cut at its colon ("click[Size"), which the
    # instruction page answers by showing itself again
    actions = {c.state["action"]: c for c in children}
    assert set(actions) == {oracle_actions(goals(1)[0])[0], "click[Buy Now]", "click[Size"}
    assert (actions["click[Buy Now]"].state["observation"], actions["click[Buy Now]"].reward) == (INVALID, -1)
    assert actions["click[Size"].state["observation"] == root.question
    # a purchase scored between 0 and 1 is a failed trajectory, shown in later value prompts as the dict
    # it is, one more step cut out of it at each value call, with the prompt's own conclusion and score
    assert search.failed and 0 < search.failed[0]["r"] < 1
    shown = [p for p, _, _, w in script.calls if w == "value" and p.startswith("VF|")]
    with_reflection = [p for p in shown if "Reflection: I bought" in p]
    assert with_reflection, "the value prompts show the failed trajectory with its reflection"
    assert "{'trajectory': '" in with_reflection[0] and "'final_answer': 'click[Buy Now]', 'r': " in with_reflection[0]
    assert f"The verdict: {int(search.failed[0]['r'] * 10) / 2}\n" in with_reflection[0]
    steps_shown = [
        p.split("{'trajectory': '", 1)[1].split("'final_answer'")[0].count("Action: ") for p in with_reflection
    ]
    assert steps_shown[0] > steps_shown[-1] and steps_shown == sorted(steps_shown, reverse=True)
    # "no score" reads -1 and counts as unparsed; the reflections were drawn and written
    assert found.unparsed_values > 0 and found.reflections
    assert any(w == "step" and p.startswith("SF|") for p, _, _, w in script.calls)  # with the reflections
    # the simulations' nodes are recorded but never attached to their parents
    simulated = [node for node in found.nodes if not node.in_tree]
    assert simulated and all(node not in (node.parent.children if node.parent else []) for node in simulated)
    # the iterations ran out: the chosen node is the best-rewarded of all (a purchase's score is the reward)
    assert found.iterations == 8 and found.stuck is None
    assert found.chosen.reward == max(node.reward for node in found.nodes) > 0 and found.chosen.scored
    assert found.chosen.state["action"] == "click[Buy Now]"


def test_a_terminal_child_takes_the_best_vote_plus_one_over_the_best_vote() -> None:
    from react_bench.methods.lats_official_webshop import WNode

    async def gpt(prompt: str, n: int, stop: str | None, what: str) -> list[str]:
        return ["8" if "good" in prompt else "4"] * n

    search = ShopSearch(OWN, gpt, ShopSessions(None), "s", 1, 1, 1, random.Random(0))  # type: ignore[arg-type]
    parent = WNode("Q", None)
    kids = [
        WNode("Q", parent, {"action": "click[good]", "observation": "o"}, depth=1),
        WNode("Q", parent, {"action": "click[Buy Now]", "observation": "scored"}, depth=1, is_terminal=True),
        WNode("Q", parent, {"action": "click[bad]", "observation": "o"}, depth=1),
    ]
    parent.children = kids
    asyncio.run(search._evaluate(parent))
    # votes for the open children (0.8, 0.4) go to the children in order; the terminal child, in the
    # middle, takes 0.8 + 1; every vote over the best (0.8)
    assert [k.value for k in kids] == [1.0, pytest.approx(1.8 / 0.8), 0.0]
    assert generate_prompt(kids[0]) == "Q\n\nAction: click[good]\nObservation: o"


# --- through evaluate, against the Messages stand-in ---------------------------------------------


def shop_responder(goals: list[Goal]) -> Any:
    """The stand-in's model: a step is the expert's next action (the same for every sample of a
    prompt, so that the tree does not hang on the order the samples' requests arrive in); a value 7;
    a reflection."""

    def reply(body: dict[str, Any]) -> Reply:
        content = body["messages"][0]["content"]
        text = content if isinstance(content, str) else "".join(b["text"] for b in content)
        if "stop_sequences" not in body:
            return Reply.text("It is on the way: 7." if text.endswith("Reflection: \n") else "Choose the options.")
        goal = max(goals, key=lambda g: text.rfind(g.instruction))
        taken = text[text.rfind(goal.instruction) :].count("\nAction: ") - 1
        expert = oracle_actions(goal)
        return Reply.text(expert[min(taken, len(expert) - 1)])

    return reply


def run_official(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int = 2) -> tuple[Any, Any, list[Any]]:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "rb-cache"))
    with MessagesServer(responder=shop_responder(goals(n))) as server:

        def run(run_id: str, **extra: Any) -> RunConfig:
            return RunConfig(
                task=TaskConfig(name="webshop", n=n),
                model=claude_model_config(server.base_url, KEY_ENV, "claude-sonnet-4-6"),  # type: ignore[arg-type]
                solve=SolveSettings(mode="lats", options=LatsConfig(protocol="official", n=2, iterations=4)),
                env=ENV,
                results_dir=tmp_path,
                run_id=run_id,
                progress=False,
                **extra,
            )

        dry = asyncio.run(evaluate(run("dry", dry_run=True), out=io.StringIO()))
        assert server.requests == []  # the dry run prices the code's prompts without a call
        result = asyncio.run(evaluate(run("official"), out=io.StringIO()))
        bodies = [r.body for r in server.requests if r.path.endswith("/messages")]
    return dry, result, bodies


def text_of(body: dict[str, Any]) -> str:
    (message,) = body["messages"]
    assert message["role"] == "user" and "system" not in body
    content = message["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def test_an_official_webshop_run_records_its_search_and_says_the_reward_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from react_bench.studies import load_runs, table1

    monkeypatch.setattr(ShopPrompts, "pinned", staticmethod(lambda: OWN))
    dry, result, bodies = run_official(tmp_path, monkeypatch)
    steps = [b for b in bodies if "stop_sequences" in b]
    assert steps and all((b["max_tokens"], b["stop_sequences"]) == (100, ["Observation"]) for b in steps)
    assert all(b["max_tokens"] == 100 and b["temperature"] == 1.0 for b in bodies)
    records = [json.loads(line) for line in (result.run_dir / "examples.jsonl").read_text().splitlines()]
    for record in records:
        tree = record["method"]["tree"]
        assert (tree["protocol"], tree["feedback"], tree["select"]) == ("official", "honest", "reward")
        assert tree["source"] == shop_code.SOURCE
        chosen = {n["id"]: n for n in tree["nodes"]}[tree["chosen"][-1]]
        assert record["reward"] == chosen["env_reward"] == 1.0 and tree["selected_by"] == "environment reward"
        assert record["trajectory"][0]["history"][-2]["content"][0]["text"] == "Action: click[Buy Now]"
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["method"]["protocol"] == "official" and metrics["method"]["reward_selected"] == 1.0
    grid, _ = table1(load_runs([result.run_dir]))
    assert "answer chosen by the environment's reward" in grid[grid["mode"] == "lats"].iloc[0]["WebShop score"]
    estimate = json.loads((dry.run_dir / "dry_run.json").read_text())
    assert 0 < estimate["calls_expected"] <= estimate["calls_at_most"]
    assert all(r["calls"] <= estimate["calls_at_most"] for r in records)


@pytest.fixture(scope="module")
def prompt_file() -> bytes:
    try:
        return upstream.fetch("lats/webshop_prompt.py").read_bytes()
    except upstream.UpstreamError:
        pytest.skip(
            f"needs {upstream.pinned('lats/webshop_prompt.py').label}: set REACT_BENCH_GITHUB to a host serving it"
        )


def test_the_first_expansion_and_the_value_requests_are_the_codes_byte_for_byte(
    tmp_path: Path, prompt_file: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = upstream.pinned("lats/webshop_prompt.py")
    raw = RawStandIn({pinned.url_path: prompt_file}).start()
    monkeypatch.setenv("REACT_BENCH_GITHUB", raw.base_url)
    try:
        prompts = ShopPrompts.pinned()
        _, result, bodies = run_official(tmp_path, monkeypatch, n=1)
    finally:
        raw.stop()
    record = json.loads((result.run_dir / "examples.jsonl").read_text().splitlines()[0])
    nodes = record["method"]["tree"]["nodes"]
    root_page = record["trajectory"][0]["first_observation"]
    first = prompts.prompt1.format(input=root_page + "\nAction: ")  # the code's x + y
    assert [text_of(b) for b in bodies[:4]] == [first] * 4  # --n_generate_sample 2, doubled at the root
    values = {text_of(b) for b in bodies if "stop_sequences" not in b}
    open_children = [n for n in nodes if n["parent"] == 0 and not n["terminal"] and not n.get("simulated")]
    assert [n["action"] for n in open_children] == [f"search[{goal_query(goals(1)[0])}]"]
    assert open_children
    for child in open_children:
        trajectory = f"{root_page}\n\nAction: {child['action']}\nObservation: {child['observation']}"
        assert prompts.score_prompt.format(s="", input=trajectory + "\n\nReflection: ") in values


def test_a_page_that_cannot_be_read_ends_the_example_as_the_servers_error() -> None:
    from react_bench.environment import EpisodeAbort
    from react_bench.envs.webshop.env import WebShopEnv

    def get(path: str) -> str:
        return "<html><body>Your score (min 0.0, max 1.0)<div>lots</div></body></html>"

    with pytest.raises(EpisodeAbort, match="cannot be read"):
        asyncio.run(shop_text(WebShopEnv("http://shop", None), get)(session="fixed_0", page_type="end", asin="B1"))


def test_what_the_codes_actions_reach_is_a_page_of_the_shop_never_its_error() -> None:
    """``< Prev`` on the first results page (the code allows it: page 0), a search of 20,000
    characters, an empty search: each is a page of the project's shop, as of WebShop's."""
    import httpx2

    from react_bench.envs.webshop.env import WebShopEnv

    goal = goals(1)[0]
    server = start_server(ENV)
    client = httpx2.Client()
    shop = ShopSessions(shop_text(WebShopEnv(server.url, client)))

    def step(action: str) -> tuple[str, float, bool]:
        return asyncio.run(shop.step(goal.session, action))

    try:
        step("reset")
        step(f"search[{goal_query(goal)}]")
        first_asins = shop.sessions[goal.session]["asins"]
        page, reward, done = step("click[< Prev]")
        assert "Page 0 (Total results: " in page and "[B0" not in page  # WebShop's slice [-10:0]: none
        # the session keeps the first page's ASINs (the code adds to it only what a page offers)
        assert shop.sessions[goal.session]["page_num"] == 0 and shop.sessions[goal.session]["asins"] == first_asins
        for query in ("x" * 20_000, "", "[" * 20_000, "a/b?c"):
            step("reset")
            page, reward, done = step(f"search[{query}]")
            assert "Page 1 (Total results: " in page and (reward, done) == (0.0, False)
    finally:
        client.close()
        server.stop()
