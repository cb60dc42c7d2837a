"""The judge beside exact match (issue 67, ``grading/judge.py``): SimpleQA's grader filled byte for
byte and sent once per answered miss, against the Messages API stand-in; verdicts beside the run,
never in examples.jsonl; a replay sends nothing; an unreachable judge invents nothing (exit 3) and
``scripts/judge.py batch=true`` judges the rest; the rule tier sends nothing."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench import upstream
from react_bench.grading.judge import TEMPLATE, fill, parse_verdict
from react_bench.grading.rules import rules_verdict
from react_bench.metrics import exact_match
from react_bench.testing.messages_server import MessagesServer
from react_bench.testing.sse import Reply
from tests.support import REPO, eval_py, records, run_dir_of

KEY_ENV = "JUDGE_TEST_KEY"
N = 5


@pytest.fixture(scope="module")
def template() -> str:
    try:
        return upstream.text(TEMPLATE)
    except upstream.UpstreamError:
        pytest.skip(
            f"needs {upstream.pinned('simpleqa/simpleqa_eval.py').label}: set REACT_BENCH_GITHUB to a host serving it"
        )


def judge_fields(body: dict) -> tuple[str, str, str]:
    text = (
        body["messages"][0]["content"][0]["text"]
        if isinstance(body["messages"][0]["content"], list)
        else body["messages"][0]["content"]
    )
    tail = text.rsplit("```\nQuestion: ", 1)[1]
    question, rest = tail.split("\nGold target: ", 1)
    gold, rest = rest.split("\nPredicted answer: ", 1)
    return question, gold, rest.split("\n```", 1)[0]


def lenient(body: dict) -> Reply:
    """A judge that accepts a prediction holding the gold (A) and rejects the rest (B)."""
    _, gold, predicted = judge_fields(body)
    return Reply.text("A" if gold.lower() in predicted.lower() else "B")


def chosen(n: int = N) -> list:
    """The first ``n`` examples whose gold is a name of 6 characters or more (not yes / no): the near
    misses below then read the same on the prepared data and on the data a clone alone generates."""
    from react_bench.tasks import TaskConfig, load_task

    pool = load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=60))
    found = [e for e in pool if len(e.gold) >= 6 and e.gold.lower() not in ("yes", "no")][:n]
    assert len(found) == n
    return found


def script(tmp_path: Path) -> tuple[Path, list[str]]:
    """Predictions for N chosen questions: a hit, a near miss (the gold and a word), a wrong one, an
    empty one, and a hit again (scripted completions, served in the order of ``ids``)."""
    golds = [e.gold for e in chosen()]
    predictions = [golds[0], f"{golds[1]} indeed", "Nobody knows", "", golds[4]]
    path = tmp_path / "script.json"
    path.write_text(json.dumps([f" I know it.\nAction 1: Finish[{p}]" for p in predictions]))
    ids = "ids=[" + ",".join(e.id for e in chosen()) + "]"
    return path, [f"model.script={path}", ids, f"n={N}"]


def scripted_run(tmp_path: Path, *extra: str) -> Path:
    _, args = script(tmp_path)
    done = eval_py("model=scripted", *args, f"results_dir={tmp_path / 'runs'}", "show=none", *extra)
    assert done.returncode == 0, done.stderr[-2000:]
    return run_dir_of(done.stdout)


def judged(server: MessagesServer) -> list[dict]:
    return [r.body for r in server.requests if r.path == "/v1/messages"]


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def test_a_replay_judged_by_claude_asks_each_answered_miss_once_and_a_replay_of_it_sends_nothing(
    tmp_path: Path, template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    first = scripted_run(tmp_path)
    rows = records(first)
    misses = [r for r in rows if not exact_match(r["prediction"], r["gold"]) and r["prediction"].strip()]
    assert len(misses) == 2 and sum(exact_match(r["prediction"], r["gold"]) for r in rows) == 2
    with MessagesServer(responder=lenient) as server:
        judge = ["judge=claude-sonnet-4-6", f"judge.base_url={server.base_url}", f"judge.api_key_env={KEY_ENV}"]
        done = eval_py(
            "model=replay",
            f"model.cassette={first / 'calls.jsonl'}",
            f"results_dir={tmp_path / 'r'}",
            "show=none",
            *judge,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        bodies = judged(server)
        # every answered miss exactly once, no hit, no empty answer; SimpleQA's template filled byte for byte
        expected = sorted(fill(template, r["question"], r["gold"], r["prediction"]) for r in misses)
        assert (
            sorted(
                b["messages"][0]["content"][0]["text"]
                if isinstance(b["messages"][0]["content"], list)
                else b["messages"][0]["content"]
                for b in bodies
            )
            == expected
        )
        assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" and "system" not in b for b in bodies)
        replay = run_dir_of(done.stdout)
        verdicts = [json.loads(line) for line in (replay / "judged.jsonl").read_text().splitlines()]
        assert {v["by"] for v in verdicts} == {"exact_match", "empty", "judge"}
        asked = [v for v in verdicts if v["by"] == "judge"]
        assert all(v["model"] == "claude-sonnet-4-6" and len(v["prompt_sha256"]) == 64 for v in asked)
        m = metrics(replay)
        accepted = sum(v["verdict"] == "CORRECT" for v in asked)
        assert accepted == 1 and m["judge"]["accepted_misses"] == 1 and m["judge"]["rejected_hits"] == 0
        assert m["judged"]["mean"] == pytest.approx((2 + accepted) / N) and "judged" in m["metrics"]
        assert m["em"]["mean"] == pytest.approx(2 / N)
        assert "judged by claude-sonnet-4-6" in done.stdout and "1 miss(es) accepted" in done.stdout
        # a replay of the judged run sends nothing: its verdicts come with its cassette's run
        sent = len(server.requests)
        again = eval_py(
            "model=replay",
            f"model.cassette={replay / 'calls.jsonl'}",
            f"results_dir={tmp_path / 'r2'}",
            "show=none",
            "cache=false",
            *judge,
        )
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(server.requests) == sent
        assert metrics(run_dir_of(again.stdout))["judged"] == m["judged"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_judge_invents_nothing_and_judge_py_judges_the_rest_in_a_batch(
    tmp_path: Path, template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    down = f"http://127.0.0.1:{free_port()}"
    _, args = script(tmp_path)
    done = eval_py(
        "model=scripted", *args, f"results_dir={tmp_path / 'runs'}", "show=none",
        "judge=claude-sonnet-4-6", f"judge.base_url={down}", f"judge.api_key_env={KEY_ENV}",
    )  # fmt: skip
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "2 example(s) not judged" in done.stderr
    run = run_dir_of(done.stdout)
    assert not any(json.loads(line)["by"] == "judge" for line in (run / "judged.jsonl").read_text().splitlines())
    m = metrics(run)
    assert "judged" not in m and m["judge"]["unjudged"] == 2
    before = (run / "examples.jsonl").read_bytes()
    with MessagesServer(responder=lenient) as server:
        server.batch_latency_s = 0.2
        later = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "judge.py"), str(run), "judge=claude-sonnet-4-6",
             f"judge.base_url={server.base_url}", f"judge.api_key_env={KEY_ENV}", "batch=true", "batch_poll_s=0.1"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert later.returncode == 0, later.stderr[-2000:]
        assert judged(server) == [] and len(server.batches) == 1  # through the Batches API, nothing live
        assert sum(len(b.results) for b in server.batches.values()) == 2
    assert (run / "examples.jsonl").read_bytes() == before
    m = metrics(run)
    assert m["judge"]["unjudged"] == 0 and m["judged"]["mean"] == pytest.approx(3 / N)
    assert all(
        v["cost_usd"] is not None
        for v in map(json.loads, (run / "judged.jsonl").read_text().splitlines())
        if v["by"] == "judge"
    )


def test_the_rule_tier_sends_nothing_and_is_called_a_heuristic(tmp_path: Path) -> None:
    with MessagesServer(responder=lenient) as server:
        run = scripted_run(tmp_path, "judge=rules", f"judge.base_url={server.base_url}")
        assert server.requests == []
    m = metrics(run)
    assert "rules" in m and "judged" not in m and m["rules"]["mean"] == pytest.approx(3 / N)
    assert not (run / "judged.jsonl").exists() and (run / "rules.jsonl").is_file()


def test_a_reply_is_read_strictly() -> None:
    assert [parse_verdict(r) for r in ("A", " B\n", "C.", "CORRECT", "not attempted")] == [
        "CORRECT", "INCORRECT", "NOT_ATTEMPTED", "CORRECT", "NOT_ATTEMPTED"
    ]  # fmt: skip
    # SimpleQA's own code would take the first A anywhere, or fall back to C: here, unreadable
    assert [parse_verdict(r) for r in ("The answer is A", "", "AB", "Grade: B because")] == [None] * 4


@pytest.mark.parametrize(
    ("prediction", "gold", "verdict"),
    [
        ("house of habsburg", "House of Habsburg-Lorraine", "CORRECT"),
        ("las vegas nevada", "Las Vegas", "CORRECT"),
        ("lupe ontiveros", "Guadalupe 'Lupe' Ontiveros", "CORRECT"),
        ("Stone Brewing Co.", "Stone Brewing", "CORRECT"),
        ("twenty one", "21", "CORRECT"),
        ("Paris, London, Berlin, Madrid and Rome", "Paris", "INCORRECT"),  # the length guard
        ("Anne", "Anne Perry", "INCORRECT"),
        ("no", "no way", "INCORRECT"),
        ("", "Paris", "NOT_ATTEMPTED"),
    ],
)
def test_the_rules(prediction: str, gold: str, verdict: str) -> None:
    assert rules_verdict(prediction, gold) == verdict


def test_compare_says_when_two_runs_rank_one_way_by_exact_match_and_the_other_judged(tmp_path: Path) -> None:
    """A: 2 hits, 3 wrong. B: 1 hit, 3 near misses the rule tier accepts, 1 wrong. Exact match
    ranks A first, the second reading B: compare.py says so in one line, and gives both tests."""
    from tests.support import compare_py

    picked = chosen()
    ids = "[" + ",".join(e.id for e in picked) + "]"
    golds = {e.id: e.gold for e in picked}

    def run(name: str, answers: list[str]) -> Path:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps([f" So.\nAction 1: Finish[{a}]" for a in answers]))
        done = eval_py(
            "model=scripted", f"model.script={path}", f"ids={ids}", "n=5", f"results_dir={tmp_path / 'runs'}",
            f"run_id={name}", "show=none", "judge=rules",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        folder = run_dir_of(done.stdout)
        by_id = {r["id"]: r["prediction"] for r in records(folder)}
        assert sorted(by_id.values()) == sorted(answers)  # served in the order of ids
        return folder

    g = [golds[e.id] for e in picked]
    a = run("a", [g[0], g[1], "Nobody", "Nobody", "Nobody"])
    b = run("b", [g[0], f"{g[1]} city", f"{g[2]} city", f"{g[3]} city", "Nobody"])
    assert (
        metrics(a)["em"]["mean"] > metrics(b)["em"]["mean"]
        and metrics(a)["rules"]["mean"] < metrics(b)["rules"]["mean"]
    )
    done = compare_py(a, b, out=tmp_path / "study")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rank one way under em" in done.stdout and "and the other rules" in done.stdout
    table = (tmp_path / "study" / "table1.md").read_text()
    assert "HotpotQA EM rules (heuristic)" in table and "+3 misses accepted" in table
    assert "# Paired comparisons judged" in (tmp_path / "study" / "paired.md").read_text()


def test_a_reply_that_is_no_grade_is_recorded_unreadable_and_counted(
    tmp_path: Path, template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=lambda body: Reply.text("I would say A, probably")) as server:
        run = scripted_run(
            tmp_path, "judge=claude-sonnet-4-6", f"judge.base_url={server.base_url}", f"judge.api_key_env={KEY_ENV}"
        )
        assert len(judged(server)) == 2
    asked = [v for v in map(json.loads, (run / "judged.jsonl").read_text().splitlines()) if v["by"] == "judge"]
    assert [v["verdict"] for v in asked] == [None, None] and asked[0]["reply"] == "I would say A, probably"
    m = metrics(run)
    assert m["judge"]["unreadable"] == 2 and m["judge"]["unjudged"] == 0
    assert m["judged"]["mean"] == pytest.approx(2 / N)  # never guessed: only the hits by rule are right


def strict(body: dict) -> Reply:
    """A judge that accepts the gold itself and nothing else."""
    _, gold, predicted = judge_fields(body)
    return Reply.text("A" if gold.strip().lower() == predicted.strip().lower() else "B")


@pytest.mark.parametrize(("responder", "holds"), [(strict, True), (lenient, False)])
def test_the_audit_holds_the_judge_to_the_null_oracle_and_candidate_agents(
    tmp_path: Path, template: str, monkeypatch: pytest.MonkeyPatch, responder, holds: bool
) -> None:
    """A judge that credits an answer listing every candidate is caught by the candidates check."""
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=responder) as server:
        done = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "audit.py"), "task=hotpotqa", "n=10", f"out={tmp_path}",
             "judge=claude-sonnet-4-6", f"judge.base_url={server.base_url}", f"judge.api_key_env={KEY_ENV}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr[-2000:]
        asked = len(judged(server))
    checks = json.loads((tmp_path / "audit.json").read_text())["checks"]
    assert asked >= 20  # "unknown" and the gold for each of the 10, and the candidate lists
    assert checks["oracle"]["scores"]["judge"] == 100.0
    assert checks["candidates"]["ok"] is holds
    if holds:
        assert checks["null"]["scores"]["unknown"]["judge"] == 0.0
    else:  # it credits every list holding the gold (and "unknown" where the gold is "no": it is in it)
        assert all("judge" in d["credited_by"] for d in checks["candidates"]["credited"])


def test_the_dry_run_prices_the_judge(tmp_path: Path, template: str) -> None:
    from tests.support import eval_without_a_key

    done = eval_without_a_key(
        "model=claude-sonnet-4-6", "dry_run=true", "n=4", f"results_dir={tmp_path}", "judge=claude-haiku-4-5"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "judge: at most 4 calls to claude-haiku-4-5" in done.stdout
    summary = json.loads(next(tmp_path.rglob("dry_run.json")).read_text())
    assert summary["judge"]["calls_at_most"] == 4 and summary["judge"]["cost_usd"] > 0
    assert summary["judge"]["input_tokens"] > 4 * len(template) // 5  # the template, filled, each time


def test_a_judging_killed_while_its_batch_runs_collects_that_batch_the_next_time(
    tmp_path: Path, template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    run = scripted_run(tmp_path)
    with MessagesServer(responder=lenient) as server:
        server.batch_latency_s = 3.0
        command = [
            sys.executable, "-u", str(REPO / "scripts" / "judge.py"), str(run), "judge=claude-sonnet-4-6",
            f"judge.base_url={server.base_url}", f"judge.api_key_env={KEY_ENV}", "batch=true", "batch_poll_s=0.2",
        ]  # fmt: skip
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert first.stdout is not None
        for line in first.stdout:
            if line.startswith("judge: batch ") and "request(s)" in line:
                break
        first.kill()
        first.wait(timeout=60)
        assert len(server.batches) == 1 and not (run / "judged.jsonl").read_text().count('"by": "judge"')
        again = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(server.batches) == 1 and judged(server) == []  # collected by its id, nothing sent again
    assert "collected by id" in again.stdout
    assert metrics(run)["judge"]["unjudged"] == 0 and metrics(run)["judged"]["mean"] == pytest.approx(3 / N)
