"""Benchmark a study at scale: ``scripts/compare.py`` over two runs of 2 x 10^4 and 2 x 10^5 examples.

    python bench/bench_study.py                        # writes results/bench/study.{md,json}
    python bench/bench_study.py --examples 2000,10000  # quicker (the checks still hold the goals)
    python bench/bench_study.py --keep DIR             # keep the synthetic studies and compare folders in DIR

The studies are synthetic but in the project's record format: two real runs of 20 HotpotQA questions
(mode=react with a 4-step walk, and mode=cot; the in-process walker, the offline wiki) are made
first, then each run's records are copied round to each size, each line with its own id
(``syn-000000`` ...) and a drawn outcome, in two shapes: ``agree`` (react right with probability
0.35, cot 0.30, one draw per question for both, as two modes on one question are) and ``disagree``
(each run drawn on its own at 0.5: the runs differ on half the questions, so the per-question
diff is as large as it gets). run.json says the full size; no metrics.json is written, so every
figure comes from the records (a run read as it is killed).

``scripts/compare.py`` runs in a child process; its wall time and the peak of the resident memory
of it and its worker processes together (read from /proc every 50 ms) are measured, with the size
of ``report.html`` and of the side files its examples load from. Goals (issues 60 and 69): at most
60 s, at most 1.5 GB, a report of at most 20 MB, each run's score in Table 1 equal to the share of
its records marked correct, the peak at the largest size at most 1.5x the peak at the smallest on
the runs that disagree (memory flat in the study's size), and headless Chromium
(``scripts/screenshot_report.py --example``) showing the last example's trajectory within 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import REPO, check, checks_markdown, environment, environment_line, hotpotqa_plans, write_results

PAGE = os.sysconf("SC_PAGE_SIZE")
GOALS = {"wall_s": 60.0, "peak_rss_mb": 1536.0, "report_mb": 20.0, "rss_growth": 1.5}
P_RIGHT = {"react": 0.35, "cot": 0.30}


def template_runs(work: Path) -> dict[str, Path]:
    """Two real runs of 20 questions (react and cot) to copy the records of."""
    from react_bench.console import quiet_console
    from react_bench.evaluate import evaluate
    from react_bench.methods.core import SolveSettings
    from react_bench.models import ModelSpec
    from react_bench.runconfig import RunConfig
    from react_bench.tasks import TaskConfig
    from react_bench.testing.walker import Walk, WalkingModel

    quiet_console()
    dirs = {}
    for mode in P_RIGHT:
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=20),
            model=ModelSpec.from_mapping({"provider": "scripted", "label": "walker"}),
            solve=SolveSettings(mode=mode, runner="text"),
            results_dir=work / "templates",
            run_id=f"template-{mode}",
            progress=False,
            show="none",
            request_cache="off",
        )
        model = WalkingModel(Walk(4, hotpotqa_plans(20)))
        dirs[mode] = asyncio.run(evaluate(cfg, out=io.StringIO(), model=model)).run_dir
    return dirs


def synthesize(
    templates: dict[str, Path], study: Path, n: int, shape: str = "agree", seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Each template run grown to ``n`` records with drawn outcomes (``testing.synthetic.grow_run``):
    ``agree``, one draw per question for both runs (they differ on 5% of the questions, as two
    modes on one question mostly do); ``disagree``, each run's outcome drawn on its own at 50%
    (they differ on about half: the per-question diff at its largest).
    Returns per run: its folder, the share marked correct, its bytes."""
    from react_bench.testing.synthetic import grow_run

    rng = random.Random(seed)
    shared = [rng.random() for _ in range(n)]
    out: dict[str, dict[str, Any]] = {}
    for mode, template in templates.items():
        if shape == "agree":
            outcomes = [d < P_RIGHT[mode] for d in shared]
        else:
            outcomes = [rng.random() < 0.5 for _ in range(n)]
        run_dir = study / f"{mode}-{n}"
        size = grow_run(template, run_dir, outcomes, f"{mode}-{n}")
        out[mode] = {"dir": run_dir, "share": sum(outcomes) / n, "bytes": size}
    return out


