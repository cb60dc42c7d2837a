"""Reliability, round three, process side: a second process, SIGTERM, a full disk and a damaged
line never double, lose or tear a run. ``scripts/eval.py`` from the outside, against the
Messages API server's oracle."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.rundir import complete_lines
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from tests.support import REPO, records
from tests.support_oracle import Oracle, gold_answers
from tests.test_cli_reliability import (
    KEY_ENV,
    N,
    check_complete,
    claude_args,
    count_lines,
    slow_oracle,
    start,
    wait_for_lines,
)


def env() -> dict[str, str]:
    """This test's environment (its private request cache included, set by conftest per test)."""
    return {**os.environ, KEY_ENV: "test-key-not-real"}


def test_a_second_process_on_a_running_run_is_refused_in_one_line(tmp_path: Path) -> None:
    golds = gold_answers(N)
    run_dir = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "two"
    oracle, gate = Oracle(golds), threading.Event()

    def held(body):  # after the first example, the model answers only once the test lets it
        if count_lines(run_dir / "examples.jsonl") >= 1:
            gate.wait(timeout=300)
        return oracle(body)

    with MessagesServer(responder=held) as server:
        first = start(claude_args(server, tmp_path, "run_id=two"))
        wait_for_lines(run_dir / "examples.jsonl", 1, first)
        second = subprocess.run(
            claude_args(server, tmp_path, f"resume={run_dir}"),
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        gate.set()
        assert second.returncode == 2, second.stderr
        (line,) = second.stderr.strip().splitlines()
        assert line.startswith(f"error: {run_dir} is being run by another process (pid {first.pid} on ")
        _, stderr = first.communicate(timeout=300)
        assert first.returncode == 0, stderr
    check_complete(run_dir, golds)  # every example once: the second process ran none


@pytest.mark.slow
def test_sigterm_is_handled_as_ctrl_c_and_the_run_resumes(tmp_path: Path) -> None:
    golds = gold_answers(N)
    run_dir = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "t"
    with MessagesServer(responder=slow_oracle(golds, 0.05)) as server:
        process = start(claude_args(server, tmp_path, "run_id=t"))
        wait_for_lines(run_dir / "examples.jsonl", 3, process)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 143, stderr
        assert "Traceback" not in stderr and stderr.strip().splitlines()[0].startswith("terminated: finished")
        # finished: on disk in both files (an example counts once its cassette line is written too)
        both = set(complete_lines(run_dir / "examples.jsonl")) & set(complete_lines(run_dir / "calls.jsonl"))
        finished = len(both)
        assert 2 <= finished < N
        command = stderr.strip().splitlines()[-1].split()
        assert command[1:3] == ["scripts/eval.py", f"resume={run_dir}"]
        resumed = subprocess.run(
            [sys.executable, *command[1:], "progress=false"],
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert resumed.returncode == 0, resumed.stderr
    assert f"({N - finished} new example(s)" in resumed.stdout  # no finished example was lost
    check_complete(run_dir, golds)


def _ignore_sigxfsz() -> None:  # in the child: a write past its file-size limit fails with EFBIG
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


@pytest.mark.slow
def test_a_full_disk_is_one_line_with_the_resume_command_and_nothing_torn(tmp_path: Path) -> None:
    golds = gold_answers(N)
    run_dir = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "full"
    examples = run_dir / "examples.jsonl"
    with MessagesServer(responder=slow_oracle(golds, 0.05)) as server:
        full_env = {**env(), "PYTHONUNBUFFERED": "1"}
        full = subprocess.Popen(
            claude_args(server, tmp_path, "run_id=full"),
            cwd=REPO,
            env=full_env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_ignore_sigxfsz,
        )
        wait_for_lines(examples, 2, full)
        # the disk is full from now on, for that process: no file of it may grow past this size
        limit = examples.stat().st_size + 100
        resource.prlimit(full.pid, resource.RLIMIT_FSIZE, (limit, limit))
        _, stderr = full.communicate(timeout=300)
        assert full.returncode == 2, stderr
        (line,) = stderr.strip().splitlines()
        assert line.startswith("error: File too large") and f"writing under {run_dir}" in line
        assert line.endswith(f"scripts/eval.py resume={run_dir}") and "Traceback" not in stderr
        assert 0 < len(complete_lines(examples)) < N  # a torn last line at most, which resume cuts
        resumed = subprocess.run(
            claude_args(server, tmp_path, f"resume={run_dir}"),
            cwd=REPO,
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert resumed.returncode == 0, resumed.stderr
    check_complete(run_dir, golds)


async def test_a_damaged_line_in_the_middle_reruns_only_its_example(tmp_path: Path, monkeypatch) -> None:
    n = 6
    golds = gold_answers(n)
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    with MessagesServer(responder=Oracle(golds)) as server:

        def config(**more):
            return RunConfig(
                task=TaskConfig(name="hotpotqa", n=n),
                model=claude_model_config(server.base_url, KEY_ENV),
                solve=SolveSettings(mode="react", runner="text", loop=LoopConfig(max_steps=4)),
                results_dir=tmp_path,
                progress=False,
                run_id="d",
                **more,
            )

        first = await evaluate(config(), out=io.StringIO())
        examples = first.run_dir / "examples.jsonl"
        lines = examples.read_bytes().splitlines(keepends=True)
        damaged_id = json.loads(lines[2])["id"]
        lines[2] = b'{"id": "' + damaged_id.encode() + b'", "question": "cut \xff\xfe' + b"\n"  # not JSON any more
        examples.write_bytes(b"".join(lines))
        again = await evaluate(config(resume=True), out=io.StringIO())
    assert again.n_new == 1  # only the damaged example ran again
    finished = records(again.run_dir)
    assert len(finished) == n and len({r["id"] for r in finished}) == n
    assert {r["id"] for r in finished} == {json.loads(line)["id"] for line in lines if line != lines[2]} | {damaged_id}
    assert again.metrics["em"]["mean"] == 1.0 and again.metrics["n"] == n
