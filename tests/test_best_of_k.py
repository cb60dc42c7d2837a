"""mode=best_of_k (methods/best_of_k.py), the method added the registry's way, against the Messages
API stand-in: k ReAct episodes, the value function's choice, the record and the summary, the
replay, the dry run, Table 1 and the frontier with LATS's published figures, batch rounds.

``Sampler`` answers a step by how often that very request body was asked: the k-th episode of an
example meets its first prompt for the k-th time, so the episodes differ (a wrong guess, the gold
answer, another wrong guess). The value calls score a trajectory 10 when it answers the gold and 2
otherwise, so the value function picks the right episode though the first one is wrong.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.methods.best_of_k import BestOfKConfig
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import after_label, question_of
from tests.support_oracle import gold_answers
from tests.test_lats import Shopper, _text

KEY_ENV = "REACT_BENCH_TEST_BEST_OF_K_KEY"
MODEL = "claude-sonnet-4-6"
_WHY = "Each step follows from the observation before it, and the pages read so far bear on the question."


class Sampler:
    """The stand-in's model (module docstring)."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.golds = golds
        self.seen: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any]) -> Reply:
        text = _text(body)
        if "You judge how promising an attempt" in text:
            shown = text.rsplit("Trajectory:\n", 1)[1]
            right = f"Finish[{self.golds.get(after_label(shown) or '', '?')}]" in shown
            return Reply.text(
                f" {'It answers from the pages.' if right else 'A guess.'} {_WHY}\nScore: {10 if right else 2}"
            )
        key = json.dumps(body["messages"], sort_keys=True)
        variant = self.seen[key] % 3
        self.seen[key] += 1
        answer = [f"wrong guess {variant}", self.golds.get(question_of(body).strip(), "?"), "another guess"][variant]
        return Reply.text(f"Thought 1: I recall it, {_WHY.lower()}\nAction 1: Finish[{answer}]")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))


def config(server: MessagesServer, tmp_path: Path, run_id: str, n: int, k: int = 3, **extra: Any) -> RunConfig:
    options = BestOfKConfig(k=k, selection=extra.pop("selection", "value"))
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model=claude_model_config(server.base_url, KEY_ENV, MODEL),  # type: ignore[arg-type]
        solve=SolveSettings(mode="best_of_k", options=options),
        results_dir=tmp_path,
        run_id=run_id,
        progress=False,
        **extra,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_best_of_k_on_hotpotqa_picks_by_value_records_its_candidates_and_replays(tmp_path: Path) -> None:
    from react_bench.studies import frontier, frontier_markdown, load_runs, table1

    n = 3
    golds = gold_answers(n)
    with MessagesServer(responder=Sampler(golds)) as server:
        result = await evaluate(config(server, tmp_path, "bok", n), out=io.StringIO())
        sent = len(server.requests)
    got = lines(result.run_dir / "examples.jsonl")
    assert len(got) == n and sent == n * (3 + 3)  # per example: 3 one-step episodes, 3 value calls
    for record in got:
        gold = golds[record["question"].strip()]
        own = record["method"]
        assert [c["prediction"] for c in own["candidates"]] == ["wrong guess 0", gold, "another guess"]
        assert [c["value"] for c in own["candidates"]] == [0.2, 1.0, 0.2]
        assert own["chosen"] == 1 and own["oracle_at_k"] is True and own["selection"] == "value"
        assert record["prediction"] == gold and record["em"] == 1.0 and record["route"] == "best_of_k"
        assert len(record["trajectory"]) == 3 and record["calls"] == 6
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["em"]["mean"] == 1.0
    assert metrics["method"] == {
        "k": 3,
        "selection": "value",
        "oracle_feedback": False,
        "oracle_at_k": 1.0,
        "unparsed_values": 0,
    }
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["config"]["solve"]["options"]["k"] == 3 and "value" in run["prompts"]
    # replayed from its cassette: no request (the server is gone), the same choices
    replay = RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model={"provider": "replay", "cassette": str(result.run_dir / "calls.jsonl")},  # type: ignore[arg-type]
        solve=SolveSettings(mode="best_of_k", options=BestOfKConfig(k=3)),
        results_dir=tmp_path / "replayed",
        run_id="replayed",
        progress=False,
    )
    replayed = lines((await evaluate(replay, out=io.StringIO())).run_dir / "examples.jsonl")
    assert [(r["prediction"], r["method"]) for r in replayed] == [(r["prediction"], r["method"]) for r in got]
    # Table 1 and the frontier: its row, with LATS's published figure for ReAct best-of-k
    grid, _ = table1(load_runs([result.run_dir]))
    row = grid[grid["mode"] == "best_of_k"].iloc[0]
    assert row["HotpotQA EM"].startswith("100.0") and "ReAct (best of k) EM 38" in row["HotpotQA EM LATS paper"]
    assert grid[grid["mode"] == "lats"].iloc[0]["HotpotQA EM LATS paper"].startswith("LATS (ReAct) EM 63")
    said = frontier_markdown(frontier(load_runs([result.run_dir])))
    assert "best_of_k" in said and "ReAct (best of k) EM 38" in said


