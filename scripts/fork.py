"""Fork a recorded trajectory at step K with an edited thought (the paper's Figure 5):

    python scripts/fork.py RUN_DIR --example ID --step K --thought "..."

Steps 1..K come from the run's own recording (no model call); step K's thought is the one given;
the model goes on live from step K+1. The fork is a new run folder beside the parent's, with
fork.json (the parent, the example, the step, the edit) and fork.md (both trajectories side by
side). react_bench/fork.py says what is supported.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.fork import fork_run  # noqa: E402
from react_bench.models.base import ModelError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the parent run's folder")
    parser.add_argument("--example", required=True, help="the example's id")
    parser.add_argument("--step", type=int, required=True, help="the step whose thought is edited")
    parser.add_argument("--thought", required=True, help="the thought put in its place")
    args = parser.parse_args(argv)
    quiet_console()
    if not (args.run_dir / "run.json").is_file() or not (args.run_dir / "calls.jsonl").is_file():
        print(f"error: {args.run_dir} is not a run folder (run.json and calls.jsonl)", file=sys.stderr)
        return 2
    try:
        fork = asyncio.run(fork_run(args.run_dir, args.example, args.step, args.thought))
    except (ConfigError, ModelError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print((fork.run_dir / "fork.md").read_text(encoding="utf-8"))
    print(f"fork: {fork.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
