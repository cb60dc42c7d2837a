"""A study's runs in shared batch rounds (issue 58, ``shared_rounds.py``): the runs of a sweep
under ``batch=true`` run at once and one round holds the waiting requests of all of them, so the
study takes the rounds of its longest episode, not the sum over its runs. Against the Messages API
stand-in (batches end a second after they are made), with the responder of test_batch_rounds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from react_bench.testing.messages_server import MessagesServer
from tests.support import REPO, compare_py
from tests.support_oracle import gold_answers
from tests.test_batch_rounds import KEY_ENV, MODEL, Mixed, billed_usd, sent_ids

N = 5


def study_args(server: MessagesServer, results: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        str(REPO / "scripts" / "eval.py"),
        "experiment=paper_table1",
        "prompt=own",
        f"model={MODEL}",
        f"model.base_url={server.base_url}",
        f"model.api_key_env={KEY_ENV}",
        f"n={N}",
        f"results_dir={results}",
        "show=none",
        *extra,
    ]


def runs_of(results: Path) -> dict[str, Path]:
    """task/mode -> run folder (every run of the study)."""
    return {f"{p.parents[3].name}/{p.parent.parent.name}": p.parent for p in results.glob("*/*/*/*/run.json")}


def predictions(run_dir: Path) -> dict[str, tuple[str, bool]]:
    lines = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines() if line]
    return {r["id"]: (r["prediction"], r["correct"]) for r in lines}


def env_for(tmp_path: Path, cache: str) -> dict[str, str]:
    return {**os.environ, KEY_ENV: "test-key-not-real", "REACT_BENCH_REQUEST_CACHE": str(tmp_path / cache)}


def test_paper_table1_batched_shares_rounds_and_equals_the_live_study(tmp_path: Path) -> None:
    golds = gold_answers(N) | gold_answers(N, "fever")
    with MessagesServer(responder=Mixed(golds)) as live_server:
        live = subprocess.run(
            study_args(live_server, tmp_path / "live"),
            env=env_for(tmp_path, "cache-live"),
            capture_output=True,
            text=True,
        )
        assert live.returncode == 0, live.stderr[-3000:]
        live_billed = billed_usd(live_server)
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_latency_s = 1.0
        batched = subprocess.run(
            study_args(server, tmp_path / "batched", "batch=true", "batch_poll_s=1"),
            env=env_for(tmp_path, "cache-batched"),
            capture_output=True,
            text=True,
        )
        assert batched.returncode == 0, batched.stderr[-3000:]
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []  # nothing live
        ids = sent_ids(server)
        batches = len(server.batches)
        billed = billed_usd(server)
    assert "study: 14 run(s) at once" in batched.stdout and " run(s) in 1 batch(es)" in batched.stdout, batched.stdout
    assert batches <= 12, batched.stdout  # alone, one after another: 25
    assert len(ids) == len(set(ids))
    assert billed <= 0.55 * live_billed
    live_runs, batched_runs = runs_of(tmp_path / "live"), runs_of(tmp_path / "batched")
    assert sorted(live_runs) == sorted(batched_runs) and len(live_runs) == 14
    for key, run_dir in batched_runs.items():  # each run as it would be alone: its answers, its folder
        assert predictions(run_dir) == predictions(live_runs[key]), key
        assert (run_dir / "metrics.json").exists()
        if (run_dir / "batches.json").exists():  # none where another run asked all its requests first
            assert all(b["collected"] for b in json.loads((run_dir / "batches.json").read_text())["batches"])
    assert "combined table of sweep" in batched.stdout
    # a run folder of the study compares as a lone run's, and resumes as one (nothing left to do)
    one = batched_runs["hotpotqa/react-text"]
    assert compare_py(one, live_runs["hotpotqa/react-text"], out=tmp_path / "cmp").returncode == 0
    again = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval.py"), f"resume={one}"],
        env=env_for(tmp_path, "cache-batched"),
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0 and "(0 new example(s)" in again.stdout, again.stderr[-2000:]


def test_a_study_killed_during_a_round_resumes_with_nothing_sent_twice(tmp_path: Path) -> None:
    """SIGKILL while a shared round's batch is processing; the same command again (the study's run
    id given, so its folders are found) collects that batch by its id and finishes every run."""
    golds = gold_answers(N) | gold_answers(N, "fever")
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_latency_s = 1.0
        args = study_args(server, tmp_path / "r", "batch=true", "batch_poll_s=0.2", "run_id=study")
        env = env_for(tmp_path, "cache")
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(process.stdout or ()), daemon=True)
        reader.start()
        deadline = time.monotonic() + 180
        # round 2 made, recorded in every run's batches.json (its line is said once all its batches are) and
        # not collected: kill. (A kill between a batch's creation and its record in the runs' files, a window
        # of a few file writes, loses it: its requests are sent again; docstring of RoundBatcher.record_batch.)
        while time.monotonic() < deadline:
            states = [json.loads(p.read_text()) for p in (tmp_path / "r").glob("*/*/*/*/batches.json")]
            made_2 = any(line.startswith("batch round 2") and "batch(es)" in line for line in list(said))
            if made_2 and any(b["round"] == 2 and not b.get("collected") for s in states for b in s["batches"]):
                break
            assert process.poll() is None, said[-20:]
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        made = len(server.batches)
        again = subprocess.run(args, env=env, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr[-3000:]
        ids = sent_ids(server)
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []
    assert made >= 2 and len(ids) == len(set(ids))  # the killed round's batch was collected, not sent again
    runs = runs_of(tmp_path / "r")
    assert len(runs) == 14
    for key, run_dir in runs.items():
        assert len(predictions(run_dir)) == N, key


def test_the_study_budget_stops_its_rounds_and_the_study_goes_on_with_more(tmp_path: Path) -> None:
    """``max_cost_usd`` under shared rounds is the whole study's: once a round would pass it, none is
    submitted (the first round's answers priced the rest); started again with a larger budget, every
    run finishes from where it stopped, the answers already paid for read from the request cache."""
    golds = gold_answers(N) | gold_answers(N, "fever")
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_latency_s = 0.2
        env = env_for(tmp_path, "cache")
        base = study_args(server, tmp_path / "r", "batch=true", "batch_poll_s=0.1", "run_id=budgeted")
        stopped = subprocess.run([*base, "max_cost_usd=0.001"], env=env, capture_output=True, text=True)
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        assert "would pass the study's budget" in stopped.stdout, stopped.stdout[-4000:]
        assert len(server.batches) == 1, stopped.stdout[-4000:]
        unfinished = {k: len(predictions(d)) for k, d in runs_of(tmp_path / "r").items()}
        assert any(n < N for n in unfinished.values())  # the agents' runs waited on a second round
        more = subprocess.run([*base, "max_cost_usd=100"], env=env, capture_output=True, text=True)
        assert more.returncode == 0, more.stderr[-3000:]
        ids = sent_ids(server)
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []
    assert len(ids) == len(set(ids))
    assert all(len(predictions(d)) == N for d in runs_of(tmp_path / "r").values())
