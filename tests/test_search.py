"""``react-bench search`` (``react_bench/search.py``): a race over 2 models x 3 modes on 200 HotpotQA
questions against the Messages API stand-in, whose accuracy is known per model (the weaker one
answers 60% of the questions wrongly, the stronger one 10%, whatever the mode), with a budget of
40% of the full grid's dry-run price. Where the data folder has fewer than 200 questions (a clone
alone's generated folder has 103), all of them, in four slices as with 200."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from react_bench.errors import ConfigError
from react_bench.search import Candidate, SearchSettings, candidates, config_for, drops, price, stratified_ids
from react_bench.testing.messages_server import MessagesServer
from react_bench.testing.sse import Reply
from react_bench.testing.walker import Walk, WalkResponder, asks_a_step, question_of
from tests.support import REPO, compare_py
from tests.support_oracle import gold_answers

KEY_ENV = "REACT_BENCH_TEST_SEARCH_KEY"
STRONG, WEAK = "claude-sonnet-4-6", "claude-haiku-4-5"
WRONG = {STRONG: 1, WEAK: 6}  # of every ten questions (by a hash of the question), whatever the mode
N = 200


def questions() -> int:
    """The questions the race runs: 200, or all the data folder has where it has fewer."""
    from react_bench.tasks import TaskConfig, load_task

    return min(N, len(load_task("hotpotqa").examples(TaskConfig(name="hotpotqa"))))


class KnownAccuracy:
    """Answers from the request body alone: each model right on its share of the questions (the
    same questions whatever the mode), a ReAct episode a search and then the answer."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.answers = {
            model: {q: (g if sum(map(ord, q)) % 10 >= wrong else "no idea") for q, g in golds.items()}
            for model, wrong in WRONG.items()
        }
        self.walks = {model: WalkResponder(Walk(steps=2, answers=a)) for model, a in self.answers.items()}

    def __call__(self, body: dict[str, Any]) -> Reply:
        model = body["model"]
        if asks_a_step(body):
            return self.walks[model](body)
        return Reply.text(f" I recall it.\nAnswer: {self.answers[model].get(question_of(body).strip(), 'unknown')}")


def _args(server: MessagesServer, results: Path, *extra: str) -> list[str]:
    n = questions()
    return [
        "task=hotpotqa",
        f"n={n}",
        f"search.slice={-(-n // 4)}",
        f"search.models=[{WEAK},{STRONG}]",
        "search.modes=[cot,react,cot_sc]",
        f"model.base_url={server.base_url}",
        f"model.api_key_env={KEY_ENV}",
        "protocol=custom",
        "cot_sc_samples=5",
        f"results_dir={results}",
        *extra,
    ]


def _search(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: "test-key-not-real", "REACT_BENCH_REQUEST_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "search.py"), *args], env=env, capture_output=True, text=True
    )


def _full_grid_price(args: list[str]) -> float:
    """What the whole grid would cost by the dry run: every configuration on every example."""
    settings = SearchSettings.parse([*args, "budget_usd=1"])
    ids = stratified_ids(settings)

    async def total() -> float:
        prices = [await price(config_for(settings, c, ids, 0)) for c in candidates(settings)]
        return sum(usd or 0.0 for usd, _ in prices)

    return asyncio.run(total())


