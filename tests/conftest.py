"""Shared fixtures. The network is off in tests: everything talks to 127.0.0.1 stand-ins.

HOME is the session's own: before any test module is imported, ``HOME`` points at a fresh
folder (and the ``XDG_*`` folders, where set, are dropped so they follow it), so nothing a test
or a process it starts reads or writes under ``~`` (Ray's ``~/.ray/auth_token``, caches, the
request cache, matplotlib's font cache) is the user's. A tripwire checks the promise: the
user's HOME is listed before the session and after it, and a file that appeared fails the
session, named.

Data: a prepared data folder (``$REACT_BENCH_DATA_DIR``, ``./data``, ``../shared/data``) is used
where there is one. A clone alone has none: the session then writes one of its own from SynthWiki
(``tests/generated.py``) and points ``$REACT_BENCH_DATA_DIR`` at it, so every test of the project's
own behaviour runs without the network. A test of a fact of the benchmarks or of the authors'
files asks ``data_file`` / ``reference_text``: the prepared folder's file, else the pinned fetch
(``react_bench.upstream``, ``$REACT_BENCH_GITHUB``) or the hub build (``$HF_ENDPOINT``) as a user's
run gets it; where none can be had, the test is skipped with one line naming the file."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from react_bench import upstream
from react_bench.envs.wiki.build import build_wiki
from react_bench.envs.wiki.local import LocalWiki
from react_bench.models.scripted import ScriptedModel, ScriptStep
from react_bench.tasks.data import ENV_DATA_DIR, find_data_dir
from tests.generated import MARKER, write_generated
from tests.support import DATA, PAGES

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
    atexit.register(_end_now)  # first of the session's exit handlers, so it runs last
    config.stash[_HOME_FILES] = home_files(USER_HOME) if USER_HOME.is_dir() else set()
    config.stash[_MACHINE_ENTRIES] = _entries(MACHINE_REQUEST_CACHE)
    os.environ["HOME"] = tempfile.mkdtemp(prefix="react-bench-test-home-")
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        os.environ.pop(name, None)
    os.environ["REACT_BENCH_REQUEST_CACHE"] = tempfile.mkdtemp(prefix="react-bench-test-requests-")
    found = find_data_dir(None)
    if found is not None and not (found / MARKER).exists():
        DATA.update(kind="prepared", folder=found)
    else:  # a clone alone: a data folder of the session's own, generated (module docstring)
        folder = write_generated(Path(tempfile.mkdtemp(prefix="react-bench-test-data-")))
        os.environ[ENV_DATA_DIR] = str(folder)
        DATA.update(kind="generated", folder=folder)


# CI's two passes (.ci/run): the first, as a clone alone, lists here the tests it skipped for want of
# data ("needs ..."); the second, with the prepared folder, runs those and the ones marked ``prepared``
ENV_SKIPPED = "REACT_BENCH_SKIPPED_FOR_DATA"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test of the prepared folder's own layout (``prepared_dir``) is marked ``prepared``, and so is
    one the clone-alone pass skipped for want of a file only a prepared folder has (``ENV_SKIPPED``):
    CI runs the suite as a clone alone first, then these with the prepared folder (``-m prepared``)."""
    listed = os.environ.get(ENV_SKIPPED, "")
    skipped = set(Path(listed).read_text(encoding="utf-8").splitlines()) if listed and Path(listed).is_file() else set()
    for item in items:
        if "prepared_dir" in getattr(item, "fixturenames", ()) or item.nodeid in skipped:
            item.add_marker(pytest.mark.prepared)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In a pass that lists them (``ENV_SKIPPED``), each test skipped for want of data, by id."""
    listed = os.environ.get(ENV_SKIPPED, "")
    if listed and report.skipped and DATA.get("kind") == "generated":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if "needs " in reason:
            with open(listed, "a", encoding="utf-8") as f:
                f.write(report.nodeid + "\n")


def pytest_report_header(config: pytest.Config) -> str:
    what = "the prepared folder" if DATA["kind"] == "prepared" else "generated from SynthWiki (no prepared folder)"
    return f"data: {what} {DATA['folder']}; the authors' files from {upstream.base_url()}"


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
    _release_native()
    _FINISHED.append(session)


_MACHINE_ENTRIES = pytest.StashKey[set[str]]()
_HOME_FILES = pytest.StashKey[set[str]]()
_FINISHED: list[pytest.Session] = []  # the session, once its status is final


def _release_native() -> None:
    """The native resources the tests' own process holds, let go while the interpreter is whole:
    the embedded models (llama.cpp), a Ray connection."""
    local = sys.modules.get("react_bench.models.local")
    if local is not None:
        local._close_engines()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    gc.collect()


def _end_now() -> None:
    """The last exit handler (registered first): the process ends with the session's status,
    without the interpreter's teardown. That teardown walks what llama.cpp, Ray and gRPC leave
    behind in an order no library promises: in CI it once crashed (a segmentation fault) after
    all 1,007 tests had passed, and a test command's status must be its tests'. A session that
    never finished (a usage error) exits as Python would."""
    if _FINISHED and getattr(sys, "last_value", None) is None:  # (an uncaught error: Python's own exit)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(_FINISHED[0].exitstatus))


# The prepared file that a user's run builds from the hub instead (HotpotQA's: every dev question, with its
# paragraphs). Not FEVER's pages: their build reads the hub's whole wiki-pages export, too much for a test
HUB_BUILT = "hotpotqa/hotpot_dev_distractor_685.json"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The session's data folder, read-only: the prepared one, or the one generated for a clone alone."""
    return DATA["folder"]


