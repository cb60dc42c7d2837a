"""``scripts/eval.py`` from the command line: a scripted run, its replay, resume, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import REPO, eval_py, records, run_dir_of


def test_scripted_run_then_replay_gives_identical_predictions(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                " First the director.\nAction 1: Search[Scott Derrickson]",
                " He is American.\nAction 2: Finish[yes]",
                " I am not sure what to do",  # the paper's re-ask follows
                " Search[Ed Wood]\nand more",
                " Done.\nAction 2: Finish[no]",
            ]
        )
    )
    common = ["task=hotpotqa", "mode=react", "runner=text", f"results_dir={tmp_path / 'results'}", "n=2"]
    first = eval_py(*common, "model=scripted", f"model.script={script}", "run_id=rec")
    assert first.returncode == 0, first.stderr
    recorded_dir = run_dir_of(first.stdout)
    assert recorded_dir == tmp_path / "results" / "hotpotqa" / "scripted" / "react-text" / "rec"
    for name in ("run.json", "examples.jsonl", "calls.jsonl", "metrics.json"):
        assert (recorded_dir / name).is_file(), name
    assert "em" in first.stdout and "paper (PaLM-540B)" in first.stdout

    second = eval_py(*common, "model=replay", f"model.cassette={recorded_dir / 'calls.jsonl'}", "run_id=rep")
    assert second.returncode == 0, second.stderr
    a, b = records(recorded_dir), records(run_dir_of(second.stdout))
    assert [(r["id"], r["prediction"]) for r in a] == [(r["id"], r["prediction"]) for r in b]
    assert [r["prediction"] for r in a] == ["yes", "no"]
    assert [r["bad_calls"] for r in b] == [0, 1]
    assert (
        json.loads((recorded_dir / "metrics.json").read_text())["em"]
        == json.loads((run_dir_of(second.stdout) / "metrics.json").read_text())["em"]
    )

    again = eval_py(
        *common, "model=replay", f"model.cassette={recorded_dir / 'calls.jsonl'}", "run_id=rep", "resume=true"
    )
    assert again.returncode == 0, again.stderr
    assert "(0 new example(s)" in again.stdout
    assert len(records(run_dir_of(again.stdout))) == 2


def test_settings_errors_are_one_clear_line(tmp_path):
    result = eval_py("parser=robust", f"results_dir={tmp_path}")
    assert result.returncode == 2
    assert "error: protocol=paper fixes parser='paper'" in result.stderr
    assert "Traceback" not in result.stderr
    result = eval_py("model=replay", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "model.cassette" in result.stderr


def test_missing_api_key_is_reported_before_any_request(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "eval.py"),
            "model=claude-sonnet-5-5",
            "model.api_key_env=RB_TEST_NO_SUCH_KEY",
            "n=1",
            f"results_dir={tmp_path}",
            "progress=false",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in __import__("os").environ.items() if k != "RB_TEST_NO_SUCH_KEY"},
    )
    assert result.returncode == 2
    assert "RB_TEST_NO_SUCH_KEY" in result.stderr
    assert not list(tmp_path.rglob("examples.jsonl"))


def test_data_errors_are_one_clear_line(tmp_path):
    """Task data errors (``DataError``: no data folder, requested examples missing) end the
    run with one line on stderr and exit 2, like setting errors; never a traceback."""
    result = eval_py(f"data_dir={tmp_path / 'no-such-folder'}", f"results_dir={tmp_path}")
    assert result.returncode == 2, result.stderr
    assert "error: " in result.stderr and "no-such-folder" in result.stderr
    assert "Traceback" not in result.stderr
    result = eval_py("model=scripted", "ids=[no-such-id]", f"results_dir={tmp_path}")
    assert result.returncode == 2, result.stderr
    assert "error: " in result.stderr and "no-such-id" in result.stderr and "on_missing=skip" in result.stderr
    # the hint names the setting eval.py reads (top level); task.on_missing is not read
    assert "task.on_missing" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_scripted_model_that_runs_out_is_one_clear_line(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" Hmm.\nAction 1: Search[Ed Wood]"]))
    result = eval_py("model=scripted", f"model.script={script}", "n=1", f"results_dir={tmp_path}")
    assert result.returncode == 2 and "error: request 2 asked past the end" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_newcomers_mistakes_each_get_one_line_naming_the_fix(tmp_path):
    """Exit 2, one `error:` line, nothing written: an unwritable results folder, a results path
    under a regular file (the file is named), max_steps=0 (both fixes at once), a model name of
    another provider (where it goes)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" x.\nAction 1: Finish[yes]"] * 4))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    common = ["model=scripted", f"model.script={script}", "n=1", "show=none"]
    cases = {
        f"results_dir={blocker / 'results'}": f"{blocker} is a file, not a folder",
        "max_steps=0": "Add protocol=custom to run outside the paper's protocol, and max_steps must be at least 1",
        "model=gpt-5": "model=openai model.name=gpt-5",
    }
    if os.geteuid() != 0:  # root writes anywhere: the permission case needs an ordinary user
        cases[f"results_dir={locked / 'results'}"] = "cannot create the run folder"
    for setting, says in cases.items():
        args = (
            [*common, setting]
            if setting.startswith("results_dir")
            else [*common, f"results_dir={tmp_path / 'r'}", setting]
        )
        done = eval_py(*args)
        assert done.returncode == 2, (setting, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], (setting, done.stderr)
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists() and blocker.read_text() == "not a folder"


