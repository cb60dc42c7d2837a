"""Helpers shared by several test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from react_bench.prompts import PromptSpec

REPO = Path(__file__).resolve().parents[1]
# The session's data folder, set by conftest's pytest_configure: kind "prepared" (a prepared data
# folder: real benchmark files) or "generated" (tests/generated.py, for a clone alone)
DATA: dict[str, Any] = {"kind": None, "folder": None}
CONFIGS = REPO / "configs"


def composed(*overrides: str) -> dict:
    """configs/eval.yaml composed with ``overrides``, as a plain dict (what eval.py builds)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(config_name="eval", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


# The tiny wiki of the runner tests (conftest's ``wiki`` fixture).
PAGES = [
    ("Alpha Lake", "Alpha Lake is a lake in Norway. It lies at 300 m. The lake is fed by the Beta River."),
    ("Beta River", "The Beta River is a river. It is 12 km long. The Beta River flows into Alpha Lake."),
    ("Gamma", "Gamma is a village."),
]


def spec(label: str, style: str) -> PromptSpec:
    """A short test prompt (the label is the text format's business: ``wiki_format(label)``)."""
    return PromptSpec(f"<instruction {style}>\n", f"<exemplars {style}>\n", f"test/{label}/{style}")


# Short test prompts, so the golden prompt files stay readable.
PROMPTS = {
    label: {s: spec(label, s) for s in ("react", "act", "cot", "standard", "tool_use", "tool_use_act")}
    for label in ("Question", "Claim")
}


def eval_py(
    *args: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: int = 300, bar: bool = False
) -> subprocess.CompletedProcess:
    """scripts/eval.py; ``bar=False`` adds ``progress=false`` (experiment=paper takes no such setting)."""
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval.py"), *args, *([] if bar else ["progress=false"])],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def compare_py(*paths: Path, out: Path) -> subprocess.CompletedProcess:
    """scripts/compare.py over ``paths``, writing to ``out``."""
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "compare.py"), *map(str, paths), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def report_and_pages(out: Path) -> str:
    """A study's report.html with the pages of examples it loads on demand (``report_files/``), as
    one text: what a reader of the page can reach."""
    pages = sorted((out / "report_files").rglob("*.js"))
    return "\n".join(
        [(out / "report.html").read_text(encoding="utf-8")] + [p.read_text(encoding="utf-8") for p in pages]
    )


def eval_without_a_key(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """scripts/eval.py with no Anthropic key and the API unreachable: what a dry run needs (nothing)."""
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"
    }
    return eval_py(*args, env=env, timeout=timeout, bar=True)


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]


def run_dir_of(output: str) -> Path:
    line = next(line for line in output.splitlines() if line.startswith("results: "))
    return Path(line.split()[1])


def task_wiki(task: str, data_dir: Path, cache_dir: Path | None = None) -> Path:
    """A Wikipedia task's own offline wiki, built from ``data_dir`` into ``cache_dir``."""
    from react_bench.tasks import TaskConfig, load_task

    return load_task(task).local_wiki(TaskConfig(name=task, data_dir=str(data_dir)), cache_dir)  # type: ignore[attr-defined]


def run_notebook(name: str) -> list[dict]:
    """Execute ``notebooks/<name>`` from the repository root (its variables as the caller set them
    in the environment); every code cell's outputs, asserted free of errors."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert outputs and not [o for o in outputs if o.get("output_type") == "error"], name
    return outputs


def alone(tmp_path: Path) -> Path:
    """The checkout's files (as git would clone them, uncommitted ones too) in an empty folder:
    no data folder beside it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    clone = tmp_path / "somewhere" / "react-bench"
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, clone / rel)
    return clone


def fresh_env(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    """A new user's environment: a HOME of its own, no data folder set, the hub at ``endpoint``
    (GitHub's raw host as a user's: ``REACT_BENCH_GITHUB`` unset unless ``extra`` sets it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REACT_BENCH_", "HF_"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env |= {"HOME": str(home), "HF_ENDPOINT": endpoint, "REACT_BENCH_REQUEST_CACHE": str(tmp_path / "requests")}
    return env | extra


def eval_in(clone: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """scripts/eval.py of ``clone`` (a copy made by ``alone``) in the environment ``env``."""
    return subprocess.run(
        [sys.executable, "scripts/eval.py", *args, "progress=false"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
