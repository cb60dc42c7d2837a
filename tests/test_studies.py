"""Studies: three modes on the same ids, compared; sweeps that end with the combined table;
the notebooks executed; failure labels and grounding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, records, run_dir_of

UNIVERSAL = [" I look it up.\nAction 1: Finish[yes]\nAnswer: yes"] * 200  # every mode can read it


def eval_py(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "eval.py"), *args, "progress=false"],
                          cwd=cwd, capture_output=True, text=True, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """standard, cot and react on the same 3 HotpotQA ids (scripted answers, some right)."""
    root = tmp_path_factory.mktemp("study")
    scripts = {
        "standard": [" yes", " no", " Chief of Protocol"],
        "cot": ["r.\nAnswer: no", "r.\nAnswer: no", "r.\nAnswer: Chief of Protocol"],
        "react": [" s.\nAction 1: Search[Ed Wood]", " d.\nAction 2: Finish[yes]", " d.\nAction 1: Finish[yes]",
                  " d.\nAction 1: Finish[yes]"],
    }  # fmt: skip
    for mode, script in scripts.items():
        path = root / f"{mode}.json"
        path.write_text(json.dumps(script))
        done = eval_py(f"mode={mode}", "n=3", "model=scripted", f"model.script={path}", f"results_dir={root / 'runs'}",
                       "show=none", cwd=root)  # fmt: skip
        assert done.returncode == 0, done.stderr
    return root / "runs"


def test_compare_writes_the_table_the_paired_tests_and_both_plots(three_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "compare"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "compare.py"), str(three_runs), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = (out / "table1.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert "33.3 [0.0, 100.0] (n=3)" in rows["standard"] and "28.7" in rows["standard"]  # ours, CI, n, the paper's
    assert "(n=3)" in rows["cot"] and "29.4" in rows["cot"]
    assert "27.4" in rows["react"] and "30.4" in rows["react"]  # PaLM-540B and GPT-3 beside ReAct
    paired = (out / "paired.md").read_text()
    pairs = [line for line in paired.splitlines() if line.startswith("| hotpotqa")]
    assert len(pairs) == 3 and all(line.count("|") == 12 for line in pairs)  # every two of the three runs
    for name in ("cot_sc_k_curve.png", "tokens_per_step.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


def test_paired_statistics_match_their_definitions(three_runs: Path) -> None:
    from react_bench import studies

    runs = studies.load_runs([three_runs])
    for pair in studies.paired(runs):
        assert pair["difference"] == pytest.approx(pair["a_mean"] - pair["b_mean"])
        assert pair["ci_low"] <= pair["difference"] <= pair["ci_high"]
        assert 0 <= pair["mcnemar_p"] <= 1 and (pair["a_only"] + pair["b_only"] > 0 or pair["mcnemar_p"] == 1)


def test_failure_labels_and_grounding(three_runs: Path) -> None:
    from react_bench.results import summarize
    from react_bench.tasks import load_task

    react = next(p for p in three_runs.rglob("react-text/*") if p.is_dir())
    metrics = summarize(react, load_task("hotpotqa").info)
    assert sum(metrics["failure_labels"].values()) == 3
    # the first question is answered "yes" after searching Ed Wood, whose page says nothing "yes": not grounded
    assert 0.0 <= metrics["grounded_accuracy"] <= metrics["grounded"] <= 1.0


def test_accuracy_at_k_follows_the_stored_samples(tmp_path: Path) -> None:
    from react_bench import studies

    run = tmp_path / "run"
    run.mkdir()
    rows = [{"id": "a", "gold": "x", "prediction": "x", "route": "cot_sc", "samples": ["y", "x", "x"]},
            {"id": "b", "gold": "z", "prediction": "z", "route": "cot_sc", "samples": ["z", "q", "q"]}]  # fmt: skip
    (run / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # k=1: a votes y (wrong), b votes z (right); k=2: a tie -> the earliest (y), b tie -> z; k=3: a x, b q
    assert studies.k_curve(run, "hotpotqa", "cot_sc") == [0.5, 0.5, 0.5]


def test_experiment_runs_the_paper_table_and_ends_with_the_combined_table(tmp_path: Path) -> None:
    script = tmp_path / "universal.json"
    script.write_text(json.dumps(UNIVERSAL))
    done = eval_py("experiment=paper_table1", "n=2", "model=scripted", f"model.script={script}",
                   f"results_dir={tmp_path / 'r'}", "show=none", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "combined table of sweep" in done.stdout and "(14 runs;" in done.stdout
    table = done.stdout.split("combined table of sweep", 1)[1]
    assert all(mode in table for mode in ("standard", "cot_sc_react", "react_cot_sc"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "universal.json"]  # nothing in the working folder
    assert not [p for p in (tmp_path / "r").rglob("*") if p.is_dir() and not any(p.iterdir())]  # no empty folders


def test_a_sweep_on_the_joblib_launcher(tmp_path: Path) -> None:
    script = tmp_path / "universal.json"
    script.write_text(json.dumps(UNIVERSAL))
    done = eval_py("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "mode=standard,cot", "n=2",
                   "model=scripted", f"model.script={script}", f"results_dir={tmp_path / 'r'}", "show=none",
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "(2 runs;" in done.stdout
    assert len(list((tmp_path / "r" / "hotpotqa").rglob("metrics.json"))) == 2


@pytest.mark.parametrize("notebook", ["inspect_trajectories.ipynb", "compare_modes.ipynb"])
def test_notebooks_run_without_error(three_runs: Path, notebook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    react = next(p for p in three_runs.rglob("react-text/*") if p.is_dir())
    monkeypatch.setenv("REACT_BENCH_RUN_DIR", str(react))
    monkeypatch.setenv("REACT_BENCH_RUNS", str(three_runs))
    nb = nbformat.read(REPO / "notebooks" / notebook, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"]
    if notebook == "inspect_trajectories.ipynb":
        html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
        assert "<b>search</b>" in html or "<b>text_action</b>" in html  # actions shown with their tool names


def test_trajectory_html_escapes_every_text(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    run = tmp_path / "hotpotqa" / "scripted" / "standard-text" / "x"
    script = tmp_path / "s.json"
    script.write_text(json.dumps([" <script>alert(1)</script>"]))
    done = eval_py("mode=standard", "n=1", "model=scripted", f"model.script={script}", f"results_dir={tmp_path}",
                   "run_id=x", "show=none", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    nb = nbformat.read(REPO / "notebooks" / "inspect_trajectories.ipynb", as_version=4)
    import os

    os.environ["REACT_BENCH_RUN_DIR"] = str(run)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    finally:
        del os.environ["REACT_BENCH_RUN_DIR"]
    html = "".join(o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", []))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert records(run_dir_of(done.stdout))[0]["prediction"].startswith("<script>")
