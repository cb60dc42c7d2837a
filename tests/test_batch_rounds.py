"""batch=true for every mode: the run's requests in rounds through the Message Batches API (batch.py).

The Messages API stand-in answers batches (after ``batch_latency_s`` where a test sets it) and
bills each answer as the API does: half price for a batch's, prompt-cache reads and writes
included. A deterministic responder (it reads only the request body) makes a live run and a
batched run comparable answer for answer: each question's agent walk has its own length (2 to 8
steps; 8 passes the step cap), and some questions get no answer from a single call (CoT-SC
then abstains, and cot_sc_react goes on to ReAct).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.models.capabilities import calls_cost_usd
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import Walk, WalkResponder, asks_a_step, question_of
from react_bench.types import Usage
from tests.support import REPO, eval_without_a_key
from tests.support_oracle import gold_answers

KEY_ENV = "REACT_BENCH_TEST_BATCH_KEY"
MODEL = "claude-sonnet-4-6"
VOLATILE = {
    "wall_s",
    "cost_usd",
    "saved_usd",
    "usage",
    "timeline",
}  # time, and how the prompt cache fell and calls were served


class Mixed:
    """Answers from the request body alone (module docstring)."""

    def __init__(self, golds: dict[str, str]) -> None:
        self.golds = golds
        self.walks = {k: WalkResponder(Walk(steps=k, answers=golds)) for k in range(2, 9)}

    def __call__(self, body: dict[str, Any]) -> Reply:
        question = question_of(body).strip()
        h = sum(map(ord, question))
        if asks_a_step(body):
            return self.walks[2 + h % 7](body)
        if h % 3 == 0:
            return Reply.text(" I am not sure.")  # no answer label: the sample abstains
        return Reply.text(f" I recall it.\nAnswer: {self.golds.get(question, 'unknown')}")


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def config(server: MessagesServer, tmp_path: Path, run_id: str, n: int, mode: str, runner: str, **extra) -> RunConfig:
    model = claude_model_config(server.base_url, KEY_ENV, MODEL, **extra.pop("model", {}))
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model=model,  # type: ignore[arg-type]
        solve=SolveSettings(mode=mode, runner=runner),  # type: ignore[arg-type]
        results_dir=tmp_path,
        run_id=run_id,
        progress=False,
        **extra,
    )


def records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "examples.jsonl").read_text().splitlines()
    return {r["id"]: r for r in (json.loads(line) for line in lines)}


def steady(value: Any) -> Any:
    """A record without what may differ between two runs of the same answers (``VOLATILE``, and
    the tool-use ids the API makes up for each response)."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return "toolu_" if isinstance(value, str) and value.startswith("toolu_") else value


def billed_usd(server: MessagesServer) -> float:
    """What the stand-in billed: a batch's answers at half price."""
    full = calls_cost_usd(MODEL, [Usage.from_dict(b["usage"]) for b in server.billed if not b["batch"]])
    half = calls_cost_usd(MODEL, [Usage.from_dict(b["usage"]) for b in server.billed if b["batch"]])
    assert full is not None and half is not None
    return full + 0.5 * half


def sent_ids(server: MessagesServer) -> list[str]:
    return [r["custom_id"] for b in server.batches.values() for r in b.results]


async def live_and_batched(tmp_path, monkeypatch, n: int, mode: str, runner: str, **batch_extra):
    """The same run live, then batched; each against its own stand-in and request cache."""
    golds = gold_answers(n)
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache-live"))
    with MessagesServer(responder=Mixed(golds)) as server:
        live = await evaluate(config(server, tmp_path, "live", n, mode, runner, concurrency=8), out=io.StringIO())
        live_billed = billed_usd(server)
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache-batch"))
    out = io.StringIO()
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_latency_s = 0.05
        batched = await evaluate(
            config(server, tmp_path, "batch", n, mode, runner, batch=True, batch_poll_s=0.01, **batch_extra), out=out
        )
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []  # every request in a batch
        ids = sent_ids(server)
        state = json.loads((batched.run_dir / "batches.json").read_text())
        return live, batched, live_billed, billed_usd(server), ids, state, out.getvalue()