def tree_rss_mb(root: int) -> float:
    """The resident memory of ``root`` and every process below it (the scan's workers), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grew = bool(below)
    total = 0
    for pid in tree:
        try:
            total += int((Path("/proc") / str(pid) / "statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total * PAGE / 2**20


def compare(study: Path, out: Path) -> dict[str, Any]:
    """``scripts/compare.py`` in a child process: wall time, and the peak of the resident memory of
    it and its workers together (sampled every 50 ms)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "compare.py"), str(study), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0.0
    while child.poll() is None:
        peak = max(peak, tree_rss_mb(child.pid))
        time.sleep(0.05)
    wall = time.perf_counter() - started
    stdout, stderr = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"compare.py failed ({child.returncode}): {stderr[-2000:]}")
    return {"wall_s": round(wall, 1), "peak_rss_mb": round(peak, 1), "stdout": stdout}


def open_in_browser(out: Path, study: Path, example: str) -> dict[str, Any]:
    """Headless Chromium opens ``report.html#<run>/<example>`` (scripts/screenshot_report.py): the
    seconds until its DOM is dumped, and whether the example's trajectory is in it."""
    from react_bench.studies.scan import run_key

    study_run = next(p for p in study.iterdir() if p.name.startswith("react-"))
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "screenshot_report.py"),
            str(out),
            str(out / "shot.png"),
            "--dom",
            str(out / "dom.html"),
            "--example",
            f"{run_key(study_run)}/{example}",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"opened_s": None, "shown": False, "said": done.stderr.strip()[-300:]}
    dom = (out / "dom.html").read_text(encoding="utf-8")
    shown = f"example {example}" in dom and 'class="trajectory"' in dom and f'<tr data-id="{example}">' in dom
    return {"opened_s": round(wall, 1), "shown": shown}


def table_scores(table_md: str) -> dict[str, float]:
    """Each mode's HotpotQA cell in table1.md: its mean (percent)."""
    scores = {}
    for line in table_md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and cells[0] in P_RIGHT:
            match = next((re.match(r"([\d.]+) \[", c) for c in cells if re.match(r"[\d.]+ \[", c)), None)
            if match:
                scores[cells[0]] = float(match.group(1))
    return scores


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    checks = []
    for c in result["studies"]:
        at = f"{c['shape']} runs, 2 x {c['examples']} examples"
        checks += [
            check(
                f"compare.py wall, {at} (s)", c["wall_s"], f"<= {GOALS['wall_s']:.0f}", c["wall_s"] <= GOALS["wall_s"]
            ),
            check(
                f"compare.py peak RSS, {at} (MB)",
                c["peak_rss_mb"],
                f"<= {GOALS['peak_rss_mb']:.0f}",
                c["peak_rss_mb"] <= GOALS["peak_rss_mb"],
            ),
            check(
                f"report.html, {at} (MB)",
                c["report_mb"],
                f"<= {GOALS['report_mb']:.0f}",
                c["report_mb"] <= GOALS["report_mb"],
            ),
            check(
                f"Table 1's score = the share of records marked correct, {at}",
                c["scores_match"],
                "true",
                c["scores_match"],
            ),
        ]
    by = {(c["shape"], c["examples"]): c["peak_rss_mb"] for c in result["studies"]}
    sizes = sorted({c["examples"] for c in result["studies"]})
    if len(sizes) > 1 and ("disagree", sizes[0]) in by and ("disagree", sizes[-1]) in by:
        ratio = round(by[("disagree", sizes[-1])] / by[("disagree", sizes[0])], 2)
        checks.append(
            check(
                f"peak RSS at 2 x {sizes[-1]} over 2 x {sizes[0]}, runs that disagree on half",
                ratio,
                f"<= {GOALS['rss_growth']}",
                ratio <= GOALS["rss_growth"],
            )
        )
    browser = result["browser"]
    checks.append(
        check(
            f"Chromium shows the trajectory of example {browser['example']} (s, screenshot and DOM)",
            browser["opened_s"],
            "<= 10, and shown",
            browser["shown"] and (browser["opened_s"] or 1e9) <= 10,
        )
    )
    return checks