async def test_oracle_selection_is_marked_and_refused_without_answers(tmp_path: Path) -> None:
    from tests.support import composed

    golds = gold_answers(2)
    with MessagesServer(responder=Sampler(golds)) as server:
        result = await evaluate(config(server, tmp_path, "oracle", 2, selection="oracle"), out=io.StringIO())
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["method"]["oracle_feedback"] is True and metrics["method"]["selection"] == "oracle"
    assert result.summary is not None and result.summary.oracle_feedback
    with pytest.raises(ConfigError, match="mode.selection=oracle: task=webshop has no reference answers"):
        RunConfig.from_mapping(composed("task=webshop", "mode=best_of_k", "mode.selection=oracle"))
    with pytest.raises(ConfigError, match="use runner=text"):
        RunConfig.from_mapping(composed("mode=best_of_k", "runner=tool_use"))
    with pytest.raises(ConfigError, match=r"mode.k=0"):
        RunConfig.from_mapping(composed("mode=best_of_k", "mode.k=0"))
    cfg = RunConfig.from_mapping(composed("mode=best_of_k", "mode.k=7"))
    assert cfg.solve.options == BestOfKConfig(k=7)
    with pytest.raises(ConfigError, match=r"mode=react takes no settings; got mode.k"):
        RunConfig.from_mapping(composed("mode=react", "+mode.k=7"))


async def test_best_of_k_on_webshop_buys_what_the_value_function_rates_best(tmp_path: Path) -> None:
    from react_bench.envs.webshop import WebShopConfig
    from react_bench.envs.webshop.catalog import Catalog

    env = WebShopConfig(products=300, goals=40)
    goals = list(Catalog.generate(env.seed, env.products, env.goals).goals[:2])
    with MessagesServer(responder=Shopper(goals)) as server:
        cfg = RunConfig(
            task=TaskConfig(name="webshop", n=2),
            model=claude_model_config(server.base_url, KEY_ENV, MODEL),  # type: ignore[arg-type]
            solve=SolveSettings(mode="best_of_k", options=BestOfKConfig(k=3)),
            env=env,
            results_dir=tmp_path,
            run_id="shop",
            progress=False,
        )
        result = await evaluate(cfg, out=io.StringIO())
    got = lines(result.run_dir / "examples.jsonl")
    assert [r["question"] for r in got] == [g.instruction for g in goals]
    for record in got:
        candidates = record["method"]["candidates"]
        chosen = candidates[record["method"]["chosen"]]
        rated = [c["value"] for c in candidates if c["value"] is not None]
        assert chosen["value"] == max(rated) and record["reward"] == chosen["reward"]  # the shop's own score
        assert len({c["reward"] for c in candidates}) > 1  # the episodes differ
    assert result.metrics["score"]["mean"] > 0
    replay = replace(
        cfg,
        model={"provider": "replay", "cassette": str(result.run_dir / "calls.jsonl")},  # type: ignore[arg-type]
        results_dir=tmp_path / "replayed",
        run_id="replayed",
    )
    replayed = lines((await evaluate(replay, out=io.StringIO())).run_dir / "examples.jsonl")  # the server is gone
    assert [(r["reward"], r["method"]) for r in replayed] == [(r["reward"], r["method"]) for r in got]


async def test_the_dry_run_prices_every_episode_and_value_call_as_an_upper_bound(tmp_path: Path) -> None:
    n = 3
    golds = gold_answers(n)
    with MessagesServer(responder=Sampler(golds)) as server:
        dry = await evaluate(config(server, tmp_path, "dry", n, dry_run=True), out=(said := io.StringIO()))
        assert server.requests == []
        ran = await evaluate(config(server, tmp_path, "ran", n), out=io.StringIO())
    estimate = json.loads((dry.run_dir / "dry_run.json").read_text())
    calls = sum(r["calls"] for r in lines(ran.run_dir / "examples.jsonl"))
    max_steps = 7  # HotpotQA's under protocol=paper
    assert estimate["calls_at_most"] == n * (3 * max_steps + 3) >= calls
    assert estimate["cost_usd"] >= ran.metrics["cost_usd"]["spent"]
    assert f"at most {estimate['calls_at_most']} calls" in said.getvalue()


async def test_best_of_k_goes_through_batch_rounds(tmp_path: Path) -> None:
    """batch=true: every request in a batch, each once; the episodes one round after another
    (3 one-step episodes), their value calls together in the round after: 4 rounds, as the dry
    run's bound for one-step episodes says, and the choices the live run makes."""
    n = 3
    golds = gold_answers(n)
    with MessagesServer(responder=Sampler(golds)) as server:
        server.batch_latency_s = 0.02
        result = await evaluate(
            config(server, tmp_path, "batched", n, batch=True, batch_poll_s=0.01), out=io.StringIO()
        )
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []
        ids = [r["custom_id"] for b in server.batches.values() for r in b.results]
    got = lines(result.run_dir / "examples.jsonl")
    assert [r["prediction"] for r in got] == [golds[r["question"].strip()] for r in got]
    assert all(r["method"]["chosen"] == 1 for r in got)
    assert len(ids) == len(set(ids)) == sum(r["calls"] for r in got) == n * 6
    state = json.loads((result.run_dir / "batches.json").read_text())
    assert max(b["round"] for b in state["batches"]) == 4
