"""``react-bench drift`` (react_bench/drift.py): a recorded run's examples again, against the model
as it answers now; what flipped, where the trajectories parted, the model's identity then and now."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.drift import drift
from react_bench.evaluate import evaluate
from react_bench.runconfig import RunConfig
from react_bench.testing.messages_server import MessagesServer, Reply
from react_bench.testing.walker import question_of
from tests.support import REPO, composed
from tests.support_oracle import Oracle, gold_answers

KEY_ENV = "REACT_BENCH_TEST_DRIFT_KEY"


def _reporting(responder: Any, model: str, wrong: set[str] = frozenset(), golds: dict[str, str] | None = None) -> Any:
    """``responder``'s replies, reported as served by the snapshot ``model``; for the questions in
    ``wrong``, a wrong answer where the gold one was."""

    def answer(body: dict[str, Any]) -> Reply:
        reply = responder(body)
        question = question_of(body).strip()
        if question in wrong and golds is not None:
            gold = golds[question]
            reply = Reply(
                tuple(replace(b, text=b.text.replace(f"[{gold}]", "[a wrong answer]")) for b in reply.content)
            )
        return replace(reply, model=model)

    return answer


async def _recorded(tmp_path: Path, server: MessagesServer, n: int) -> Path:
    cfg = RunConfig.from_mapping(
        composed(
            "task=hotpotqa",
            "mode=react",
            "model=claude-sonnet-4-6",
            f"model.base_url={server.base_url}",
            f"model.api_key_env={KEY_ENV}",
            f"n={n}",
            f"results_dir={tmp_path / 'runs'}",
            "run_id=then",
            "cache=false",
        )
    )
    return (await evaluate(cfg, out=io.StringIO())).run_dir


async def test_drift_names_the_flipped_questions_where_they_parted_and_the_new_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    golds = gold_answers(6)
    wrong = set(sorted(golds)[1:3])
    with MessagesServer(responder=_reporting(Oracle(golds), "claude-sonnet-4-6-20260101")) as then:
        run_dir = await _recorded(tmp_path, then, 6)
    calls = [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert all(set(c["models"]) == {"claude-sonnet-4-6-20260101"} for c in calls)  # as the API reported it
    with MessagesServer(responder=_reporting(Oracle(golds), "claude-sonnet-4-6-20261201", wrong, golds)) as now:
        done = await drift(run_dir, restated={"model.base_url": now.base_url})
        assert len(now.requests) == 6 * 2  # every example again, nothing from a cache
    report = done.report
    assert done.run_dir.parent == run_dir.parent and done.run_dir.name.startswith("then-drift-")
    flipped = {e["id"]: e for e in report["examples"] if e["flip"]}
    questions = {
        json.loads(line)["id"]: json.loads(line)["question"].strip() for line in (run_dir / "examples.jsonl").open()
    }
    assert {questions[i] for i in flipped} == wrong  # exactly those, each right -> wrong
    assert all(e["flip"] == "right -> wrong" and e["parted_at"]["step"] == 2 for e in flipped.values())
    assert all(e["parted_at"] is None for e in report["examples"] if not e["flip"])  # the others: the same
    assert (report["right_to_wrong"], report["wrong_to_right"]) == (2, 0)
    assert report["mcnemar_p"] == pytest.approx(0.5) and report["difference"] == pytest.approx(-2 / 6)
    then_ids, now_ids = report["identity"]["then"]["reported_ids"], report["identity"]["now"]["reported_ids"]
    assert (then_ids, now_ids) == (["claude-sonnet-4-6-20260101"], ["claude-sonnet-4-6-20261201"])
    said = (done.run_dir / "drift.md").read_text()
    assert "McNemar's exact p = 0.5" in said and "change -33.3 points" in said
    assert "| ids the API reported | claude-sonnet-4-6-20260101 | claude-sonnet-4-6-20261201 |" in said
    assert all(f"| {i} | right -> wrong |" in said for i in flipped)


def test_a_local_model_run_does_not_drift(tmp_path: Path) -> None:
    """The control: the embedded model answers the same to the same request (its seed, greedy
    decoding), so a drift check of its run finds 0 flips and the same trajectories. Both run as the
    commands do, each in a fresh process: with kv_reuse, what one engine held before can flip a
    near-tie (tests/test_local_model.py), so an in-process rerun after other work is no control."""
    from tests.support import eval_py, run_dir_of

    made = eval_py("task=hotpotqa", "mode=cot", "model=local", "n=2", f"results_dir={tmp_path / 'runs'}", "cache=false")
    assert made.returncode == 0, made.stderr[-2000:]
    run_dir = run_dir_of(made.stdout)
    drifted = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "drift.py"), str(run_dir)], capture_output=True, text=True, timeout=600
    )
    assert drifted.returncode == 0, drifted.stderr[-2000:]
    (rerun,) = [p for p in run_dir.parent.iterdir() if p.name.startswith(f"{run_dir.name}-drift-")]
    report = json.loads((rerun / "drift.json").read_text())
    assert report["n"] == 2 and report["right_to_wrong"] == report["wrong_to_right"] == 0
    assert report["trajectories_parted"] == 0 and report["difference"] == 0.0
    then_ids, now_ids = report["identity"]["then"]["reported_ids"], report["identity"]["now"]["reported_ids"]
    assert then_ids == now_ids and then_ids[0].startswith("smollm2-135m@sha256:")
    assert "Flips: 0 right -> wrong, 0 wrong -> right. Trajectories parted: 0" in drifted.stdout


def test_drift_of_a_folder_someone_sent_sends_nothing_where_the_user_did_not_say(tmp_path: Path) -> None:
    """A folder whose run.json names its author's server and a variable, signed by another user: drift
    stops in one line, exit 2, before any request."""
    golds = gold_answers(2)
    canary = "canary-secret-value-not-to-leak"
    env = {**os.environ, "REACT_BENCH_TEST_SOMEONES_VAR": canary}
    with MessagesServer(responder=Oracle(golds)) as theirs:
        made = subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "eval.py"),
                "model=claude-sonnet-4-6",
                f"model.base_url={theirs.base_url}",
                "model.api_key_env=REACT_BENCH_TEST_SOMEONES_VAR",
                "n=2",
                f"results_dir={tmp_path / 'theirs'}",
                "cache=false",
                "progress=false",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, "REACT_BENCH_CACHE": str(tmp_path / "authors-cache")},  # the author's signing key
        )
        assert made.returncode == 0, made.stderr[-2000:]
        (run_dir,) = [p.parent for p in (tmp_path / "theirs").rglob("run.json")]
        before = len(theirs.requests)
        drifted = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "drift.py"), str(run_dir)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**env, "REACT_BENCH_CACHE": str(tmp_path / "users-cache")},
        )
        assert len(theirs.requests) == before  # nothing sent
    assert drifted.returncode == 2 and drifted.stderr.count("\n") == 1, drifted.stderr
    assert drifted.stderr.startswith("error: resume: ") and "model.base_url=" in drifted.stderr
    assert canary not in drifted.stderr + drifted.stdout


def test_a_changed_page_is_the_environments_drift_not_the_models(tmp_path: Path) -> None:
    """The same thought and action answered otherwise (a live page edited): the trajectories part at
    an observation, which the report keeps apart from the model's changes."""
    from react_bench.drift import parting
    from react_bench.record import ExampleRecord

    line = {
        "id": "q1",
        "question": "Q?",
        "gold": "no",
        "prediction": "no",
        "correct": True,
        "reason": "answered",
        "route": "react",
        "trajectory": [
            {
                "route": "react",
                "history": [],
                "events": [
                    {"type": "step_started", "step": 1},
                    {"type": "tool_called", "step": 1, "call_id": "s1", "name": "search", "arguments": {"entity": "X"}},
                    {
                        "type": "tool_execution_finished",
                        "step": 1,
                        "call_id": "s1",
                        "name": "search",
                        "observation": "X is a town.",
                    },
                    {"type": "step_finished", "step": 1},
                ],
            }
        ],
    }
    old = ExampleRecord.from_dict(line)
    edited = json.loads(json.dumps(line))
    edited["trajectory"][0]["events"][2]["observation"] = "X is a city (edited)."
    part = parting(old, ExampleRecord.from_dict(edited))
    assert part is not None and (part.step, part.why) == (1, "another observation")
    assert part.old == "X is a town." and part.new == "X is a city (edited)."
    assert parting(old, ExampleRecord.from_dict(line)) is None
