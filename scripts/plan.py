"""How big a run must be, from a pilot run (react_bench/plan.py says how each figure is made):

    python scripts/plan.py PILOT_DIR detect=3              # examples and trials to detect 3 points
    python scripts/plan.py PILOT_A PILOT_B detect=3        # two pilots over the same examples
    python scripts/plan.py PILOT_DIR width=5               # a 95% interval 5 points wide

It prints the examples needed for 1, 3 and 5 trials per example, the calls, and the price: the dry
run's (an upper bound) and the pilot's measured cost. Exit code 2: a setting or a folder is unusable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("args", nargs="+", help="one or two pilot run folders, then detect=<points> or width=<points>")
    parser.add_argument("--json", action="store_true", help="the plan as JSON")
    args = parser.parse_args(argv)
    quiet_console()
    runs = [Path(a) for a in args.args if "=" not in a]
    goals: dict[str, float] = {}
    try:
        for a in (a for a in args.args if "=" in a):
            key, _, value = a.partition("=")
            if key not in ("detect", "width"):
                raise ConfigError(f"{a}: plan takes detect=<points> or width=<points>")
            try:
                goals[key] = float(value)
            except ValueError:
                raise ConfigError(f"{a}: a number of points, e.g. {key}=3") from None
        for run in runs:
            if not (run / "run.json").is_file():
                raise ConfigError(f"{run} is not a run folder (no run.json)")
        from react_bench.plan import plan, plan_text

        result = plan(runs, detect=goals.get("detect"), width=goals.get("width"))
    except (ConfigError, DataError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else plan_text(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