async def test_a_react_run_of_100_questions_in_rounds_is_the_live_run_at_half_price(tmp_path, monkeypatch):
    live, batched, live_billed, batch_billed, ids, state, out = await live_and_batched(
        tmp_path, monkeypatch, 100, "react", "text"
    )
    before, after = records(live.run_dir), records(batched.run_dir)
    assert len(after) == 100 and after.keys() == before.keys()
    assert {k: steady(v) for k, v in after.items()} == {k: steady(v) for k, v in before.items()}
    calls = sum(r["calls"] for r in after.values())
    assert len(ids) == len(set(ids)) == calls  # each request sent once, each in a batch
    assert batch_billed <= 0.55 * live_billed
    assert batched.metrics["cost_usd"]["spent"] == pytest.approx(batch_billed)  # what the run says it spent
    longest = max(r["calls"] for r in after.values())
    rounds = {b["round"] for b in state["batches"]}
    assert rounds == set(range(1, len(rounds) + 1)) and len(rounds) <= longest + 1
    assert f"batch round {len(rounds)}/7: " in out and all(b["collected"] for b in state["batches"])  # of 7 at most


@pytest.mark.parametrize(
    ("mode", "runner"),
    [
        ("react", "tool_use"),
        ("act", "text"),
        ("react_cot_sc", "text"),
        ("cot_sc_react", "tool_use"),
        ("reflexion", "text"),
    ],
)
async def test_every_mode_and_runner_in_rounds_gives_the_live_predictions(tmp_path, monkeypatch, mode, runner):
    n = 8
    live, batched, live_billed, batch_billed, ids, state, _ = await live_and_batched(
        tmp_path, monkeypatch, n, mode, runner
    )
    before, after = records(live.run_dir), records(batched.run_dir)
    assert {k: steady(v) for k, v in after.items()} == {k: steady(v) for k, v in before.items()}
    assert len(ids) == len(set(ids))
    assert batch_billed <= 0.55 * live_billed
    assert batched.metrics["cost_usd"]["spent"] == pytest.approx(batch_billed)
    if mode == "cot_sc_react":  # every question's 21 samples in the first round, together
        (first,) = [b for b in state["batches"] if b["round"] == 1]
        assert len(first["requests"]) == 21 * n
        backed_off = [r for r in after.values() if r["backoff"]]
        assert backed_off  # some went on to ReAct, in the rounds after
    if mode == "reflexion":
        assert any(len(r["method"]["trials"]) > 1 for r in after.values())


async def test_a_request_that_fails_in_a_batch_goes_into_the_next_round(tmp_path, monkeypatch):
    golds = gold_answers(4)
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_expire = 2  # the first two requests of the first batch come back expired
        result = await evaluate(
            config(server, tmp_path, "x", 4, "react", "text", batch=True, batch_poll_s=0.01), out=io.StringIO()
        )
        ids = sent_ids(server)
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []
    done = records(result.run_dir)
    assert len(done) == 4 and result.metrics["errors"] == 0
    first = next(iter(server.batches.values())).results
    expired = [r["custom_id"] for r in first if r["result"]["type"] == "expired"]
    assert len(expired) == 2 and all(ids.count(cid) == 2 for cid in expired)  # sent again, once


async def test_a_request_that_fails_in_two_rounds_is_sent_live(tmp_path):
    golds = gold_answers(2)
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_expire = 4  # both first requests expire in rounds 1 and 2
        result = await evaluate(
            config(server, tmp_path, "x", 2, "react", "text", batch=True, batch_poll_s=0.01), out=io.StringIO()
        )
        live = [r for r in server.requests if r.path == "/v1/messages"]
    assert len(live) == 2 and result.metrics["errors"] == 0  # then live, through the retry layer
    assert len(records(result.run_dir)) == 2
    spent = result.metrics["cost_usd"]["spent"]
    assert spent == pytest.approx(billed_usd(server))  # the live answers at full price, the batch's at half


