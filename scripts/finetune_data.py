"""Fine-tuning data from runs' correct trajectories (the paper's Figure 3):

    python scripts/finetune_data.py RUN_DIR [RUN_DIR ...] --out DIR

Writes DIR/paper, DIR/chat, DIR/steps (each a datasets.DatasetDict on disk and a JSONL file per
split) and DIR/manifest.json; react_bench/studies/finetune.py says what each holds and how the splits
are drawn (a run over a train file feeds train; a dev id never does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.studies.finetune import export_finetune  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run folders (each with run.json and examples.jsonl)")
    parser.add_argument("--out", type=Path, required=True, help="a new folder")
    args = parser.parse_args(argv)
    missing = [r for r in args.runs if not (r / "run.json").is_file()]
    if missing:
        print(f"error: {missing[0]} is not a run folder (no run.json)", file=sys.stderr)
        return 2
    import datasets

    datasets.disable_progress_bars()
    try:
        manifest = export_finetune(args.runs, args.out)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for fmt, splits in manifest["counts"].items():
        print(f"{fmt}: " + ", ".join(f"{split} {n}" for split, n in splits.items()))
    print(f"wrote {args.out} (manifest.json: sources, filters, counts, tokens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
