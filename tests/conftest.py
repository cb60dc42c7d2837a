"""Shared fixtures. The network is off in tests: everything talks to 127.0.0.1 stand-ins.

HOME is the session's own: before any test module is imported, ``HOME`` points at a fresh
folder (and the ``XDG_*`` folders, where set, are dropped so they follow it), so nothing a test
or a process it starts reads or writes under ``~`` (Ray's ``~/.ray/auth_token``, caches, the
request cache, matplotlib's font cache) is the user's. A tripwire checks the promise: the
user's HOME is listed before the session and after it, and a file that appeared fails the
session, named."""

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


USER_HOME = Path.home()  # the user's, read at import: before pytest_configure gives the session its own


def home_files(home: Path) -> set[str]:
    """Every file and link under ``home`` (relative paths); folders that cannot be read are skipped."""
    found: set[str] = set()
    for root, dirs, files in os.walk(home, onerror=lambda _: None):
        base = Path(root).relative_to(home)
        found.update(str(base / name) for name in files)
        found.update(str(base / name) for name in dirs if os.path.islink(os.path.join(root, name)))
    return found


def added_to_home(before: set[str], home: Path) -> list[str]:
    """The files under ``home`` that were not there ``before``."""
    return sorted(home_files(home) - before)


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported, HOME and the request cache are folders of this
    session's: an environment captured at import (a subprocess's, a Ray node's) then still points
    at the session's, never the user's. Each test gets its own request cache besides (below)."""
    config.stash[_HOME_FILES] = home_files(USER_HOME) if USER_HOME.is_dir() else set()
    config.stash[_MACHINE_ENTRIES] = _entries(MACHINE_REQUEST_CACHE)
    os.environ["HOME"] = tempfile.mkdtemp(prefix="react-bench-test-home-")
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        os.environ.pop(name, None)
    os.environ["REACT_BENCH_REQUEST_CACHE"] = tempfile.mkdtemp(prefix="react-bench-test-requests-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The tests' promise, checked: nothing they started wrote the machine-wide request cache,
    nor added a file to the user's HOME (a later run would read it: Ray's token did)."""
    written = _entries(MACHINE_REQUEST_CACHE) - session.config.stash.get(_MACHINE_ENTRIES, set())
    if written:
        print(
            f"\nerror: the tests wrote {len(written)} entries to the machine-wide request cache "
            f"{MACHINE_REQUEST_CACHE} (e.g. {sorted(written)[0]}); a test's environment missed its own"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    before = session.config.stash.get(_HOME_FILES, None)
    added = added_to_home(before, USER_HOME) if before is not None and USER_HOME.is_dir() else []
    if added:
        shown = ", ".join(str(USER_HOME / p) for p in added[:10]) + (
            f" and {len(added) - 10} more" if len(added) > 10 else ""
        )
        print(f"\nerror: the tests added {len(added)} file(s) to the user's HOME: {shown}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_MACHINE_ENTRIES = pytest.StashKey[set[str]]()
_HOME_FILES = pytest.StashKey[set[str]]()


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
