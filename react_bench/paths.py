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


def model_file(name: str, setting: str) -> dict:
    """``configs/model/<name>.yaml`` as a mapping (a second model: a judge, a drift's model); one
    line naming ``setting`` and the choices where there is no such file."""
    import yaml

    from react_bench.errors import ConfigError

    path = CONFIGS / "model" / f"{name}.yaml"
    if not path.is_file():
        choices = ", ".join(sorted(p.stem for p in (CONFIGS / "model").glob("*.yaml")))
        raise ConfigError(f"{setting}={name}: no configs/model/{name}.yaml; one of {choices}")
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
