"""A finished or received run as OpenTelemetry GenAI traces, timed as its record holds them.

    python scripts/traces.py RUN_DIR --endpoint http://localhost:6006   # to a collector (Phoenix here)
    python scripts/traces.py RUN_DIR --out spans.jsonl [--content]      # as JSON lines

The spans are those ``trace.endpoint=`` sends while a run goes (react_bench/tracing/spans.py).
Exit code 1: some spans were not taken by the collector; 2: not a run folder, or no destination.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.tracing.replay import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
