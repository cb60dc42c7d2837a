"""The best configuration for a budget: a race over models, modes and settings that stops the
dominated ones early (react_bench/search.py says how each decision is made).

    python scripts/search.py task=hotpotqa n=200 search.models=[claude-haiku-4-5,claude-sonnet-4-6]
                             search.modes=[cot,react,cot_sc] budget_usd=2 [batch=true] [judge=...]
    python scripts/search.py ... search.grid.mode.k=[3,5] search.baselines=true search.margin=2

Every configuration runs the same stratified slices (search.slice=50) as ordinary run folders; after
each slice the dominated ones are dropped; the budget is never passed. It writes
<results_dir>/search/<search.name>/search.{json,md,png}. The same command again sends nothing new
and gives the same frontier; a killed search goes on. Exit code 2: a setting is unusable.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    quiet_console()
    from react_bench.search import main as search

    try:
        return search(args)
    except (ConfigError, DataError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
