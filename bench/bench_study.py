"""Benchmark a study at scale: ``scripts/compare.py`` over two runs x 10^5 examples.

    python bench/bench_study.py                  # writes results/bench/study.{md,json}
    python bench/bench_study.py --examples 20000 # quicker (the checks still hold the 10^5 goals)
    python bench/bench_study.py --keep DIR       # keep the synthetic study and its compare folder in DIR

The study is synthetic but in the project's record format: two real runs of 20 HotpotQA questions
(mode=react with a 4-step walk, and mode=cot; the in-process walker, the offline wiki) are made
first, then each run's records are copied round to ``--examples`` lines, each with its own id
(``syn-000000`` ...) and a drawn outcome (react right with probability 0.35, cot 0.30, the two
outcomes correlated as two modes on one question are). run.json says the full size; no
metrics.json is written, so every figure comes from the records (a run read as it is killed).

``scripts/compare.py`` runs in a child process; its wall time and the peak of the resident memory
of it and its worker processes together (read from /proc every 50 ms) are measured, with the size
of ``report.html`` and of the side files its examples load from. Goals (issue 60): at most 60 s, at most
1.5 GB, a report of at most 20 MB, each run's score in Table 1 equal to the share of its records
marked correct, and headless Chromium (``scripts/screenshot_report.py --example``) showing the last
example's trajectory within 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
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
GOALS = {"wall_s": 60.0, "peak_rss_mb": 1536.0, "report_mb": 20.0}
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


def synthesize(templates: dict[str, Path], study: Path, n: int, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Each template run grown to ``n`` records with drawn outcomes (``testing.synthetic.grow_run``).
    Returns per run: its folder, the share marked correct, its bytes."""
    from react_bench.testing.synthetic import grow_run

    rng = random.Random(seed)
    draws = [rng.random() for _ in range(n)]  # one draw per question: the two modes' outcomes correlate
    out: dict[str, dict[str, Any]] = {}
    for mode, template in templates.items():
        outcomes = [d < P_RIGHT[mode] for d in draws]
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


def open_in_browser(out: Path, example: str) -> dict[str, Any]:
    """Headless Chromium opens ``report.html#<run>/<example>`` (scripts/screenshot_report.py): the
    seconds until its DOM is dumped, and whether the example's trajectory is in it."""
    from react_bench.studies.scan import run_key

    study_run = next(p for p in (out.parent / "study").iterdir() if p.name.startswith("react-"))
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
    c = result["compare"]
    at = f"2 runs x {result['examples']} examples"
    return [
        check(f"compare.py wall, {at} (s)", c["wall_s"], f"<= {GOALS['wall_s']:.0f}", c["wall_s"] <= GOALS["wall_s"]),
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
            f"Chromium shows the trajectory of example {result['examples'] - 1} (s, screenshot and DOM)",
            result["browser"]["opened_s"],
            "<= 10, and shown",
            result["browser"]["shown"] and (result["browser"]["opened_s"] or 1e9) <= 10,
        ),
        check(
            "Table 1's score = the share of records marked correct (both runs)",
            c["scores_match"],
            "true",
            c["scores_match"],
        ),
    ]


def render(result: dict[str, Any]) -> str:
    c = result["compare"]
    lines = [
        "# A study at scale: compare.py over two runs",
        "",
        environment_line(result["environment"]),
        "",
        f"Produced by `python bench/bench_study.py --examples {result['examples']}`: two runs (HotpotQA react and "
        f"cot, records copied round from real walker runs) of {result['examples']} examples each, "
        f"{result['examples_jsonl_mb']} MB of examples.jsonl in all, no metrics.json (every figure from the "
        "records).",
        "",
        *checks_markdown(result["checks"]),
        "",
        "| figure | value |",
        "|---|---|",
        f"| wall (s) | {c['wall_s']} |",
        f"| peak RSS (MB) | {c['peak_rss_mb']} |",
        f"| report.html (MB) | {c['report_mb']} |",
        f"| report side files (MB) | {c['side_files_mb']} |",
        f"| diff.md (MB) | {c['diff_mb']} |",
        f"| Table 1 (percent) | {c['table_scores']} |",
        f"| Chromium, report.html#<run>/<last id>: seconds, trajectory shown | {result['browser']['opened_s']}, "
        f"{result['browser']['shown']} |",
        f"| share marked correct (percent) | {c['shares']} |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=None, help="make the study here and keep it")
    args = parser.parse_args(argv)
    from react_bench.testing.synthetic import synthetic_id

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-study-"))
    try:
        runs = synthesize(template_runs(work), work / "study", args.examples)
        out = work / "compare"
        measured = compare(work / "study", out)
        table = (out / "table1.md").read_text(encoding="utf-8")
        scores = table_scores(table)
        shares = {m: round(100 * r["share"], 1) for m, r in runs.items()}
        side = out / "report_files"
        side_mb = sum(p.stat().st_size for p in side.rglob("*") if p.is_file()) / 2**20 if side.is_dir() else 0.0
        result = {
            "examples": args.examples,
            "examples_jsonl_mb": round(sum(r["bytes"] for r in runs.values()) / 2**20, 1),
            "compare": {
                "wall_s": measured["wall_s"],
                "peak_rss_mb": measured["peak_rss_mb"],
                "report_mb": round((out / "report.html").stat().st_size / 2**20, 2),
                "side_files_mb": round(side_mb, 1),
                "diff_mb": round((out / "diff.md").stat().st_size / 2**20, 2),
                "table_scores": scores,
                "shares": shares,
                "scores_match": bool(scores) and scores == shares,
            },
            "browser": open_in_browser(out, synthetic_id(args.examples - 1)),
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