@pytest.mark.slow
def test_the_search_keeps_to_its_budget_drops_the_dominated_and_finds_the_frontier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=KnownAccuracy(gold_answers(questions()))) as server:
        args = _args(server, tmp_path / "results")
        full = _full_grid_price(args)
        budget = 0.4 * full
        first = _search([*args, f"budget_usd={budget}"], tmp_path / "cache")
        assert first.returncode == 0, first.stderr[-3000:] + first.stdout[-3000:]
        sent = len(server.requests)
        again = _search([*args, f"budget_usd={budget}"], tmp_path / "cache")
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.requests) == sent  # run again: every answer from its run folders, nothing sent
        # a budget the first slice's price would pass: nothing is sent, and the search says why
        small = _search(_args(server, tmp_path / "small", f"budget_usd={0.1 * full}"), tmp_path / "cache-small")
        assert small.returncode == 0, small.stderr[-3000:]
        assert len(server.requests) == sent and "stop: slice 1 priced at" in small.stdout
        stopped = json.loads((tmp_path / "small" / "search" / "search" / "search.json").read_text())
        assert stopped["spent_usd"] == 0 and stopped["frontier"] == [] and "would pass the budget" in stopped["stopped"]
    folder = tmp_path / "results" / "search" / "search"
    result = json.loads((folder / "search.json").read_text())
    # the budget, and the full grid's price beside the spend
    assert result["full_grid_usd"] == pytest.approx(full, rel=1e-6)
    assert 0 < result["spent_usd"] <= budget
    # the frontier: the stronger model's configuration tops it; the weaker model's cheapest mode is on it
    front, points = result["frontier"], result["configurations"]
    assert points[front[-1]]["model"] == STRONG and points[front[-1]]["score"] > 0.8
    assert f"{WEAK} cot" in front and points[f"{WEAK} cot"]["score"] < 0.5
    # at least three configurations dropped, each with when and by whom, and the test's p
    dropped = result["dropped"]
    assert len(dropped) >= 3, dropped
    for key, d in dropped.items():
        assert d["after_slice"] >= 1 and d["by"] in points and d["by"] != key and d["p"] < d["level"]
    assert {f"{STRONG} react", f"{STRONG} cot_sc"} <= set(dropped)
    # the survivors ran further than the dropped: the race saved the rest of the grid
    assert points[f"{STRONG} cot"]["n"] > max(points[k]["n"] for k in dropped)
    # the same frontier, run again
    assert json.loads((folder / "search.json").read_text())["frontier"] == front
    assert "## The frontier" in (folder / "search.md").read_text() and (folder / "search.png").stat().st_size > 0
    assert f"dropped {STRONG} react" in first.stdout
    # compare.py tables its runs: every slice of every configuration is an ordinary run folder
    runs = sorted(p.parent for p in (tmp_path / "results" / "hotpotqa").glob("*/*/*/run.json"))
    assert len(runs) >= 6 + 3 * 2
    table = compare_py(tmp_path / "results" / "hotpotqa", out=tmp_path / "study")
    assert table.returncode == 0, table.stderr[-2000:]
    assert "claude-haiku-4-5" in (tmp_path / "study" / "table1.md").read_text()


def test_the_settings_are_checked_in_one_line() -> None:
    base = ["task=hotpotqa", "n=10", "search.models=[a]", "search.modes=[cot]"]
    with pytest.raises(ConfigError, match="give one budget"):
        SearchSettings.parse(base)
    with pytest.raises(ConfigError, match="the search chooses it"):
        SearchSettings.parse([*base, "budget_usd=1", "mode=react"])
    assert SearchSettings.parse([*base, "budget_usd=1", "judge=rules"]).overrides == ("judge.model=rules",)
    with pytest.raises(ConfigError, match="nosuch cot: .*Could not find 'model/nosuch'"):
        config_for(SearchSettings.parse([*base, "budget_usd=1"]), Candidate("nosuch", "cot"), ["x"], 1)
    with pytest.raises(ConfigError, match="search.slicez"):
        SearchSettings.parse([*base, "budget_usd=1", "search.slicez=3"])
    grid = SearchSettings.parse(
        [*base[:2], "search.models=[a,b]", "search.modes=[cot,best_of_k]", "search.grid.mode.k=[3,5]", "budget_usd=1"]
    )
    keys = [c.key for c in candidates(grid)]
    assert keys == [
        "a cot",
        "a best_of_k mode.k=3",
        "a best_of_k mode.k=5",
        "b cot",
        "b best_of_k mode.k=3",
        "b best_of_k mode.k=5",
    ]
    with_baselines = SearchSettings.parse([*base, "budget_usd=1", "search.baselines=true", "protocol=custom"])
    assert [c.key for c in candidates(with_baselines)] == ["a cot", "a cot_sc cot_sc_samples=5", "a best_of_k mode.k=5"]


def test_a_configuration_is_dropped_only_by_a_significant_domination() -> None:
    from react_bench.search import Outcomes

    def outcomes(right: list[bool], cost: float) -> Outcomes:
        o = Outcomes()
        for i, r in enumerate(right):
            o.right[str(i)], o.usd[str(i)], o.tokens[str(i)] = r, cost, 0
        return o

    same = [True, False] * 25
    cheap, dear = outcomes(same, 0.01), outcomes(same, 0.02)
    better_dear = outcomes([True] * 50, 0.03)
    gone = drops({"cheap": cheap, "dear": dear, "better": better_dear}, "usd", 0.02, 0.05)
    assert set(gone) == {"dear"} and gone["dear"]["by"] == "cheap"  # as good and cheaper
    # on 6 examples nothing is significant at 0.05 over the pair's tests
    few = drops({"x": outcomes([True] * 6, 0.01), "y": outcomes([False] * 6, 0.02)}, "usd", 0.02, 0.05)
    assert few == {}
