"""A study folder, every file of it (``scripts/compare.py`` and a sweep's combined table both write
it): the tables as markdown and CSV, the paired tests, the per-question diff, the failure labels,
the plots, the frontier, runs.csv and report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from react_bench.studies.frontier import frontier, frontier_markdown
from react_bench.studies.plots import plot_frontier, plot_k_curve, plot_learning_curves, plot_tokens
from react_bench.studies.report import write_report
from react_bench.studies.runs import md_cell, run_label
from react_bench.studies.statistics import (
    comparable_pairs,
    detectable_text,
    flips,
    paired,
    question_diff,
    verdict,
)
from react_bench.studies.tables import LEGEND, context_comparison, custom_notes, learning_curves, table1, table3


def write_study(runs: Any, out: Path, *, every_run: bool = False) -> dict[str, Any]:
    """Every file of a study folder (``scripts/compare.py`` and a sweep's combined table both write
    it): table1.md/.csv with its notes, paired.md, diff.md, failures.md, table3.md and context.md
    where they apply, both plots, runs.csv, report.html. Returns what was written and the table."""
    out.mkdir(parents=True, exist_ok=True)
    table, notes = table1(runs, every_run=every_run)
    table.to_csv(out / "table1.csv", index=False)
    markdown = table.to_markdown(index=False)
    lines = ["# Table 1 (ours beside the paper's)", "", markdown, "", LEGEND]
    custom = custom_notes(runs)
    if custom:
        lines += ["", "Runs to read with care:", *[f"- {n}" for n in custom]]
    if notes:
        lines += ["", "Runs not shown, and why:", *[f"- {n}" for n in notes]]
    pairs = paired(runs)
    if pairs:  # what each pair can tell apart, under the table as compare.py prints it
        lines += ["", "Paired comparisons (same task, same example ids; paired.md has the tests):"]
        lines += [f"- {line}" for line in paired_lines(pairs)]
    judged = paired(runs, judged=True) if len(runs) and runs["judged_metric"].notna().any() else []
    if judged:  # the same pairs under the judge's verdicts, and where the two readings disagree on the order
        lines += ["", "Paired comparisons judged (judge=: the verdicts beside the run):"]
        lines += [f"- {line}" for line in paired_lines(judged)]
        flipped = flips(pairs, judged)
        if flipped:
            lines += ["", "Order flips between exact match and judged:", *[f"- {line}" for line in flipped]]
    (out / "table1.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = paired_markdown(pairs)
    if judged:
        text += "\n" + paired_markdown(judged).replace("# Paired comparisons", "# Paired comparisons judged", 1)
    (out / "paired.md").write_text(text, encoding="utf-8")
    (out / "diff.md").write_text(diff_markdown(runs, out / "diff.csv"), encoding="utf-8")
    (out / "failures.md").write_text(failures_markdown(runs), encoding="utf-8")
    written = ["table1.md", "table1.csv", "paired.md", "diff.md", "diff.csv", "failures.md"]
    orderings = table3(runs)
    if len(orderings):
        (out / "table3.md").write_text(
            "# ALFWorld per task type (the paper's Table 3 below)\n\n" + orderings.to_markdown(index=False) + "\n",
            encoding="utf-8",
        )
        written.append("table3.md")
    curves = learning_curves(runs)
    if len(curves):
        (out / "learning_curve.md").write_text(
            "# Reflexion: right after each trial\n\n" + curves.to_markdown(index=False, disable_numparse=True) + "\n",
            encoding="utf-8",
        )
        plot_learning_curves(runs, out / "learning_curve.png")
        written += ["learning_curve.md", "learning_curve.png"]
    remedies = context_comparison(runs)
    if len(remedies):
        (out / "context.md").write_text(
            "# Context remedies side by side\n\n" + remedies.to_markdown(index=False) + "\n", encoding="utf-8"
        )
        written.append("context.md")
    plot_k_curve(runs, out / "cot_sc_k_curve.png")
    plot_tokens(runs, out / "tokens_per_step.png")
    points = frontier(runs)
    (out / "frontier.md").write_text(frontier_markdown(points), encoding="utf-8")
    plot_frontier(points, out / "frontier.png")
    runs.drop(columns=["ids"]).to_csv(out / "runs.csv", index=False)
    written += ["cot_sc_k_curve.png", "tokens_per_step.png", "frontier.md", "frontier.png", "runs.csv"]
    write_report(runs, out, table_markdown="\n".join(lines), pairs=pairs, frontier_markdown=frontier_markdown(points))
    written.append("report.html")
    return {
        "table": table,
        "markdown": markdown,
        "notes": notes,
        "custom": custom,
        "written": written,
        "orderings": orderings,
    }


def paired_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Paired comparisons (same task, same example ids)",
        "",
        f"Holm's adjustment is over all {len(rows)} pairs of this study.",
        "",
        "Detectable: the smallest difference McNemar's test detects at 80% power with the pair's n and the "
        "share of examples on which the two disagree (Connor, 1987); a difference below it is not distinguishable.",
        "",
        "| task | A | B | n | A | B | A - B | 95% CI | A only | B only | McNemar p | Holm p | detectable | verdict |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['a']} | {r['b']} | {r['n']} | {100 * r['a_mean']:.1f} | {100 * r['b_mean']:.1f} | "
            f"{100 * r['difference']:+.1f} | [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] | "
            f"{r['a_only']} | {r['b_only']} | {r['mcnemar_p']:.3g} | {r['holm_p']:.3g} | "
            f"{detectable_text(r)} | {verdict(r)} |"
        )
    if not rows:
        lines.append("(no two runs share a task and example ids)")
    return "\n".join(lines) + "\n"


def paired_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per pair, as compare.py prints them under Table 1."""
    return [
        f"{r['task']}: {r['a']} vs {r['b']} (n={r['n']}): A - B = {100 * r['difference']:+.1f} points, "
        f"detectable at 80% power: {detectable_text(r)} points; {verdict(r)}"
        for r in rows
    ]


