"""Human-in-the-loop edits (the paper's Figure 5): a fork of a recorded HotpotQA trajectory, against
the Messages API stand-in. Steps 1..k are served from the parent's recording (the stand-in's log
has no request for them), the edited thought is in every later prompt, the fork's folder names
its parent."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.fork import fork_run
from react_bench.runconfig import RunConfig
from react_bench.testing.messages_server import MessagesServer
from react_bench.testing.walker import Walk, WalkResponder
from tests.support import REPO, composed
from tests.support_oracle import gold_answers

KEY_ENV = "REACT_BENCH_TEST_FORK_KEY"
EDIT = "I was wrong: this edit comes from a human."


def _text(body: Any) -> str:
    return json.dumps(body.body["messages"], ensure_ascii=False)


def parent_config(server: MessagesServer, n: int, results: Path, run_id: str) -> RunConfig:
    """A run of scripts/eval.py's settings against the stand-in: the parent a fork is made of."""
    return RunConfig.from_mapping(
        composed(
            "model=claude-sonnet-4-6",
            f"model.base_url={server.base_url}",
            f"model.api_key_env={KEY_ENV}",
            f"n={n}",
            f"results_dir={results}",
            f"run_id={run_id}",
            "progress=false",
            "show=none",
        )
    )


async def test_a_fork_replays_steps_before_the_edit_and_goes_on_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    golds = gold_answers(2)
    with MessagesServer(responder=WalkResponder(Walk(steps=4, answers=golds))) as server:
        cfg = parent_config(server, 2, tmp_path, "parent")
        parent = await evaluate(cfg, out=io.StringIO())
        example = json.loads((parent.run_dir / "examples.jsonl").read_text().splitlines()[1])
        assert example["steps"] == 4
        before = len(server.requests)
        fork = await fork_run(parent.run_dir, example["id"], 2, EDIT)
        sent = [_text(b) for b in server.requests[before:]]
        stops = [b.body.get("stop_sequences") for b in server.requests[before:]]
    # no request for steps 1-2: the first one the stand-in saw opens step 3, with the edit in it
    assert len(sent) == 2 == fork.live and fork.replayed == 2
    assert all("Thought 1:" in s and "Thought 2:" in s for s in sent)
    assert stops == [["\nObservation 3:"], ["\nObservation 4:"]]  # steps 3 and 4, live
    assert f"Thought 2: {EDIT}" in sent[0] and "Thought 3:" in sent[0]
    assert all(f"Thought 2: {EDIT}" in s for s in sent)  # every later prompt holds it
    note = json.loads((fork.run_dir / "fork.json").read_text())
    assert (note["parent"], note["parent_run_id"], note["example"], note["step"], note["thought"]) == (
        str(parent.run_dir),
        "parent",
        example["id"],
        2,
        EDIT,
    )
    assert fork.run_dir.parent == parent.run_dir.parent and fork.run_dir.name.startswith("parent-fork-2-")
    assert fork.child.steps == 4 and fork.child.prediction == example["prediction"]
    side = (fork.run_dir / "fork.md").read_text()
    rows = {line.split(" |")[0].lstrip("| "): line for line in side.splitlines() if line.startswith("| ")}
    assert list(rows)[1:] == ["1 (same)", "2 (edited)", "3 (same)", "4 (same)"], side  # header row first
    # the rows are numbered as the user numbered the step: row 1 holds Thought 1 on both sides,
    # the edited row holds the edit in the fork's column and the recorded Thought 2 in the parent's
    parent_cell, fork_cell = rows["2 (edited)"].split(" | ")[1:3]
    assert EDIT in fork_cell and EDIT not in parent_cell and parent_cell.startswith("Thought 2:")
    assert rows["1 (same)"].split(" | ")[1].startswith("Thought 1:")
    calls = [json.loads(line) for line in (fork.run_dir / "calls.jsonl").read_text().splitlines()]
    assert EDIT in calls[0]["completions"][1]  # the fork's own cassette holds what it was given
    with pytest.raises(ConfigError, match="fork at a step from 1 to 3"):
        await fork_run(parent.run_dir, example["id"], 4, EDIT)
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "fork.py"),
            str(parent.run_dir),
            "--example",
            "nope",
            "--step",
            "1",
            "--thought",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "no finished example 'nope'" in done.stderr


async def test_a_fork_of_a_received_folder_lies_beside_it_whatever_its_run_json_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.json's run_id is the folder author's text: a fork is named by the parent's folder, so
    ``run_id: ../../../escaped`` (or an absolute path) writes nothing outside the results."""
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    golds = gold_answers(1)
    with MessagesServer(responder=WalkResponder(Walk(steps=3, answers=golds))) as server:
        cfg = parent_config(server, 1, tmp_path / "results", "sent")
        parent = await evaluate(cfg, out=io.StringIO())
        example = json.loads((parent.run_dir / "examples.jsonl").read_text().splitlines()[0])
        for hostile in ("../../../escaped", str(tmp_path / "absolute")):
            header = json.loads((parent.run_dir / "run.json").read_text())
            header["run_id"] = hostile
            (parent.run_dir / "run.json").write_text(json.dumps(header))
            fork = await fork_run(parent.run_dir, example["id"], 1, EDIT)
            assert fork.run_dir.parent == parent.run_dir.parent and fork.run_dir.name.startswith("sent-fork-1-")
    assert not list(tmp_path.rglob("escaped*")) and not list(tmp_path.glob("absolute*"))