def test_a_huge_concurrency_is_capped_with_a_note_and_the_offline_wiki_says_what_paper500_lacks(tmp_path, prepared_dir):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" x.\nAction 1: Finish[yes]"] * 10))
    done = eval_py(
        "model=scripted",
        f"model.script={script}",
        "n=3",
        "show=none",
        "concurrency=1000",
        "split=paper500",
        f"results_dir={tmp_path / 'r'}",
    )
    assert done.returncode == 0, done.stderr
    assert "concurrency=1000 is capped at 256" in done.stdout
    assert "split=paper500 on the offline wiki: " in done.stdout and "of 3 questions" in done.stdout
    assert len(records(run_dir_of(done.stdout))) == 3


def test_the_documented_model_max_retries_works_on_a_resumed_run_of_any_model(tmp_path):
    """``model.max_retries=4`` as the README writes it (no ``+``), on a run whose model file lacks the key."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" x.\nAction 1: Finish[yes]"] * 4))
    first = eval_py(
        "model=scripted", f"model.script={script}", "n=1", "show=none", f"results_dir={tmp_path}", "run_id=m"
    )
    assert first.returncode == 0, first.stderr
    resumed = eval_py(f"resume={run_dir_of(first.stdout)}", "model.max_retries=4", "show=none")
    assert resumed.returncode == 0, resumed.stderr
    assert "Could not override" not in resumed.stderr and "(0 new example(s)" in resumed.stdout


def test_help_lists_every_setting_with_its_meaning():
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    settings = dict(
        line.split(None, 1)
        for line in done.stdout.split("settings (default, meaning):")[1].splitlines()
        if line.startswith("  ") and "=" in line.split()[0] and len(line.split(None, 1)) == 2
    )
    for key in (
        "max_cost_usd=null",
        "show=summary",
        "concurrency=1",
        "webshop.url=null",
        "alfworld.split=valid_unseen",
    ):
        assert key in settings and len(settings[key]) > 10, key  # each with its one-line meaning
    assert not [k for k in settings if k.startswith(("hydra", "defaults"))]
    assert "model       claude-haiku-4-5" in done.stdout and "openai" in done.stdout


def test_the_react_bench_command_runs_the_scripts_with_their_own_exit_codes(tmp_path):
    """``react-bench eval ...`` is ``python scripts/eval.py ...`` from any folder: the same run, the
    same one-line errors and exit codes; an unknown command is exit 2 with the list."""
    from importlib.metadata import entry_points

    (declared,) = entry_points(group="console_scripts", name="react-bench")
    assert declared.value == "react_bench.cli:main"

    def react_bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "react_bench.cli", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    script = tmp_path / "script.json"
    script.write_text(json.dumps([" Easy.\nAction 1: Finish[yes]"]))
    done = react_bench(
        "eval",
        "model=scripted",
        f"model.script={script}",
        f"results_dir={tmp_path / 'r'}",
        "n=1",
        "run_id=cli",
        "progress=false",
    )
    assert done.returncode == 0, done.stderr
    assert [r["prediction"] for r in records(run_dir_of(done.stdout))] == ["yes"]
    refused = react_bench("eval", "parser=robust", f"results_dir={tmp_path / 'r'}")
    assert refused.returncode == 2 and refused.stderr.startswith("error: protocol=paper fixes parser='paper'")
    unknown = react_bench("evaluate")
    assert unknown.returncode == 2 and "no such command" in unknown.stderr and "compare" in unknown.stderr
    listed = react_bench("--help")
    assert listed.returncode == 0 and all(f"  {c} " in listed.stdout for c in ("eval", "compare", "export"))


def test_a_key_a_group_does_not_have_is_one_line_naming_the_nearest(tmp_path):
    cases = [
        (["mode=best_of_k", "mode.kk=2"], "mode=best_of_k has no setting 'kk'", "nearest: k"),
        (["mode=best_of_k", "+mode.kk=2"], "mode=best_of_k has no setting 'kk'", "nearest: k"),
        (["lats.nn=2"], "lats has no setting 'nn'", "nearest: n"),
        (["task=webshop", "webshop.ulr=x"], "webshop has no setting 'ulr'", "nearest: url"),
        (["model.max_retrys=3"], "model=local has no setting 'max_retrys'", "max_retries"),
    ]
    for args, says, near in cases:
        result = eval_py(*args, f"results_dir={tmp_path}")
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
        assert says in lines[0] and near in lines[0] and args[-1] in lines[0], lines[0]
    assert not any(tmp_path.iterdir())  # nothing written
    ok = eval_py("mode=best_of_k", "mode.k=2", "model.max_retries=1", "dry_run=true", f"results_dir={tmp_path}")
    assert ok.returncode == 0, ok.stderr[-2000:]