DIFF_ROWS = 100  # rows of diff.md per pair; diff.csv has every one


def diff_markdown(runs: Any, csv_path: Path | None = None) -> str:
    """Per pair of runs over the same ids, the questions whose correctness changed: the first
    ``DIFF_ROWS`` in the markdown, every one in ``csv_path`` (diff.csv) when given."""
    import csv

    lines = ["# Per-question differences (runs over the same ids)", ""]
    pairs = comparable_pairs(runs)
    columns = [
        "task",
        "a_run",
        "b_run",
        "id",
        "question",
        "gold",
        "a_prediction",
        "a_correct",
        "b_prediction",
        "b_correct",
    ]
    with open(csv_path, "w", newline="", encoding="utf-8") if csv_path is not None else _Discard() as f:
        table = csv.writer(f)
        table.writerow(columns)
        for a, b in pairs:
            shown: list[dict[str, Any]] = []
            count = 0  # the diff streams to diff.csv; only the rows shown here are kept
            for c in question_diff(Path(a.run_dir), Path(b.run_dir)):
                table.writerow([a.task, a.run_id, b.run_id, *(c[k] for k in columns[3:])])
                count += 1
                if len(shown) < DIFF_ROWS:
                    shown.append(c)
            more = count - DIFF_ROWS
            lines += [
                f"## {a.task}: A = {run_label(a)}, B = {run_label(b)}",
                "",
                f"{count} of {a.n} questions changed; trajectories: A {a.run_dir}, B {b.run_dir} "
                "(examples.jsonl, by id)."
                + (f" The first {DIFF_ROWS} below; every one in diff.csv." if more > 0 else ""),
                "",
            ]
            if shown:
                lines += ["| id | question | gold | A answer | B answer |", "| --- | --- | --- | --- | --- |"]
                mark = {True: "right", False: "wrong"}
                for c in shown:
                    lines.append(
                        f"| {c['id']} | {md_cell(c['question'])} | {md_cell(c['gold'])} | "
                        f"{md_cell(c['a_prediction'])} ({mark[c['a_correct']]}) | "
                        f"{md_cell(c['b_prediction'])} ({mark[c['b_correct']]}) |"
                    )
                if more > 0:
                    lines.append(f"| ... | {more} more in diff.csv | | | |")
                lines.append("")
    if not pairs:
        lines.append("(no two runs share a task and example ids)")
    return "\n".join(lines) + "\n"


class _Discard:
    """A file that keeps nothing (diff_markdown without a CSV)."""

    def __enter__(self) -> _Discard:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, text: str) -> int:
        return len(text)


def failures_markdown(runs: Any) -> str:
    """The failure labels (results.FAILURE_LABELS, the paper's Table 2 done automatically) per run."""
    from react_bench.results import FAILURE_LABELS

    lines = [
        "# Failure labels per run (the first that applies; see docs/guide.md)",
        "",
        "| run | n | " + " | ".join(FAILURE_LABELS) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in FAILURE_LABELS) + " |",
    ]
    for r in runs.sort_values(["task", "mode", "runner", "started"]).itertuples() if len(runs) else ():
        counts = r.failure_labels or {}
        lines.append(
            f"| {r.task} {run_label(r)} | {r.n} | " + " | ".join(str(counts.get(k, 0)) for k in FAILURE_LABELS) + " |"
        )
    return "\n".join(lines) + "\n"
