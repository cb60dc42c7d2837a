"""Studies at any scale (issue 60): every study path reads a run's records once, line by line, into
compact figures (``studies.scan``); Table 1's figures come from the records; the report stays light
and loads each run's examples and trajectories from side files when asked; diff.md is capped with
every row in diff.csv. The size itself is measured by ``bench/bench_study.py`` (2 runs x 10^5)."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.testing.synthetic import grow_run, synthetic_id
from tests.support import REPO, compare_py, eval_py

N = 1234  # three pages of examples a run (studies.scan.PAGE = 500)


@pytest.fixture(scope="module")
def large_study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[bool]]]:
    """standard and react on HotpotQA, each grown from a real 3-question run to N records with drawn,
    correlated outcomes; no metrics.json."""
    root = tmp_path_factory.mktemp("scale")
    scripts = {
        "standard": [" yes", " no", " Chief of Protocol"],
        "react": [
            " s.\nAction 1: Search[Ed Wood]",
            " d.\nAction 2: Finish[yes]",
            " d.\nAction 1: Finish[no]",
            " d.\nAction 1: Finish[no]",
        ],
    }
    rng = random.Random(7)
    draws = [rng.random() for _ in range(N)]
    outcomes = {"standard": [d < 0.3 for d in draws], "react": [d < 0.4 for d in draws]}
    for mode, script in scripts.items():
        path = root / f"{mode}.json"
        path.write_text(json.dumps(script))
        done = eval_py(
            f"mode={mode}",
            "n=3",
            "model=scripted",
            f"model.script={path}",
            f"results_dir={root / 'templates'}",
            "run_id=template",
            "show=none",
            cwd=root,
        )
        assert done.returncode == 0, done.stderr
        template = next((root / "templates").rglob(f"{mode}-text/template"))
        grow_run(template, root / "study" / mode, outcomes[mode], f"{mode}-big")
    return root / "study", outcomes


def test_a_large_study_is_scored_from_its_records_and_its_report_stays_light(
    large_study: tuple[Path, dict[str, list[bool]]], tmp_path: Path
) -> None:
    study, outcomes = large_study
    out = tmp_path / "compare"
    done = compare_py(study, out=out)
    assert done.returncode == 0, done.stderr
    table = (out / "table1.md").read_text()
    for mode, right in outcomes.items():  # each run's cell: the share of its records marked correct
        row = next(line for line in table.splitlines() if line.startswith(f"| {mode} "))
        assert f"{100 * sum(right) / N:.1f} [" in row and f"(n={N})" in row and "partial" not in row
    assert "nan" not in table
    paired = (out / "paired.md").read_text()
    assert f"| {N} |" in paired
    # the page holds the tables and a section per run; no trajectory is in it, they are in the pages beside
    report = (out / "report.html").read_text()
    assert report.count("<details class='run' ") == 2 and "first observation" not in report
    assert len(report) < 150_000
    pages = sorted(p.name for p in (out / "report_files").iterdir())
    assert len(pages) == 2 and all(f"data-pages='3' data-n='{N}'" in report for _ in pages)
    for key in pages:
        side = out / "report_files" / key
        assert sorted(p.name for p in side.iterdir()) == ["i0.js", "i1.js", "i2.js", "t0.js", "t1.js", "t2.js"]
        last = (side / "i2.js").read_text()
        assert last.startswith(f'RB.index("{key}",2,') and synthetic_id(N - 1) in last
        assert "first observation" in (side / "t2.js").read_text()
    # diff.md lists at most DIFF_ROWS a pair; diff.csv every changed question
    from react_bench.studies.write import DIFF_ROWS

    changed = sum(a != b for a, b in zip(outcomes["standard"], outcomes["react"], strict=True))
    assert changed > DIFF_ROWS
    diff = (out / "diff.md").read_text()
    assert diff.count("| syn-") == DIFF_ROWS and f"{changed - DIFF_ROWS} more in diff.csv" in diff
    with (out / "diff.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == changed and {r["id"] for r in rows} <= {synthetic_id(i) for i in range(N)}


def test_the_report_opens_the_last_example_in_a_real_browser(
    large_study: tuple[Path, dict[str, list[bool]]], tmp_path: Path
) -> None:
    """Headless Chromium opens report.html#<run>/<id> on the last example: its trajectory is loaded
    from the side files and shown."""
    import shutil

    if not (shutil.which("chromium") or os.environ.get("CHROMIUM")):
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium (.ci/run installs it)")
        pytest.skip("no chromium here (apt-get install chromium)")
    from react_bench.studies.scan import run_key

    study, _ = large_study
    out = tmp_path / "compare"
    assert compare_py(study, out=out).returncode == 0
    last = synthetic_id(N - 1)
    key = run_key(study / "react")
    shot = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "screenshot_report.py"),
            str(out),
            str(out / "s.png"),
            "--dom",
            str(out / "dom.html"),
            "--example",
            f"{key}/{last}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shot.returncode == 0, shot.stderr
    dom = (out / "dom.html").read_text()
    section = dom.split(f'id="{key}"', 1)[1].split("</details>\n", 1)[0]
    assert f"example {last}" in section and f'<tr data-id="{last}">' in section
    assert 'class="trajectory"' in section and f"(#{N - 1})</h3>" in section


def test_scans_in_parallel_processes_equal_scans_in_this_one(
    large_study: tuple[Path, dict[str, list[bool]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from react_bench.studies import scan

    study, _ = large_study
    dirs = [study / "standard", study / "react"]
    monkeypatch.setattr(scan, "_SCANS", {})
    alone = scan.scan_runs(dirs, tmp_path / "a")  # 2 runs, under PARALLEL_BYTES: in this process
    monkeypatch.setattr(scan, "_SCANS", {})
    monkeypatch.setattr(scan, "PARALLEL_BYTES", 0)
    together = scan.scan_runs(dirs, tmp_path / "b")
    for d in alone:
        a, b = alone[d], together[d]
        assert a.metrics is not None and b.metrics is not None
        assert a.metrics.to_dict() == b.metrics.to_dict() and a.first == b.first and a.offsets == b.offsets
        assert (a.records, a.right, a.pages, a.tokens) == (b.records, b.right, b.pages, b.tokens)
        key = scan.run_key(d)
        for page in ("i0.js", "t2.js"):
            assert (tmp_path / "a" / scan.SIDE / key / page).read_bytes() == (
                tmp_path / "b" / scan.SIDE / key / page
            ).read_bytes()


def test_one_example_is_read_without_the_rest(large_study: tuple[Path, dict[str, list[bool]]]) -> None:
    """What the notebook shows: the list without trajectories, one record when asked."""
    from react_bench.results import read_example
    from react_bench.studies.export import examples_table

    study, outcomes = large_study
    table = examples_table(study / "react")
    assert (
        len(table) == N and "trajectory" not in table.columns and table["label"].iloc[0] in ("correct", "wrong_answer")
    )
    record = read_example(study / "react", synthetic_id(N - 1))
    assert record is not None and record.question.endswith(f"(#{N - 1})") and record.correct == outcomes["react"][-1]
    assert read_example(study / "react", "no-such-id") is None


def test_the_paired_bootstrap_is_scipys_distribution_in_small_memory() -> None:
    """The multinomial draw of the three kinds of pair gives scipy's paired percentile bootstrap."""
    import numpy as np
    from scipy.stats import bootstrap

    from react_bench.studies.statistics import paired_bootstrap

    rng = np.random.default_rng(3)
    a = (rng.random(400) < 0.45).astype(float)
    b = np.where(rng.random(400) < 0.7, a, (rng.random(400) < 0.35).astype(float))
    low, high = paired_bootstrap(a, b)
    ci = bootstrap(
        (a, b),
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        paired=True,
        n_resamples=10_000,
        random_state=0,
        method="percentile",
    ).confidence_interval
    assert abs(low - ci.low) < 0.01 and abs(high - ci.high) < 0.01
    assert low < float(a.mean() - b.mean()) < high
    assert paired_bootstrap(a, a) == (0.0, 0.0)
