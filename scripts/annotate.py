"""Label a run's trajectories for the paper's error analysis (Table 2), in the terminal:

    python scripts/annotate.py RUN_DIR [--n 50] [--seed 0] [--out FILE]

Shows each sampled example (n successes, n failures, seeded): the question, the gold, the answer
and every step; type a label's number (or q to stop), then a note (Enter for none). Labels are
kept as they are given (RUN_DIR/annotations.jsonl): run it again to go on where you stopped.
Writes RUN_DIR/table2.md (the shares beside the paper's, and the agreement with the automatic
labels) whenever something is labelled. react_bench/studies/analysis.py has the labels and the rules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.results import iter_example_records  # noqa: E402
from react_bench.studies.analysis import LABELS, Annotation, Label, auto_label, table2  # noqa: E402

MENU = "  ".join(f"{k} {name}" for k, name in enumerate(LABELS, start=1)) + "  q stop"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--n", type=int, default=50, help="successes and failures each (the paper: 50)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="the labels' file (default RUN_DIR/annotations.jsonl)")
    args = parser.parse_args(argv)
    if not (args.run_dir / "examples.jsonl").is_file():
        print(f"error: {args.run_dir} is not a run folder (no examples.jsonl)", file=sys.stderr)
        return 2
    annotation = Annotation(args.run_dir, n=args.n, seed=args.seed, path=args.out)
    todo = annotation.todo()
    total = len(annotation.chosen)

    def ask(record, shown):
        print(f"\n=== {total - len(annotation.todo()) + 1} of {total}\n{shown}\n{MENU}")
        while True:
            try:
                key = input("label> ").strip().lower()
            except EOFError:
                return None
            if key == "q":
                return None
            if key.isdigit() and 1 <= int(key) <= len(LABELS):
                try:
                    note = input("note> ").strip()
                except EOFError:
                    note = ""
                return LABELS[int(key) - 1], note
            print(f"  one of 1-{len(LABELS)}, or q")

    if todo:
        annotation.run(ask)
    labelled = len(annotation.labels)
    print(f"\n{labelled} labelled, {len(annotation.todo())} left ({annotation.path})")
    if labelled:
        auto = [Label(r.id, auto_label(r)[0], by="auto") for r in iter_example_records(args.run_dir)]
        (args.run_dir / "table2.md").write_text(table2(args.run_dir, list(annotation.labels.values()), auto))
        print(f"wrote {args.run_dir / 'table2.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
