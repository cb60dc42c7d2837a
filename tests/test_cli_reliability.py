"""``scripts/eval.py`` under real faults, from the outside: every bad input is one line and
exit code 2 with nothing written; SIGKILL three times and resume; Ctrl-C and resume; a
faulty run's errors rerun with ``retry_errors=true`` to the fault-free score."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from react_bench.models.capabilities import calls_cost_usd
from react_bench.testing.messages_server import MessagesServer
from react_bench.types import Usage
from tests.support import REPO, eval_py, records, run_dir_of
from tests.support_oracle import Oracle, gold_answers

KEY_ENV = "REACT_BENCH_TEST_CLI_KEY"
N = 12


@pytest.fixture
def scripted_run(tmp_path: Path) -> tuple[list[str], Path]:
    """A finished 2-question scripted run; returns its common arguments and its folder."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" So yes.\nAction 1: Finish[yes]", " So no.\nAction 1: Finish[no]"]))
    common = ["mode=react", "n=2", f"results_dir={tmp_path / 'results'}", "model=scripted", f"model.script={script}"]
    done = eval_py(*common, "run_id=base")
    assert done.returncode == 0, done.stderr
    return common, run_dir_of(done.stdout)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def bad_inputs(tmp: Path, common: list[str], run_dir: Path) -> list[tuple[list[str], str]]:
    corrupt = tmp / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 2\x00 but not really")
    a_file = tmp / "a_file"
    a_file.write_text("x")
    bad_script = tmp / "bad_script.json"
    bad_script.write_text(json.dumps([" ok", 42]))
    truncated = tmp / "truncated" / "hotpotqa" / "scripted" / "react-text" / "cut"
    truncated.mkdir(parents=True)
    (truncated / "run.json").write_text('{"run_id": "cut", "fingerp')
    return [
        ([*common, "wiki.path=" + str(corrupt)], "is not a usable wiki"),
        ([*common[:-2], "model=scripted", f"model.script={bad_script}"], "every entry must be a completion text"),
        (["mode=react", "n=2", f"results_dir={a_file}", *common[3:]], "is a file, not a folder"),
        ([*common, "run_id=nope", "resume=true"], "no run 'nope'"),
        ([*common, f"resume={tmp / 'nowhere'}"], "no run at"),
        ([*common, f"resume={run_dir}", "mode=cot"], "resume: mode differs from the recorded run's ('react')"),
        ([*common, f"resume={run_dir}", "task=fever"], "resume: task differs"),
        ([*common, "offset=100000"], "offset=100000 is beyond the"),
        ([*common, "concurrency=0"], "concurrency=0: must be at least 1"),
        ([*common, "run_id=../../x"], "run_id='../../x': use a plain name"),
        ([*common, "n=abc"], "n='abc': expected a whole number"),
        ([*common, f"resume={truncated}"], "run.json cannot be read"),
        ([*common, "mode=nope"], "mode=nope: no such mode; choose one of act, best_of_k, cot"),
        ([*common, "task=nope"], "task=nope: no such task"),
        ([*common, "model=nope"], "model=nope: no such model"),
        ([*common, "context=nope"], "context=nope: no such context; choose one of compact, full"),
        # a value where a group of settings stands, whatever the mode or executor uses
        ([*common, "ray=5"], "ray=5: ray is a group of settings, not a value"),
        ([*common, "lats=3"], "lats=3: lats is a group of settings, not a value"),
        ([*common, "webshop=x"], "webshop.url, webshop.seed"),
        ([*common, "concurency=3"], "concurency=3: no such setting (did you mean concurrency?)"),
        (
            ["model=replay", f"model.cassette={run_dir / 'calls.jsonl'}", "runner=tool_use", f"results_dir={tmp}"],
            "replay: runner differs from the recorded run's ('text')",
        ),
    ]