@pytest.mark.parametrize("restated", [True, False], ids=["settings-restated", "resume-alone"])
def test_killed_mid_round_and_resumed_sends_nothing_twice_and_loses_nothing(tmp_path, restated):
    """A real kill (SIGKILL) while round 2's batch is processing; the resumed run collects that
    batch by its id and goes on: every request was sent once, every example is there. Resumed with
    ``resume=<dir>`` alone it stays batched (issue 58: it went on live, at full price)."""
    n = 8
    golds = gold_answers(n)
    env = {**os.environ, KEY_ENV: "test-key-not-real", "REACT_BENCH_REQUEST_CACHE": str(tmp_path / "cache")}
    with MessagesServer(responder=Mixed(golds)) as server:
        server.batch_latency_s = 1.0
        args = [
            sys.executable,
            str(REPO / "scripts" / "eval.py"),
            f"model={MODEL}",
            f"model.base_url={server.base_url}",
            f"model.api_key_env={KEY_ENV}",
            f"n={n}",
            "batch=true",
            "batch_poll_s=0.05",
            f"results_dir={tmp_path / 'results'}",
            "run_id=killed",
            "progress=false",
        ]
        process = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        state_file = tmp_path / "results" / "hotpotqa" / MODEL / "react-text" / "killed" / "batches.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = json.loads(state_file.read_text()) if state_file.exists() else {"batches": []}
            if any(b["round"] == 2 and not b.get("collected") for b in state["batches"]):
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait()
        written = state_file.parent / "examples.jsonl"
        assert len(server.batches) == 2 and (not written.exists() or written.read_text() == "")
        again = [*args, f"resume={state_file.parent}"] if restated else [*args[:2], f"resume={state_file.parent}"]
        resumed = subprocess.run(again, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        ids = sent_ids(server)
        assert [r.path for r in server.requests if r.path == "/v1/messages"] == []
    assert len(ids) == len(set(ids))  # no request sent twice: round 2 was collected, not sent again
    done = records(state_file.parent)
    assert len(done) == n and sum(r["calls"] for r in done.values()) == len(ids)
    for record in done.values():  # the walk's own answer: the gold where it finishes within the cap
        steps = 2 + sum(map(ord, record["question"].strip())) % 7
        assert record["prediction"] == (golds[record["question"].strip()] if steps <= 7 else "")


async def test_rounds_minutes_apart_keep_the_prompt_cache_with_the_1h_lifetime(tmp_path, monkeypatch):
    """Each batch is taken 10 minutes after the last (the stand-in's cache clock): the 5-minute
    cache is gone by the next round; the shared exemplars, written for an hour, are read in every
    round; both are billed as the API bills (a 1-hour write at twice the input rate)."""
    golds = gold_answers(6)
    billed = {}
    for ttl in ("auto", "5m"):
        monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / f"cache-{ttl}"))
        with MessagesServer(responder=Mixed(golds)) as server:
            now = [0.0]
            server.cache.clock = lambda now=now: now[0]
            made = server._new_batch

            def later(requests: list[dict], made=made, now=now) -> Any:
                now[0] += 600
                return made(requests)

            server._new_batch = later  # type: ignore[method-assign]
            cfg = config(
                server, tmp_path, ttl, 6, "react", "text", batch=True, batch_poll_s=0.01, model={"cache_ttl": ttl}
            )
            result = await evaluate(cfg, out=io.StringIO())
            sent = [r.body for r in server.requests if r.path == "/v1/messages/batches"]
            markers = {
                json.dumps(block["cache_control"], sort_keys=True)
                for body in sent
                for request in body["requests"]
                for message in request["params"]["messages"]
                for block in message["content"]
                if isinstance(block, dict) and "cache_control" in block
            }
            usage = sum((Usage.from_dict(b["usage"]) for b in server.billed), Usage())
            billed[ttl] = (billed_usd(server), usage, markers, result.metrics["cost_usd"]["spent"])
    one_hour, five_minutes = billed["auto"], billed["5m"]
    # the exemplars every question shares for an hour, each episode's own turns for 5 minutes
    assert one_hour[2] == {'{"ttl": "1h", "type": "ephemeral"}', '{"type": "ephemeral"}'}
    assert five_minutes[2] == {'{"type": "ephemeral"}'}
    assert 0 < one_hour[1].cache_creation_1h_input_tokens < one_hour[1].cache_creation_input_tokens
    assert one_hour[1].cache_read_input_tokens > five_minutes[1].cache_read_input_tokens  # read across rounds
    assert one_hour[0] < five_minutes[0]  # cheaper, although each write costs more
    for usd, _, _, spent in billed.values():
        assert spent == pytest.approx(usd)  # the run prices the 1-hour writes as the stand-in billed them


