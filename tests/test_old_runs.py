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

from react_bench.record import ExampleRecord, RunMetrics
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
    assert len(lines) == 3 and "record_version" not in lines[0] and json.loads(lines[2])["record_version"] == 2
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