def render(result: dict[str, Any]) -> str:
    lines = [
        "# A study at scale: compare.py over two runs",
        "",
        environment_line(result["environment"]),
        "",
        f"Produced by `python bench/bench_study.py --examples {','.join(map(str, result['sizes']))}`: two runs "
        "(HotpotQA react and cot, records copied round from real walker runs) of each size, in two shapes: "
        "`agree` (one draw per question for both runs: they differ on about 5%) and `disagree` (each run drawn "
        "on its own at 50%: they differ on about half, the per-question diff at its largest). No metrics.json "
        "(every figure from the records).",
        "",
        *checks_markdown(result["checks"]),
        "",
        "| shape | examples | examples.jsonl (MB) | wall (s) | peak RSS (MB) | report.html (MB) | side files (MB) "
        "| diff.csv rows | Table 1 (percent) | share marked correct (percent) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in result["studies"]:
        lines.append(
            f"| {c['shape']} | {c['examples']} | {c['examples_jsonl_mb']} | {c['wall_s']} | {c['peak_rss_mb']} | "
            f"{c['report_mb']} | {c['side_files_mb']} | {c['diff_rows']} | {c['table_scores']} | {c['shares']} |"
        )
    b = result["browser"]
    lines += ["", f"Chromium, report.html#<run>/{b['example']}: {b['opened_s']} s, trajectory shown: {b['shown']}."]
    return "\n".join(lines)


def measure(templates: dict[str, Path], work: Path, shape: str, n: int) -> dict[str, Any]:
    """One synthetic study of ``shape`` at ``n`` examples a run, compared; its figures."""
    study, out = work / f"study-{shape}-{n}", work / f"compare-{shape}-{n}"
    runs = synthesize(templates, study, n, shape)
    measured = compare(study, out)
    scores = table_scores((out / "table1.md").read_text(encoding="utf-8"))
    shares = {m: round(100 * r["share"], 1) for m, r in runs.items()}
    side = out / "report_files"
    with (out / "diff.csv").open(encoding="utf-8") as f:
        diff_rows = sum(1 for _ in csv.reader(f)) - 1
    return {
        "shape": shape,
        "examples": n,
        "examples_jsonl_mb": round(sum(r["bytes"] for r in runs.values()) / 2**20, 1),
        "wall_s": measured["wall_s"],
        "peak_rss_mb": measured["peak_rss_mb"],
        "report_mb": round((out / "report.html").stat().st_size / 2**20, 2),
        "side_files_mb": round(sum(p.stat().st_size for p in side.rglob("*") if p.is_file()) / 2**20, 1),
        "diff_rows": diff_rows,
        "table_scores": scores,
        "shares": shares,
        "scores_match": bool(scores) and scores == shares,
        "out": out,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default="20000,100000", help="sizes, comma-separated (examples a run)")
    parser.add_argument("--shapes", default="agree,disagree")
    parser.add_argument("--keep", type=Path, default=None, help="make the studies here and keep them")
    args = parser.parse_args(argv)
    from react_bench.testing.synthetic import synthetic_id

    sizes = sorted(int(x) for x in args.examples.split(","))
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-study-"))
    try:
        templates = template_runs(work)
        studies = []
        for shape in args.shapes.split(","):
            for n in sizes:
                studies.append(measure(templates, work, shape, n))
                shown = {k: v for k, v in studies[-1].items() if k != "out"}
                print(shown, flush=True)
                if n != sizes[-1] or shape != args.shapes.split(",")[0]:
                    shutil.rmtree(work / f"study-{shape}-{n}", ignore_errors=True)
        largest = next(s for s in studies if s["examples"] == sizes[-1])
        example = synthetic_id(sizes[-1] - 1)
        browser = open_in_browser(
            largest["out"], largest["out"].parent / f"study-{largest['shape']}-{sizes[-1]}", example
        )
        result = {
            "sizes": sizes,
            "studies": [{k: v for k, v in s.items() if k != "out"} for s in studies],
            "browser": {"example": example, **browser},
            "environment": environment(),
        }
        result["checks"] = checks_of(result)
        write_results("study", result, render(result))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