def test_a_dry_run_with_batch_prices_half_and_counts_rounds(tmp_path):
    done = eval_without_a_key(
        "model=claude-haiku-4-5",
        "mode=react_cot_sc",
        "n=3",
        "dry_run=true",
        "batch=true",
        f"results_dir={tmp_path}",
        "run_id=dry",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(next(tmp_path.rglob("dry_run.json")).read_text())
    batch = summary["batch"]
    assert 0 < batch["cost_usd"] <= 0.55 * summary["cost_usd"]
    assert batch["rounds_at_most"] == 8 and batch["hours"] == 8 * 30 / 60 and batch["cache_ttl"] == "1h"
    assert "batch=true: $" in done.stdout and "at an assumed 30 minutes a round" in done.stdout


async def test_epochs_go_in_the_same_rounds_each_attempt_its_own_request(tmp_path):
    with MessagesServer(responder=lambda body: Reply.text(" I recall.\nAnswer: x")) as server:
        cfg = config(server, tmp_path, "e", 3, "cot", "text", batch=True, batch_poll_s=0.01, epochs=3)
        result = await evaluate(replace(cfg, protocol="custom"), out=io.StringIO())
        ids = sent_ids(server)
    assert result.metrics["n"] == 9 and len(server.batches) == 1 and len(set(ids)) == len(ids) == 9


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_an_openai_server_with_the_batch_api_takes_the_rounds(tmp_path, monkeypatch, runner):
    """The same rounds through /v1/files and /v1/batches (completions for the text runner's
    prompts, chat completions for tool use): the live run's predictions, no request sent twice."""
    from react_bench.testing.openai_server import Chunks, OpenAIServer, model_config, oracle_chunks

    golds = gold_answers(5)
    walk = Walk(steps=3, answers=golds)
    runs = {}
    for batch in (False, True):
        monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / f"cache-{batch}"))
        with OpenAIServer(lambda path, body: Chunks(tuple(oracle_chunks(walk, path, body)))) as server:
            cfg = RunConfig(
                task=TaskConfig(name="hotpotqa", n=5),
                model=model_config(server.base_url),  # type: ignore[arg-type]
                solve=SolveSettings(mode="react", runner=runner),  # type: ignore[arg-type]
                results_dir=tmp_path,
                run_id=f"openai-{batch}",
                progress=False,
                batch=batch,
                batch_poll_s=0.01,
            )
            result = await evaluate(cfg, out=io.StringIO())
            streamed = [p for p, _ in server.requests if p.endswith("completions")]
            runs[batch] = (records(result.run_dir), streamed, server.batch_custom_ids(), len(server.batch_state))
    (live, live_streamed, _, _), (batched, streamed, ids, n_batches) = runs[False], runs[True]
    assert {k: steady(v) for k, v in batched.items()} == {k: steady(v) for k, v in live.items()}
    assert len(live_streamed) == 15 and streamed == []  # every request of the batched run in a batch
    assert len(ids) == len(set(ids)) == 15 and n_batches == 3  # 3 steps: 3 rounds


async def test_an_openai_compatible_server_without_the_batch_api_is_refused_in_one_line(tmp_path):
    from react_bench.errors import ConfigError
    from react_bench.testing.openai_server import Chunks, OpenAIServer, model_config, oracle_chunks

    walk = Walk(steps=2)
    with OpenAIServer(lambda path, body: Chunks(tuple(oracle_chunks(walk, path, body))), batches=False) as server:
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=2),
            model=model_config(server.base_url),  # type: ignore[arg-type]
            solve=SolveSettings(mode="react"),
            results_dir=tmp_path,
            run_id="refused",
            progress=False,
            batch=True,
        )
        with pytest.raises(ConfigError, match=r"has no Batch API \(/v1/batches\)"):
            await evaluate(cfg, out=io.StringIO())
        assert not [p for p, _ in server.requests if p.endswith("completions")]  # nothing ran live instead


