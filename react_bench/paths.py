"""Where react-bench keeps what it builds for later runs (wikis, task records, model files):
``$REACT_BENCH_CACHE``, else ``~/.cache/react-bench``. The request cache has its own
variable (``models.cache``)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # the checkout's Hydra configs (as scripts/eval.py's)


def cache_dir() -> Path:
    root = os.environ.get("REACT_BENCH_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "react-bench"
