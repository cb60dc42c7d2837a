"""Shared fixtures. The network is off in tests: everything talks to 127.0.0.1 stand-ins."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from react_bench.envs.wiki.build import build_wiki
from react_bench.envs.wiki.local import LocalWiki
from react_bench.models.scripted import ScriptedModel, ScriptStep
from tests.support import PAGES

REPO = Path(__file__).resolve().parents[1]


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
