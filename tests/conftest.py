"""Shared fixtures. The network is off in tests: everything talks to 127.0.0.1 stand-ins."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from react_bench.envs.wiki.build import build_wiki
from react_bench.envs.wiki.local import LocalWiki
from react_bench.models.scripted import ScriptedModel, ScriptStep
from tests.support import PAGES

REPO = Path(__file__).resolve().parents[1]
MACHINE_REQUEST_CACHE = Path.home() / ".cache" / "react-bench" / "requests"  # models.cache's default


def _entries(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported, the request cache is a folder of this session's: an
    environment captured at import (a subprocess's, a Ray node's) then still points at a test's
    folder, never the machine-wide one. Each test gets its own besides (below)."""
    config.stash[_MACHINE_ENTRIES] = _entries(MACHINE_REQUEST_CACHE)
    os.environ["REACT_BENCH_REQUEST_CACHE"] = tempfile.mkdtemp(prefix="react-bench-test-requests-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The tests' promise, checked: nothing they started wrote the machine-wide request cache."""
    written = _entries(MACHINE_REQUEST_CACHE) - session.config.stash.get(_MACHINE_ENTRIES, set())
    if written:
        print(
            f"\nerror: the tests wrote {len(written)} entries to the machine-wide request cache "
            f"{MACHINE_REQUEST_CACHE} (e.g. {sorted(written)[0]}); a test's environment missed its own"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_MACHINE_ENTRIES = pytest.StashKey[set[str]]()


def _shared_data() -> Path:
    env = os.environ.get("REACT_BENCH_DATA_DIR")
    for candidate in ([Path(env)] if env else []) + [REPO / "data", REPO.parent / "shared" / "data"]:
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the offline data is missing: put ../shared/data beside the repo or set REACT_BENCH_DATA_DIR")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The offline benchmark data (../shared/data), read-only."""
    return _shared_data()


@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedModel]]:
    """Factory for scripted models; each one must use its whole script by the test's end."""
    made: list[ScriptedModel] = []

    def make(script: list[ScriptStep], **kwargs: object) -> ScriptedModel:
        model = ScriptedModel(script, **kwargs)  # type: ignore[arg-type]
        made.append(model)
        return model

    yield make
    for model in made:
        model.assert_complete()


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> LocalWiki:
    """A real LocalWiki over the three pages of ``tests.support.PAGES``."""
    path = tmp_path_factory.mktemp("wiki") / "tiny.sqlite"
    build_wiki(iter(PAGES), path)
    return LocalWiki(path)


@pytest.fixture(autouse=True)
def _private_request_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own request cache (models/cache.py): no test is served another's answers."""
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path_factory.mktemp("requests")))
