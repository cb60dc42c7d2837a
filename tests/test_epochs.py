"""``epochs=k``: every example attempted k times, each attempt its own record line, cache keys and
seeds; pass@k and pass^k in the metrics; resume per attempt. Against the Messages API stand-in,
with a model that answers like a sampled one: right or wrong by the attempt."""

from __future__ import annotations

import io
import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.metrics import pass_at_k, pass_hat_k
from react_bench.results import format_table
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, task_info
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from tests.support_oracle import gold_answers, question_of

KEY_ENV = "REACT_BENCH_TEST_EPOCHS_KEY"
# per question (in data order), which of its attempts (in the order asked) are answered right
PATTERNS = ((True, True, True, True), (False, True, False, False), (False, False, False, False))


class Sampler:
    """A sampled model's stand-in: the t-th time a question is asked, its pattern's t-th answer."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.golds, self.asked, self.lock = golds, {}, threading.Lock()
        self.order = list(golds)

    def __call__(self, body: dict[str, Any]) -> Reply:
        question = question_of(body)
        with self.lock:
            t = self.asked[question] = self.asked.get(question, -1) + 1
        right = PATTERNS[self.order.index(question)][t % 4]
        return Reply.text(f" I recall it.\nAnswer: {self.golds[question] if right else 'nobody'}")


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def config(server: MessagesServer, tmp_path: Path, run_id: str, **extra: Any) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=3),
        model=claude_model_config(server.base_url, KEY_ENV),  # type: ignore[arg-type]
        solve=SolveSettings(mode="cot", temperature=0.7),
        protocol="custom",
        results_dir=tmp_path,
        run_id=run_id,
        progress=False,
        epochs=4,
        **extra,
    )


def lines(run_dir: Path, name: str = "examples.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def by_subsets(outcomes: list[bool], k: int, how: Any) -> float:
    """pass@k / pass^k by brute force: over every k of the n attempts, whether any / all are right."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(how(s) for s in subsets) / len(subsets)


async def test_four_epochs_give_a_line_per_attempt_and_pass_at_k_and_pass_hat_k(tmp_path: Path, key: None) -> None:
    golds = gold_answers(3)
    with MessagesServer(responder=Sampler(golds)) as server:
        first = await evaluate(config(server, tmp_path, "first"), out=io.StringIO())
        sent = len(server.requests)
        again = await evaluate(config(server, tmp_path, "again"), out=io.StringIO())
        assert len(server.requests) == sent == 12  # every attempt asked once; the rerun asks nothing
    rows = lines(first.run_dir)
    assert sorted((r["id"], r.get("epoch", 1)) for r in rows) == sorted(
        (i, e) for i in {r["id"] for r in rows} for e in (1, 2, 3, 4)
    )
    outcomes: dict[str, list[bool]] = {}
    for r in sorted(rows, key=lambda r: r.get("epoch", 1)):
        outcomes.setdefault(r["id"], []).append(r["correct"])
    assert sorted(sum(o) for o in outcomes.values()) == [0, 1, 4]  # the patterns, attempt by attempt
    summary = first.summary
    assert summary is not None and summary.epochs == 4 and summary.n == 12 and summary.n_planned == 12
    for k in (1, 2, 3, 4):
        any_right = sum(by_subsets(o, k, any) for o in outcomes.values()) / 3
        all_right = sum(by_subsets(o, k, all) for o in outcomes.values()) / 3
        assert summary.pass_at[k].mean == pytest.approx(any_right) and summary.pass_hat[k].mean == pytest.approx(
            all_right
        )
    assert summary.pass_at[1].mean == pytest.approx(summary.scores["em"].mean)  # pass@1 is the mean over attempts
    written = json.loads((first.run_dir / "metrics.json").read_text())
    assert written["pass_at_k"]["4"]["mean"] == pytest.approx(2 / 3) and written["pass_hat_k"]["4"]["mean"] == 1 / 3
    table = format_table(summary, task_info("hotpotqa"))
    assert "pass@4" in table and "pass^4" in table and "4 attempts per example" in table
    # the rerun: every attempt served from the cache, each its own epoch's answer (never another's)
    served = {(r["id"], r.get("epoch", 1)): r["prediction"] for r in lines(again.run_dir)}
    assert served == {(r["id"], r.get("epoch", 1)): r["prediction"] for r in rows}
    assert again.metrics["request_cache"] == {"hits": 12, "misses": 0}
    cassette = lines(first.run_dir, "calls.jsonl")
    assert sorted(c.get("epoch", 1) for c in cassette) == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    # Table 1 shows them beside the mean over attempts; the two runs pair on their first attempts
    from react_bench.studies import load_runs, paired, table1

    runs = load_runs([tmp_path])
    grid, _ = table1(runs)
    (cell,) = [c for c in grid[grid["mode"] == "cot"]["HotpotQA EM"] if c]
    assert "pass@4 66.7, pass^4 33.3" in cell
    (pair,) = paired(runs)
    assert pair["n"] == 3 and pair["difference"] == 0.0


async def test_a_resumed_run_finishes_the_missing_attempts_only(tmp_path: Path, key: None) -> None:
    golds = gold_answers(3)
    with MessagesServer(responder=Sampler(golds)) as server:
        whole = await evaluate(config(server, tmp_path, "whole", request_cache="off"), out=io.StringIO())
        cut = await evaluate(config(server, tmp_path, "cut", request_cache="off"), out=io.StringIO())
        for name in ("examples.jsonl", "calls.jsonl"):  # a crash after 5 attempts (and a torn 6th line)
            path = cut.run_dir / name
            kept = path.read_text().splitlines(keepends=True)
            path.write_text("".join(kept[:5]) + kept[5][:20])
        asked = len(server.requests)
        resumed = await evaluate(config(server, tmp_path, "cut", request_cache="off", resume=True), out=io.StringIO())
        assert resumed.n_new == 7 and len(server.requests) == asked + 7  # no attempt run twice, none lost
    keys = [(r["id"], r.get("epoch", 1)) for r in lines(resumed.run_dir)]
    assert len(keys) == len(set(keys)) == 12
    assert resumed.summary is not None and whole.summary is not None
    assert resumed.summary.n == 12 and set(resumed.summary.pass_at) == {1, 2, 3, 4}


def test_pass_at_k_and_pass_hat_k_match_their_definitions() -> None:
    for n, c in ((4, 0), (4, 1), (4, 4), (5, 2), (10, 3)):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(by_subsets(outcomes, k, any))
            assert pass_hat_k(n, c, k) == pytest.approx(by_subsets(outcomes, k, all))
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
