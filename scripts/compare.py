"""Compare runs: ``python scripts/compare.py PATH... [--out DIR] [--every-run] [--runs ID,...]``.

PATH: run folders, or folders holding runs (e.g. ``results/``). ``--runs`` keeps only the runs
with those run ids; ``--every-run`` gives every run its own row in Table 1 (by default a cell
shows the newest run of its mode, runner, model and task, and every other run is named below
the table with the reason). Writes to ``--out`` (default ``results/compare/<time>/``):

- ``table1.md`` / ``table1.csv``: a row per mode, runner and model x (HotpotQA EM, FEVER
  accuracy, ...) with 95% CIs and n, the paper's PaLM-540B and GPT-3 figures beside, cost per
  run and per correct answer; cells marked ``*`` (protocol=custom), ``†`` (other example ids),
  ``‡`` (errored examples), ``§`` (a setting not applied);
- ``paired.md``: every two runs over the same ids: the difference, its paired bootstrap CI,
  McNemar's exact p and Holm's adjusted p;
- ``diff.md``: per pair, the questions whose correctness changed, both answers and the gold (the
  first 100 a pair; ``diff.csv`` has every one);
- ``failures.md``: the failure labels of every run;
- ``cot_sc_k_curve.png``, ``tokens_per_step.png``; ``table3.md`` (ALFWorld) and ``context.md``
  where they apply; ``runs.csv``: one row per run;
- ``frontier.md`` / ``frontier.png``: cost against accuracy per task, each run a point (dollars per
  example, or tokens where a run has no price) with its interval, the Pareto frontier marked and
  what each step up along it costs per extra correct answer;
- ``report.html``: all of it on one static page, every run's examples paged and searchable, each
  trajectory loaded when opened from ``report_files/`` beside it (the page stays light at any size).
See ``react_bench/studies/`` for how each figure is computed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench import studies  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--every-run", action="store_true", help="a row per run in Table 1")
    parser.add_argument("--runs", default=None, help="comma-separated run ids to keep (default: all found)")
    args = parser.parse_args(argv)
    out = args.out or Path("results") / "compare" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    wanted = {w.strip() for w in args.runs.split(",") if w.strip()} if args.runs else None
    # one pass over each run's records, for every file below (and the report's pages)
    runs = studies.load_runs(args.paths, report_dir=out, run_ids=wanted)
    if runs.empty and not wanted:
        print(f"error: no run folders (with run.json) under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    missing = (wanted or set()) - set(runs["run_id"] if len(runs) else ())
    if missing:
        print(f"error: --runs: no run with id {', '.join(sorted(missing))} under the paths", file=sys.stderr)
        return 2
    study = studies.write_study(runs, out, every_run=args.every_run)
    print((out / "table1.md").read_text(encoding="utf-8"))
    print(f"written to {out}: {', '.join(study['written'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
