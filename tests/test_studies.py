"""Studies: three modes on the same ids, compared; sweeps that end with the combined table;
the notebooks executed; failure labels and grounding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, compare_py, records, report_and_pages, run_dir_of, run_notebook

UNIVERSAL = [" I look it up.\nAction 1: Finish[yes]\nAnswer: yes"] * 200  # every mode can read it


def eval_py(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval.py"), *args, "progress=false"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """standard, cot and react on the same 3 HotpotQA ids (scripted answers, some right)."""
    root = tmp_path_factory.mktemp("study")
    scripts = {
        "standard": [" yes", " no", " Chief of Protocol"],
        "cot": ["r.\nAnswer: no", "r.\nAnswer: no", "r.\nAnswer: Chief of Protocol"],
        "react": [
            " s.\nAction 1: Search[Ed Wood]",
            " d.\nAction 2: Finish[yes]",
            " d.\nAction 1: Finish[yes]",
            " d.\nAction 1: Finish[yes]",
        ],
    }
    for mode, script in scripts.items():
        path = root / f"{mode}.json"
        path.write_text(json.dumps(script))
        done = eval_py(
            f"mode={mode}",
            "n=3",
            "model=scripted",
            f"model.script={path}",
            f"results_dir={root / 'runs'}",
            "show=none",
            cwd=root,
        )
        assert done.returncode == 0, done.stderr
    return root / "runs"


def test_compare_writes_the_table_the_paired_tests_and_both_plots(
    three_runs: Path, tmp_path: Path, prepared_dir
) -> None:
    out = tmp_path / "compare"
    done = compare_py(three_runs, out=out)
    assert done.returncode == 0, done.stderr
    table = (out / "table1.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert (
        "33.3 [6.1, 79.2] (n=3)" in rows["standard"] and "28.7" in rows["standard"]
    )  # ours, Wilson's CI, n, the paper's
    assert "(n=3)" in rows["cot"] and "29.4" in rows["cot"]
    assert "27.4" in rows["react"] and "30.4" in rows["react"]  # PaLM-540B and GPT-3 beside ReAct
    paired = (out / "paired.md").read_text()
    pairs = [line for line in paired.splitlines() if line.startswith("| hotpotqa")]
    # every two of the three runs, Holm's p, the detectable difference and the verdict
    assert len(pairs) == 3 and all(line.count("|") == 15 for line in pairs)
    failures = (out / "failures.md").read_text()
    assert len([line for line in failures.splitlines() if line.startswith("| hotpotqa")]) == 3
    for name in ("cot_sc_k_curve.png", "tokens_per_step.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


def test_paired_statistics_match_their_definitions(three_runs: Path) -> None:
    from statsmodels.stats.multitest import multipletests

    from react_bench import studies

    runs = studies.load_runs([three_runs])
    pairs = studies.paired(runs)
    raw = [p["mcnemar_p"] for p in pairs]
    assert [p["holm_p"] for p in pairs] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    assert all(p["holm_p"] >= p["mcnemar_p"] for p in pairs)
    for pair in pairs:
        assert pair["difference"] == pytest.approx(pair["a_mean"] - pair["b_mean"])
        assert pair["ci_low"] <= pair["difference"] <= pair["ci_high"]
        assert 0 <= pair["mcnemar_p"] <= 1 and (pair["a_only"] + pair["b_only"] > 0 or pair["mcnemar_p"] == 1)


def test_failure_labels_and_grounding(three_runs: Path) -> None:
    from react_bench.results import summarize
    from react_bench.tasks import load_task

    react = next(p for p in three_runs.rglob("react-text/*") if p.is_dir())
    metrics = summarize(react, load_task("hotpotqa").info)
    assert sum(metrics.failure_labels.values()) == 3
    # the first question is answered "yes" after searching Ed Wood, whose page says nothing "yes": not grounded
    assert metrics.grounded_accuracy is not None and metrics.grounded is not None
    assert 0.0 <= metrics.grounded_accuracy <= metrics.grounded <= 1.0


def test_accuracy_at_k_follows_the_stored_samples(tmp_path: Path) -> None:
    from react_bench import studies

    run = tmp_path / "run"
    run.mkdir()
    rows = [
        {"id": "a", "gold": "x", "prediction": "x", "route": "cot_sc", "samples": ["y", "x", "x"]},
        {"id": "b", "gold": "z", "prediction": "z", "route": "cot_sc", "samples": ["z", "q", "q"]},
    ]
    (run / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # k=1: a votes y (wrong), b votes z (right); k=2: a tie -> the earliest (y), b tie -> z; k=3: a x, b q
    assert studies.k_curve(run, "hotpotqa", "cot_sc") == [0.5, 0.5, 0.5]


def test_experiment_runs_the_paper_table_and_ends_with_the_combined_table(
    tmp_path: Path, data_file, reference_text
) -> None:
    for task in ("hotpotqa", "fever"):  # experiment=paper_table1 sends the paper's prompts (prompt=paper)
        data_file(f"prompts/react_{task}_prompts.json")
    reference_text("react/hotpotqa_instruction")
    script = tmp_path / "universal.json"
    script.write_text(json.dumps(UNIVERSAL))
    done = eval_py(
        "experiment=paper_table1",
        "n=2",
        "model=scripted",
        f"model.script={script}",
        f"results_dir={tmp_path / 'r'}",
        "show=none",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "combined table of sweep" in done.stdout and "(14 runs;" in done.stdout
    table = done.stdout.split("combined table of sweep", 1)[1]
    assert all(mode in table for mode in ("standard", "cot_sc_react", "react_cot_sc"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "universal.json"]  # nothing in the working folder
    assert not [p for p in (tmp_path / "r").rglob("*") if p.is_dir() and not any(p.iterdir())]  # no empty folders


def test_a_sweep_on_the_joblib_launcher(tmp_path: Path) -> None:
    script = tmp_path / "universal.json"
    script.write_text(json.dumps(UNIVERSAL))
    done = eval_py(
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "mode=standard,cot",
        "n=2",
        "model=scripted",
        f"model.script={script}",
        f"results_dir={tmp_path / 'r'}",
        "show=none",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "(2 runs;" in done.stdout
    assert len(list((tmp_path / "r" / "hotpotqa").rglob("metrics.json"))) == 2


@pytest.mark.parametrize("notebook", ["inspect_trajectories.ipynb", "compare_modes.ipynb"])
def test_notebooks_run_without_error(three_runs: Path, notebook: str, monkeypatch: pytest.MonkeyPatch) -> None:
    react = next(p for p in three_runs.rglob("react-text/*") if p.is_dir())
    monkeypatch.setenv("REACT_BENCH_RUN_DIR", str(react))
    monkeypatch.setenv("REACT_BENCH_RUNS", str(three_runs))
    outputs = run_notebook(notebook)
    if notebook == "inspect_trajectories.ipynb":
        html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
        assert "<b>search</b>" in html or "<b>text_action</b>" in html  # actions shown with their tool names


def test_the_notebooks_find_the_repos_results_when_opened_from_notebooks(three_runs: Path, tmp_path: Path) -> None:
    """Opened in notebooks/ with no variable set, each finds <repo>/results (not notebooks/results)."""
    import shutil

    import nbformat
    from nbclient import NotebookClient

    repo = tmp_path / "repo"  # a repository of its own: the machine's results/ is never read
    (repo / "notebooks").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copytree(three_runs, repo / "results")
    for name in ("inspect_trajectories.ipynb", "compare_modes.ipynb"):
        nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
        client = NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(repo / "notebooks")}}
        )
        client.execute(env={k: v for k, v in os.environ.items() if not k.startswith("REACT_BENCH_RUN")})
        outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
        assert not [o for o in outputs if o.get("output_type") == "error"], name
        text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
        assert str(repo / "results") in text or "react" in text, name


def test_trajectory_html_escapes_every_text(tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    run = tmp_path / "hotpotqa" / "scripted" / "standard-text" / "x"
    script = tmp_path / "s.json"
    script.write_text(json.dumps([" <script>alert(1)</script>"]))
    done = eval_py(
        "mode=standard",
        "n=1",
        "model=scripted",
        f"model.script={script}",
        f"results_dir={tmp_path}",
        "run_id=x",
        "show=none",
        cwd=tmp_path,
    )
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


KEY_ENV = "REACT_BENCH_TEST_STUDY_KEY"


def test_a_sweep_over_both_runners_and_two_modes_is_one_table_of_four_rows_with_a_diff(
    tmp_path: Path, prepared_dir
) -> None:
    """runner=text,tool_use x mode=react,act: four rows (none dropped for sharing a mode), and the
    per-question diff names the question the tool-use runs got wrong, with both answers."""
    from react_bench.testing.messages_server import MessagesServer
    from tests.support_oracle import Oracle, gold_answers

    golds = gold_answers(3)
    first = next(iter(golds))
    right, wrong = Oracle(golds), Oracle({**golds, first: "nobody"})

    def respond(body):  # the tool-use runs answer the first question wrong
        return (wrong if body.get("tools") else right)(body)

    with MessagesServer(responder=respond) as server:
        done = subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "eval.py"),
                "-m",
                "mode=react,act",
                "runner=text,tool_use",
                "model=claude-sonnet-4-6",
                f"model.base_url={server.base_url}",
                f"model.api_key_env={KEY_ENV}",
                "n=3",
                f"results_dir={tmp_path / 'r'}",
                "show=none",
                "progress=false",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, KEY_ENV: "not-a-real-key"},
        )
    assert done.returncode == 0, done.stderr
    (out,) = (tmp_path / "r" / "compare").iterdir()
    table = (out / "table1.md").read_text()
    rows = [[c.strip() for c in line.split("|")[1:4]] for line in table.splitlines() if line.startswith("| ")]
    shown = [r for r in rows if r[1] in ("text", "tool_use")]
    assert sorted(map(tuple, shown)) == [
        ("act", "text", "claude-sonnet-4-6"),
        ("act", "tool_use", "claude-sonnet-4-6"),
        ("react", "text", "claude-sonnet-4-6"),
        ("react", "tool_use", "claude-sonnet-4-6"),
    ]
    assert "not shown" not in table  # nothing dropped
    diff = (out / "diff.md").read_text()
    section = next(
        s for s in diff.split("## ")[1:] if s.startswith("hotpotqa: A = react/text") and "react/tool_use" in s
    )
    assert section.count("| 5a") == 1 and first in section  # just the question the runners disagree on
    assert f"| {golds[first]} (right) | nobody (wrong) |" in section
    report = report_and_pages(out)
    assert (out / "report.html").read_text().count("<details class='run' ") == 4 and "nobody" in report


def test_the_study_report_opens_in_a_real_browser(three_runs: Path, tmp_path: Path, prepared_dir: Path) -> None:
    """report.html as headless Chromium renders it: every run, question and gold, a real picture."""
    import shutil

    from PIL import Image

    if not (shutil.which("chromium") or os.environ.get("CHROMIUM")):
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium (.ci/run installs it)")
        pytest.skip("no chromium here (apt-get install chromium)")
    out = tmp_path / "study"
    compare = compare_py(three_runs, out=out)
    assert compare.returncode == 0, compare.stderr
    shot = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "screenshot_report.py"),
            str(out),
            str(out / "s.png"),
            "--dom",
            str(out / "dom.html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shot.returncode == 0, shot.stderr
    dom = (out / "dom.html").read_text()
    assert dom.count('<details class="run" ') == 3  # the browser parsed one section per run
    assert "Were Scott Derrickson and Ed Wood of the same nationality?" in dom and "Chief of Protocol" in dom
    assert "Table 1 (ours beside the paper" in dom and "<img" in dom
    image = Image.open(out / "s.png").convert("L")
    assert image.size == (1300, 1100)
    low, high = image.getextrema()
    assert high - low > 100  # text on a page, not a blank screen


def test_the_token_plot_is_a_grid_of_panels_titled_by_run(tmp_path: Path) -> None:
    """Seven agent runs: three panels a row (not a strip of seven), readable at a glance."""
    import pandas as pd
    from PIL import Image

    from react_bench import studies

    run = tmp_path / "run"
    run.mkdir()
    events = [
        {
            "type": "step_finished",
            "step": k,
            "usage": {"input_tokens": 100 * k, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        for k in (1, 2, 3)
    ]
    (run / "examples.jsonl").write_text(json.dumps({"id": "a", "trajectory": [{"events": events}]}) + "\n")
    runs = pd.DataFrame(
        [
            {
                "task": "hotpotqa",
                "mode": "react",
                "runner": "text",
                "model": "m",
                "run_id": f"r{i}",
                "run_dir": str(run),
            }
            for i in range(7)
        ]
    )
    studies.plot_tokens(runs, tmp_path / "t.png")
    width, height = Image.open(tmp_path / "t.png").size
    assert width < 1600 and height > 900  # 3 x 3 grid at 110 dpi, not 7 x 4 inches in a row


def test_the_frontier_places_every_run_by_cost_and_score(three_runs: Path, tmp_path: Path, prepared_dir) -> None:
    """frontier.md and frontier.png beside Table 1: the scripted runs have no price, so the task is
    measured in tokens per example for every run; a run is on the frontier when nothing at most
    as costly scores as high, and each step up says what an extra correct answer costs."""
    from react_bench.studies import frontier, load_runs, write_study

    runs = load_runs([three_runs])
    points = frontier(runs)
    assert len(points) == 3 and set(points["measure"]) == {"tokens"}
    by_run = {p.run.split("/")[0]: p for p in points.itertuples()}
    for p in points.itertuples():  # the definition, checked against every other point (two runs of
        # different modes started within one second share a run id: the row tells them apart)
        cheaper_or_equal = points[(points["per_example"] <= p.per_example) & (points.index != p.Index)]
        dominated = bool(len(cheaper_or_equal)) and cheaper_or_equal["mean"].max() >= p.mean
        assert p.on_frontier == (not dominated), p.run
    ordered = points.sort_values("per_example")
    on = ordered[ordered["on_frontier"]]
    assert on.iloc[0]["per_extra_correct"] is None  # the cheapest frontier run has no step before it
    for (_, a), (_, b) in zip(on.iloc[:-1].iterrows(), on.iloc[1:].iterrows(), strict=True):
        assert b["per_extra_correct"] == pytest.approx((b["per_example"] - a["per_example"]) / (b["mean"] - a["mean"]))
    assert by_run["standard"].n == 3
    out = tmp_path / "study"
    study = write_study(runs, out)
    assert {"frontier.md", "frontier.png"} <= set(study["written"])
    md = (out / "frontier.md").read_text()
    assert "## hotpotqa (tokens per example)" in md and md.count("| yes |") == int(points["on_frontier"].sum())
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "cost against accuracy" in (out / "report.html").read_text()
    # priced runs are placed in dollars: a run's cost over its n
    priced = runs.assign(cost_usd=[0.03, 0.06, 0.3][: len(runs)])
    dollars = frontier(priced)
    assert set(dollars["measure"]) == {"USD"}
    assert sorted(dollars["per_example"]) == pytest.approx(sorted(c / 3 for c in priced["cost_usd"]))