def test_every_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, scripted_run) -> None:
    common, run_dir = scripted_run
    before = snapshot(tmp_path / "results")
    for args, message in bad_inputs(tmp_path, common, run_dir):
        result = eval_py(*args)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (args, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (args, result.stderr)
        assert "Traceback" not in result.stdout + result.stderr
        assert snapshot(tmp_path / "results") == before, args  # nothing written, nothing changed


def test_a_run_folder_moved_anywhere_resumes_in_place(tmp_path: Path) -> None:
    """A run folder is self-describing: moved out of the results layout, it resumes where it lies."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" So yes.\nAction 1: Finish[yes]", " So no.\nAction 1: Finish[no]"]))
    common = ["mode=react", f"results_dir={tmp_path / 'results'}", "model=scripted", f"model.script={script}"]
    first = eval_py(*common, "n=2", "run_id=moved")
    assert first.returncode == 0, first.stderr
    moved = tmp_path / "elsewhere" / "my-run"
    moved.parent.mkdir()
    run_dir_of(first.stdout).rename(moved)
    # one example's line lost (a crash): the resume runs exactly that one again, in the moved folder
    lines = (moved / "examples.jsonl").read_text().splitlines(keepends=True)
    (moved / "examples.jsonl").write_text(lines[0])
    script.write_text(json.dumps([" So no.\nAction 1: Finish[no]"]))
    again = eval_py(f"resume={moved}", f"model.script={script}")  # model.script: a key of the recorded model=scripted
    assert again.returncode == 0, again.stderr
    assert "(1 new example(s)" in again.stdout and run_dir_of(again.stdout) == moved
    assert [r["prediction"] for r in records(moved)] == ["yes", "no"]
    assert not any((tmp_path / "results").rglob("run.json"))  # nothing written where the folder used to be


def test_ctrl_c_before_the_run_starts_says_nothing_was_written(tmp_path: Path) -> None:
    """An interrupt while the settings are still being read (before the run folder is known)."""
    code = (
        "import runpy, sys\n"
        "import react_bench.runconfig as rc\n"
        "def interrupted(*args, **kwargs):\n"
        "    raise KeyboardInterrupt\n"
        "rc.resolve_settings = interrupted\n"
        f"sys.argv = ['eval.py', 'results_dir={tmp_path}']\n"
        f"runpy.run_path({str(REPO / 'scripts' / 'eval.py')!r}, run_name='__main__')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 130, result.stderr
    assert "Traceback" not in result.stderr and "nothing was written" in result.stderr
    assert not any(tmp_path.iterdir())


def test_a_numeric_run_id_is_a_name_and_resume_takes_the_recorded_settings(tmp_path: Path, scripted_run) -> None:
    common, run_dir = scripted_run
    numeric = eval_py(*common, "run_id=20240101")
    assert numeric.returncode == 0, numeric.stderr
    assert run_dir_of(numeric.stdout).name == "20240101"
    # resume by folder alone: task, mode, model, n all come from run.json
    again = eval_py(f"resume={run_dir}")
    assert again.returncode == 0, again.stderr
    assert "(0 new example(s)" in again.stdout and run_dir_of(again.stdout) == run_dir
    # replay by cassette alone: the recorded examples, mode and runner, the same predictions
    replayed = eval_py("model=replay", f"model.cassette={run_dir / 'calls.jsonl'}", f"results_dir={tmp_path / 'r'}")
    assert replayed.returncode == 0, replayed.stderr
    assert [r["prediction"] for r in records(run_dir_of(replayed.stdout))] == ["yes", "no"]


def claude_args(server: MessagesServer, results: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        str(REPO / "scripts" / "eval.py"),
        "model=claude-sonnet-4-6",
        f"model.base_url={server.base_url}",
        f"model.api_key_env={KEY_ENV}",
        "model.retry_backoff_s=0.001",
        f"n={N}",
        "concurrency=2",
        f"results_dir={results}",
        "progress=false",
        *extra,
    ]


def slow_oracle(golds: dict[str, str], delay: float):
    oracle = Oracle(golds)

    def respond(body):
        time.sleep(delay)
        return oracle(body)

    return respond


def count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, KEY_ENV: "test-key-not-real", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lines(path: Path, at_least: int, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while count_lines(path) < at_least and process.poll() is None:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)


def check_complete(run_dir: Path, golds: dict[str, str]) -> None:
    finished = records(run_dir)
    assert len(finished) == N and len({r["id"] for r in finished}) == N  # nothing lost, nothing doubled
    assert all(r["prediction"] == golds[r["question"].strip()] for r in finished)
    cassette = [json.loads(line)["id"] for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert sorted(cassette) == sorted(r["id"] for r in finished)


@pytest.mark.slow
def test_sigkill_three_times_then_resume_loses_and_doubles_nothing(tmp_path: Path) -> None:
    golds = gold_answers(N)
    run_dir = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "k"
    with MessagesServer(responder=slow_oracle(golds, 0.05)) as server:
        for kill in range(3):
            extra = ["run_id=k"] + (["resume=true"] if kill else [])
            process = start(claude_args(server, tmp_path, *extra))
            wait_for_lines(run_dir / "examples.jsonl", 3 * (kill + 1), process)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        assert count_lines(run_dir / "examples.jsonl") < N  # the kills really cut the run short
        final = subprocess.run(
            claude_args(server, tmp_path, "run_id=k", "resume=true"),
            cwd=REPO,
            env={**os.environ, KEY_ENV: "test-key-not-real"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert final.returncode == 0, final.stderr
    check_complete(run_dir, golds)


@pytest.mark.slow
def test_ctrl_c_prints_the_resume_command_which_finishes_the_run(tmp_path: Path) -> None:
    golds = gold_answers(N)
    run_dir = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "c"
    with MessagesServer(responder=slow_oracle(golds, 0.05)) as server:
        process = start(claude_args(server, tmp_path, "run_id=c"))
        wait_for_lines(run_dir / "examples.jsonl", 3, process)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 2, stderr
        command = stderr.strip().splitlines()[-1].split()
        assert command[1:3] == ["scripts/eval.py", f"resume={run_dir}"]
        assert (REPO / command[0]).resolve() == Path(sys.executable).resolve()  # the interpreter that ran it
        resumed = subprocess.run(
            [sys.executable, *command[1:], "progress=false"],
            cwd=REPO,
            env={**os.environ, KEY_ENV: "test-key-not-real"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert resumed.returncode == 0, resumed.stderr
    check_complete(run_dir, golds)


def test_retry_errors_reruns_exactly_the_errored_examples(tmp_path: Path) -> None:
    golds = gold_answers(N)
    env = {**os.environ, KEY_ENV: "test-key-not-real"}
    with MessagesServer(responder=Oracle(golds), fault_rate=0.3, fault_seed=3) as server:
        faulty = subprocess.run(
            claude_args(server, tmp_path, "run_id=f", "model.max_retries=0"),
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert faulty.returncode == 3, faulty.stderr
        run_dir = run_dir_of(faulty.stdout)
        errored = {r["id"] for r in records(run_dir) if r["reason"] == "error"}
        assert errored and "ERRORS" in faulty.stdout
        command = faulty.stderr.strip().splitlines()[-1].split()
        assert command[1:] == ["scripts/eval.py", f"resume={run_dir}", "retry_errors=true"]
        kept = {r["id"]: r for r in records(run_dir) if r["id"] not in errored}
        server.fault_rate = 0.0
        rerun = subprocess.run(
            [sys.executable, *command[1:], "progress=false"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert rerun.returncode == 0, rerun.stderr
    assert f"({len(errored)} new example(s)" in rerun.stdout  # exactly the errored ones ran again
    check_complete(run_dir, golds)
    assert {r["id"]: r for r in records(run_dir) if r["id"] in kept} == kept  # the others untouched
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["em"]["mean"] == 1.0  # the fault-free score
    # what the run says it spent is what the server billed, priced independently: the errored
    # attempts that retry_errors replaced included (their lines kept in superseded.jsonl)
    billed = calls_cost_usd("claude-sonnet-4-6", [Usage.from_dict(b["usage"]) for b in server.billed])
    assert billed is not None and billed > 0
    assert metrics["cost_usd"]["spent"] == pytest.approx(billed)
    superseded = [json.loads(line) for line in (run_dir / "superseded.jsonl").read_text().splitlines()]
    assert {r["id"] for r in superseded} == errored


def test_a_batch_the_endpoint_refuses_is_one_error_line(tmp_path: Path) -> None:
    """batch=true against an endpoint that answers the batch with a 400: one line, exit 2, no example run."""
    from react_bench.testing.messages_server import ApiError

    with MessagesServer(responder=Oracle(gold_answers(N))) as server:
        server.refuse_batches = ApiError(400, "invalid_request_error", "Batches are not available for this account")
        done = subprocess.run(
            claude_args(server, tmp_path, "mode=standard", "batch=true", "batch_poll_s=0.01"),
            cwd=REPO,
            env={**os.environ, KEY_ENV: "test-key-not-real"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert not [r for r in server.requests if r.path == "/v1/messages"]  # no live call instead (no silent fallback)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: batch=true: the Message Batches API failed"), done.stderr
    assert "400" in lines[0] and "Batches are not available" in lines[0] and "Traceback" not in done.stderr


def test_ctrl_c_does_not_wait_for_a_native_call_in_a_worker_thread(tmp_path: Path) -> None:
    """The interrupt path exits 130 at once although a worker thread is busy for a minute (as
    llama.cpp's prompt evaluation is, uninterruptibly): the timeout below would catch a wait."""
    code = (
        "import sys, time, concurrent.futures as cf\n"
        f"sys.path.insert(0, {str(REPO / 'scripts')!r})\n"
        "import eval as cli\n"
        "cf.ThreadPoolExecutor(1).submit(time.sleep, 60)\n"
        "cli.interrupted(None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 130, done.stderr
    assert "nothing was written" in done.stderr