def benchmark_file(rel: str) -> Path:
    """A benchmark's or the authors' file by its name in a prepared folder (``hotpotqa/...``): the
    prepared folder's, else as a user's run gets it (the pinned fetch, the hub build); else the
    test is skipped, naming the file and what to set."""
    if DATA["kind"] == "prepared" and (DATA["folder"] / rel).is_file():
        return DATA["folder"] / rel
    pinned = next((f for f in upstream.files().values() if f.prepared == rel), None)
    if pinned is not None:
        try:
            return upstream.fetch(pinned.name, prepared=DATA["kind"] == "prepared")  # the generated files are not it
        except upstream.UpstreamError as err:
            pytest.skip(f"needs {rel} ({pinned.label}): {str(err).splitlines()[0][:300]}")
    if rel == HUB_BUILT:
        from react_bench.tasks.data import DataUnavailableError
        from react_bench.tasks.hotpotqa import RECIPE

        try:
            return RECIPE.build() / RECIPE.files["wiki"]
        except DataUnavailableError as err:
            pytest.skip(f"needs {rel} (or the hub build of hotpotqa): {str(err).splitlines()[0][:300]}")
    pytest.skip(f"needs {rel}: a prepared data folder's file (set {ENV_DATA_DIR}); no public source serves it")


@pytest.fixture(scope="session")
def data_file() -> Callable[[str], Path]:
    """``benchmark_file``, as a fixture."""
    return benchmark_file


@pytest.fixture
def prepared_dir(request: pytest.FixtureRequest) -> Path:
    """The prepared data folder, for a test of its own layout and counts (the 685 HotpotQA questions,
    the 9,999 FEVER claims) or one written against its questions (their ids, texts and pages as the
    default task reads them); skipped, naming the files, on a clone alone."""
    if DATA["kind"] != "prepared":
        pytest.skip(
            f"{request.node.name} needs the prepared folder's hotpotqa/hotpot_dev_distractor_685.json and "
            f"fever/paper_test_with_evidence.jsonl as the default task reads them: set {ENV_DATA_DIR}"
        )
    return DATA["folder"]


@pytest.fixture(scope="session")
def paper_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder of the authors' own files (the questions and claims the paper's 500 index)."""
    folder = tmp_path_factory.mktemp("paper-data")
    for rel in ("hotpotqa/hotpot_dev_v1_simplified.json", "fever/paper_dev.jsonl"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).symlink_to(benchmark_file(rel))
    return folder


@pytest.fixture(scope="session")
def reference_text() -> Callable[[str], str]:
    """A text of the authors' files (``upstream.json``'s ``texts``); skipped, naming it, where it cannot be had."""

    def get(name: str) -> str:
        try:
            return upstream.text(name)
        except upstream.UpstreamError as err:
            pytest.skip(f"needs {upstream.texts()[name].label}: {str(err).splitlines()[0][:300]}")

    return get


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
