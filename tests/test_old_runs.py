"""A run folder written before the record was typed (``tests/fixtures/run_v1``: HotpotQA, ReAct, the
text runner, a scripted model, 3 examples, written by main at 7e7faa0) is read through the one
upgrading reader: it summarises to the metrics that version wrote, resumes, compares, exports and
opens in both notebooks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.record import RECORD_VERSION, ExampleRecord, RunMetrics
from react_bench.results import iter_example_records, summarize
from react_bench.tasks import task_info
from tests.support import REPO, eval_py, run_notebook

FIXTURE = Path(__file__).parent / "fixtures" / "run_v1"
# what this version adds to metrics.json: call count, data left out, usage's unknown calls (none here)
ADDED = {"calls", "left_out"}


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "results" / "hotpotqa" / "scripted" / "react-text" / "v1"
    shutil.copytree(FIXTURE, run_dir)
    (run_dir / "script.json").unlink()
    return run_dir


def test_the_old_lines_read_as_version_1_and_summarise_to_what_that_version_wrote(old_run: Path) -> None:
    raw = [json.loads(line) for line in (old_run / "examples.jsonl").read_text().splitlines()]
    assert all("record_version" not in r and "first_observation" not in r["trajectory"][0] for r in raw)
    records = list(iter_example_records(old_run))
    assert [r.id for r in records] == [r["id"] for r in raw] and all(r.first_observation is None for r in records)
    assert [r.to_dict()["prediction"] for r in records] == [r["prediction"] for r in raw]
    assert all(ExampleRecord.from_dict(r.to_dict()) == r for r in records)
    then = json.loads((old_run / "metrics.json").read_text())
    now = summarize(old_run, task_info("hotpotqa")).to_dict()
    assert set(now) - set(then) <= ADDED and set(then) <= set(now)
    assert {k: v for k, v in now.items() if k in then} == then
    # the old metrics.json itself reads typed, and writes back as it was (plus what was added since)
    read = RunMetrics.read(old_run)
    assert read is not None and {k: v for k, v in read.to_dict().items() if k in then} == then


def test_an_old_run_resumes_compares_and_exports(old_run: Path, tmp_path: Path, prepared_dir) -> None:
    then = json.loads((old_run / "metrics.json").read_text())
    # the last example lost (as a crash loses the examples in flight): resume runs it alone
    for name in ("examples.jsonl", "calls.jsonl"):
        lines = (old_run / name).read_text().splitlines(keepends=True)
        (old_run / name).write_text("".join(lines[:-1]))
    script = tmp_path / "rest.json"
    script.write_text(json.dumps(json.loads((FIXTURE / "script.json").read_text())[-2:]))
    done = eval_py(f"resume={old_run}", f"model.script={script}")
    assert done.returncode == 0, done.stderr
    assert "1 new example(s)" in done.stdout
    lines = (old_run / "examples.jsonl").read_text().splitlines()
    assert (
        len(lines) == 3
        and "record_version" not in lines[0]
        and json.loads(lines[2])["record_version"] == RECORD_VERSION
    )
    now = json.loads((old_run / "metrics.json").read_text())
    for key in ("n", "em", "f1", "usage", "reasons", "routes", "bad_calls", "grounded_accuracy", "mean_steps"):
        assert now[key] == then[key], key
    table = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "compare.py"),
            str(tmp_path / "results"),
            "--out",
            str(tmp_path / "study"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert table.returncode == 0, table.stderr
    assert f"{100 * then['em']['mean']:.1f}" in table.stdout + (tmp_path / "study" / "table1.md").read_text()
    export = [
        sys.executable,
        str(REPO / "scripts" / "export.py"),
        str(old_run),
        "--to",
        "csv",
        "--out",
        str(tmp_path / "run.csv"),
    ]
    exported = subprocess.run(export, capture_output=True, text=True, timeout=300)
    assert exported.returncode == 0, exported.stderr
    assert len((tmp_path / "run.csv").read_text().strip().splitlines()) == 4  # a header and three examples


@pytest.mark.parametrize("notebook", ["inspect_trajectories.ipynb", "compare_modes.ipynb"])
def test_both_notebooks_open_an_old_run(old_run: Path, notebook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REACT_BENCH_RUN_DIR", str(old_run))
    monkeypatch.setenv("REACT_BENCH_RUNS", str(old_run.parents[3]))
    outputs = run_notebook(notebook)
    if notebook == "inspect_trajectories.ipynb":
        html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
        assert "<b>search</b>" in html


# Reflexion's and LATS's runs as main wrote them at 273ff98, before the two kinds of method became one
# (record version 2: the trials and the tree at a line's top level; metrics.json's summary under
# "reflexion" and "lats"): SynthWiki, a scripted model, 2 examples each, 2 trials / 2 iterations of 2.
METHOD_RUNS = Path(__file__).parent / "fixtures" / "runs_v2"
OLD = {"reflexion": "reflexion-text/reflexion_v2", "lats": "lats-text/lats_v2"}
SETTINGS = {"reflexion": ["reflexion.trials=2"], "lats": ["lats.n=2", "lats.iterations=2"]}


def test_reflexion_and_lats_runs_of_an_earlier_version_load_resume_and_compare_with_runs_made_now(
    tmp_path: Path,
) -> None:
    from react_bench.studies import load_runs, table1

    results = tmp_path / "results"
    shutil.copytree(METHOD_RUNS / "synthwiki", results / "synthwiki")
    old = {mode: results / "synthwiki" / "scripted" / where for mode, where in OLD.items()}
    for mode, run_dir in old.items():
        # every line reads as version 3, the method's own parts in ``method``; the summary, computed
        # again from them, is the one that version wrote under the mode's name
        raw = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]
        own = {"reflexion": "trials", "lats": "tree"}[mode]
        assert all(r["record_version"] == 2 and own in r for r in raw)
        records = list(iter_example_records(run_dir))
        assert [r.method[own] for r in records if r.method] == [r[own] for r in raw]
        assert all(set(r.scores) == {"em", "f1"} for r in records)
        then = json.loads((run_dir / "metrics.json").read_text())
        assert RunMetrics.read(run_dir).method == then[mode]  # metrics.json read as it is
        assert json.loads(json.dumps(summarize(run_dir, task_info("synthwiki")).method)) == then[mode]
        # it resumes (its fingerprint is the one this version computes), and a run made now with the
        # same settings has the same fingerprint
        script = METHOD_RUNS / f"{mode}_script.json"
        resumed = eval_py(f"resume={run_dir}", f"model.script={script}")
        assert resumed.returncode == 0, resumed.stderr
        now = eval_py(
            "task=synthwiki", f"mode={mode}", "model=scripted", f"model.script={script}", "n=2",
            *SETTINGS[mode], f"results_dir={results}", f"run_id={mode}_now",
        )  # fmt: skip
        assert now.returncode == 0, now.stderr
        new_dir = run_dir.parent / f"{mode}_now"
        fingerprints = [json.loads((d / "run.json").read_text())["fingerprint"] for d in (run_dir, new_dir)]
        assert fingerprints[0] == fingerprints[1] == then["fingerprint"]
        new_metrics = json.loads((new_dir / "metrics.json").read_text())
        assert new_metrics["method"] == then[mode] and mode not in new_metrics
    # one Table 1: the old runs and the new, each with its method's summary
    runs = load_runs(sorted(d for d in (results / "synthwiki" / "scripted").glob("*/*") if d.is_dir()))
    assert len(runs) == 4 and all(m is not None for m in runs["method_summary"])
    by_mode = runs.groupby("mode")["method_summary"].apply(list).to_dict()
    assert by_mode["reflexion"][0] == by_mode["reflexion"][1] and by_mode["lats"][0] == by_mode["lats"][1]
    grid, _ = table1(runs)
    cell = dict(zip(grid["mode"], grid[task_info("synthwiki").column], strict=True))
    assert (
        cell["reflexion"].startswith("50.0 [9.5, 90.5] (n=2)")
        and "after 2 trials, oracle feedback" in cell["reflexion"]
    )
    assert cell["lats"].startswith("0.0 [0.0, 65.8] (n=2)") and "oracle feedback" not in cell["lats"]
