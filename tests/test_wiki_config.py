"""The wiki config group and ``make_env_factory``: every group file composes into a working factory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from react_bench.envs.wiki import WikiConfig, make_env_factory
from react_bench.envs.wiki.live import LiveWiki
from react_bench.envs.wiki.local import LocalWiki
from react_bench.envs.wiki.store import ObservationStore
from react_bench.errors import ConfigError
from tests.support import task_wiki

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "wiki"


def _group(name: str) -> WikiConfig:
    return WikiConfig.from_mapping(OmegaConf.to_container(OmegaConf.load(CONFIGS / f"{name}.yaml")))


def test_group_files_are_the_three_backends() -> None:
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == ["live", "local", "replay"]
    assert [_group(n).backend for n in ("local", "live", "replay")] == ["local", "live", "replay"]


async def test_local_default_builds_the_tasks_wiki_and_gives_fresh_envs(data_dir: Path, tmp_path: Path) -> None:
    factory = make_env_factory(_group("local"), local_wiki=lambda: task_wiki("fever", data_dir, tmp_path))
    first, second = factory(), factory()
    assert first is not second and first.backend is second.backend is factory.backend
    assert isinstance(factory.backend, LocalWiki) and factory.backend.path.parent == tmp_path
    with open(data_dir / "fever" / "wiki_pages_evidence_subset.jsonl", encoding="utf-8") as pages:
        page_id = json.loads(pages.readline())["id"]
    assert not (await first.step_text(f"search[{page_id}]")).text.startswith("Could not find")
    assert second.page is None
    factory.close()


def test_local_with_a_path(tmp_path: Path) -> None:
    from react_bench.envs.wiki.build import build_from_jsonl

    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "A is a letter."}) + "\n")
    build_from_jsonl(src, tmp_path / "w.sqlite")
    factory = make_env_factory(WikiConfig(path=str(tmp_path / "w.sqlite")))
    assert factory.backend.lookup_title("a").text == "A is a letter."
    with pytest.raises(ConfigError, match="task's own wiki"):
        make_env_factory(WikiConfig())


def test_live_records_and_replay_needs_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    live = make_env_factory({**_config_dict("live"), "store": str(store), "timeout_s": 2.0})
    assert isinstance(live.backend, LiveWiki) and live.backend.mode == "record"
    assert live.backend.settings.timeout_s == 2.0 and store.is_file()
    live.close()
    refresh = make_env_factory(WikiConfig(backend="live", store=str(store), refresh=True))
    assert refresh.backend.mode == "live"
    replay = make_env_factory(WikiConfig(backend="replay", store=str(store)))
    assert replay.backend.mode == "replay" and isinstance(replay.backend.store, ObservationStore)
    assert replay.backend.store.read_only
    with pytest.raises(ConfigError, match="no observation store"):
        make_env_factory(WikiConfig(backend="replay", store=str(tmp_path / "none.sqlite")))
    with pytest.raises(ConfigError, match="unknown wiki settings"):
        WikiConfig.from_mapping({"backend": "local", "pth": "x"})
    with pytest.raises(ConfigError, match="backend"):
        WikiConfig(backend="online")  # type: ignore[arg-type]


def _config_dict(name: str) -> dict:
    return OmegaConf.to_container(OmegaConf.load(CONFIGS / f"{name}.yaml"))  # type: ignore[return-value]
