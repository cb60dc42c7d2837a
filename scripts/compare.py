"""Compare runs: ``python scripts/compare.py PATH... [--out DIR]``.

PATH: run folders, or folders holding runs (e.g. ``results/``). Writes to ``--out`` (default
``results/compare/<time>/``):

- ``table1.md`` / ``table1.csv``: modes x (HotpotQA EM, FEVER accuracy) with 95% CIs and n,
  the paper's PaLM-540B and GPT-3 figures beside, cost per run and per correct answer; cells
  marked ``*`` (protocol=custom), ``†`` (other example ids), ``‡`` (errored examples);
- ``paired.md``: every two runs over the same ids: the difference, its paired bootstrap CI
  and McNemar's exact p;
- ``cot_sc_k_curve.png``: accuracy at k from the stored CoT-SC samples (the paper's Figure 2);
- ``tokens_per_step.png``: input tokens per turn along episodes, cached parts stacked;
- ``context.md``: runs that differ only in ``context`` (the remedy) side by side: score, tokens, cost;
- ``runs.csv``: one row per run (accuracy, grounded accuracy, tokens, cost, context, ...).
See ``react_bench/studies.py`` for how each figure is computed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench import studies  # noqa: E402

LEGEND = "`*` protocol=custom; `†` example ids differ from the task's other runs; `‡` examples ended in an error"


def write_table1(runs, out: Path) -> None:
    table, notes = studies.table1(runs)
    table.to_csv(out / "table1.csv", index=False)
    lines = ["# Table 1 (ours beside the paper's)", "", table.to_markdown(index=False), "", LEGEND]
    if notes:
        lines += ["", "Runs not shown (a newer run fills the cell):", *[f"- {n}" for n in notes]]
    (out / "table1.md").write_text("\n".join(lines) + "\n")


def write_paired(runs, out: Path) -> None:
    rows = studies.paired(runs)
    lines = ["# Paired comparisons (same task, same example ids)", "",
             "| task | A | B | n | A | B | A - B | 95% CI | A only | B only | McNemar p |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['a']} | {r['b']} | {r['n']} | {100 * r['a_mean']:.1f} | {100 * r['b_mean']:.1f} | "
            f"{100 * r['difference']:+.1f} | [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] | "
            f"{r['a_only']} | {r['b_only']} | {r['mcnemar_p']:.3g} |"
        )
    if not rows:
        lines.append("(no two runs share a task and example ids)")
    (out / "paired.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    runs = studies.load_runs(args.paths)
    if runs.empty:
        print(f"error: no run folders (with run.json) under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    out = args.out or Path("results") / "compare" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    write_table1(runs, out)
    write_paired(runs, out)
    orderings = studies.table3(runs)
    if len(orderings):
        (out / "table3.md").write_text("# ALFWorld per task type (the paper's Table 3 below)\n\n"
                                       + orderings.to_markdown(index=False) + "\n")  # fmt: skip
    remedies = studies.context_comparison(runs)
    if len(remedies):
        (out / "context.md").write_text(
            "# Context remedies side by side\n\n" + remedies.to_markdown(index=False) + "\n"
        )
    studies.plot_k_curve(runs, out / "cot_sc_k_curve.png")
    studies.plot_tokens(runs, out / "tokens_per_step.png")
    runs.drop(columns=["ids"]).to_csv(out / "runs.csv", index=False)
    print((out / "table1.md").read_text())
    print(f"written to {out}: table1.md, table1.csv, paired.md, cot_sc_k_curve.png, tokens_per_step.png, runs.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
