"""Export a run folder: ``python scripts/export.py RUN_DIR --to inspect|csv|parquet [--out PATH]``.

``--to inspect`` writes an inspect_ai log (``RUN_DIR/inspect/<run id>.eval``); open it with
``inspect view --log-dir RUN_DIR/inspect``. ``csv`` / ``parquet`` write the examples table.
Needs the optional extra: ``pip install -e '.[viewer]'`` (inspect-ai, pyarrow).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.errors import ConfigError  # noqa: E402
from react_bench.studies.export import FORMATS, export_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--to", choices=FORMATS, default="inspect")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not (args.run_dir / "run.json").is_file() or not (args.run_dir / "metrics.json").is_file():
        print(f"error: {args.run_dir} is not a finished run folder (run.json and metrics.json)", file=sys.stderr)
        return 2
    try:
        path = export_run(args.run_dir, args.to, args.out)
    except ImportError as exc:
        print(f"error: {exc.name} is missing: pip install -e '.[viewer]'", file=sys.stderr)
        return 2
    except ConfigError as exc:  # a folder the export will not write into (a link in it)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