@pytest.mark.slow  # the generated games are built first (about a minute, once per session)
async def test_react_im_on_generated_alfworld_games_in_rounds(tmp_path, monkeypatch):
    """ReAct-IM on generated ALFWorld games (the game engine stepping between rounds): the live
    run's trajectories, every request in a batch."""
    from react_bench.tasks.alfworld import AlfworldConfig
    from tests.support import composed

    moves = (" look", " inventory", " think: To solve the task, I need to find the goal first.")

    def respond(body: dict[str, Any]) -> Reply:  # a function of the conversation's text alone
        said = [b.get("text", "") for m in body["messages"] for b in m["content"] if isinstance(b, dict)]
        return Reply.text(moves[len("".join(said)) % len(moves)])

    runs = {}
    for batch in (False, True):
        monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / f"cache-{batch}"))
        with MessagesServer(responder=respond) as server:
            base = RunConfig.from_mapping(
                composed("task=alfworld", "mode=react_im", "protocol=custom", "max_steps=5", "n=3")
            )
            cfg = replace(
                base,
                env=AlfworldConfig(games=12, train_games=18, seed=0),
                model=claude_model_config(server.base_url, KEY_ENV, MODEL),  # type: ignore[arg-type]
                results_dir=tmp_path,
                run_id=f"im-{batch}",
                progress=False,
                batch=batch,
                batch_poll_s=0.01,
            )
            result = await evaluate(cfg, out=io.StringIO())
            streamed = [r.path for r in server.requests if r.path == "/v1/messages"]
            runs[batch] = (records(result.run_dir), streamed, sent_ids(server))
    (live, _, _), (batched, streamed, ids) = runs[False], runs[True]
    assert len(batched) == 3 and [r["steps"] for r in batched.values()] == [5, 5, 5]
    assert {k: steady(v) for k, v in batched.items()} == {k: steady(v) for k, v in live.items()}
    assert streamed == [] and len(ids) == len(set(ids)) == sum(r["calls"] for r in batched.values())


async def test_the_budget_stops_the_rounds_and_resume_goes_on(tmp_path, monkeypatch):
    """max_cost_usd: no round goes once it would pass the budget; the examples waiting are left
    unrecorded (exit 4's count); resumed with a larger budget, the run finishes, and no request
    was sent twice (the answers paid for come from the request cache)."""
    n = 8
    golds = gold_answers(n)
    with MessagesServer(responder=Mixed(golds)) as server:
        whole = await evaluate(
            config(server, tmp_path, "whole", n, "react", "text", batch=True, batch_poll_s=0.01), out=io.StringIO()
        )
        full = whole.metrics["cost_usd"]["spent"]
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache-budget"))
    with MessagesServer(responder=Mixed(golds)) as server:
        limit = 0.8 * full
        out = io.StringIO()
        stopped = await evaluate(
            config(server, tmp_path, "b", n, "react", "text", batch=True, batch_poll_s=0.01, max_cost_usd=limit),
            out=out,
        )
        assert 0 < stopped.n_over_budget < n and "no more rounds" in out.getvalue()
        spent = stopped.metrics["cost_usd"]["spent"]
        assert spent <= limit and billed_usd(server) <= limit  # what the records say, and what was billed
        resumed = await evaluate(
            config(
                server,
                tmp_path,
                "b",
                n,
                "react",
                "text",
                batch=True,
                batch_poll_s=0.01,
                max_cost_usd=2 * full,
                resume=True,
            ),
            out=io.StringIO(),
        )
        ids = sent_ids(server)
    assert resumed.n_over_budget == 0 and len(records(resumed.run_dir)) == n
    assert len(ids) == len(set(ids))  # nothing sent twice across the two runs
    assert resumed.metrics["cost_usd"]["spent"] == pytest.approx(billed_usd(server))
