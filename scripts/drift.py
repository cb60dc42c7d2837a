"""Drift against a recorded run: its examples again, with its settings, data and prompts, against
the model as it answers now (react_bench/drift.py says what is compared):

    python scripts/drift.py RUN_DIR                          # the run's own model, now
    python scripts/drift.py RUN_DIR model=claude-sonnet-4-6  # another model (configs/model/<name>.yaml)
    python scripts/drift.py RUN_DIR model.base_url=URL model.api_key_env=VAR   # another endpoint
    python scripts/drift.py RUN_DIR batch=true               # in batch rounds, at half price

The rerun is a run folder beside RUN_DIR, with drift.md and drift.json in it. Exit codes: 0 done
(whatever drifted), 2 a setting or the folder is unusable (one line, no request sent).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.models.base import ModelError  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402


def _model(name: str) -> dict[str, Any]:
    from react_bench.paths import model_file

    return model_file(name, "model")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the recorded run's folder")
    parser.add_argument("settings", nargs="*", help="model=<name>, model.<key>=<value>, batch=true|false")
    args = parser.parse_args(argv)
    quiet_console()
    if not (args.run_dir / "run.json").is_file():
        print(f"error: {args.run_dir} is not a run folder (no run.json)", file=sys.stderr)
        return 2
    model: dict[str, Any] | None = None
    restated: dict[str, str] = {}
    batch: bool | None = None
    try:
        for setting in args.settings:
            key, sep, value = setting.partition("=")
            if not sep:
                raise ConfigError(f"{setting}: expected key=value (model=<name>, model.<key>=..., batch=true)")
            if key == "model":
                model = _model(value)
            elif key.startswith("model."):
                restated[key] = value
            elif key == "batch" and value.lower() in ("true", "false"):
                batch = value.lower() == "true"
            else:
                raise ConfigError(f"{setting}: drift takes model=<name>, model.<key>=<value> and batch=true|false")
        from react_bench.drift import drift

        done = asyncio.run(drift(args.run_dir, model=model, restated=restated, batch=batch))
    except (ConfigError, DataError, ModelError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    print((done.run_dir / "drift.md").read_text(encoding="utf-8"))
    print(f"drift: {done.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
