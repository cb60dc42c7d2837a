"""Every outside source bounded (``react_bench.download``): a host that sends too much, too slowly,
or something else is refused in one line, having read no more than the file's own size, and
nothing half-downloaded is kept. Hosts are ``testing.hostile_raw`` on 127.0.0.1."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from react_bench import upstream
from react_bench.download import ENV_DEADLINE, DownloadError, deadline_for, download
from react_bench.errors import ConfigError
from react_bench.tasks.data import DataUnavailableError, HubSpec
from react_bench.testing.hostile_raw import ANNOUNCED, SIGN_IN, HostileHost
from tests.support import eval_py

HOTPOT = "lats/hotpot.py"  # what mode=lats lats.protocol=official reads first (73,543 bytes)


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def leftovers(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("*") if p.is_file()] if cache.is_dir() else []


def fetch_from(host: HostileHost, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(upstream.ENV_GITHUB, host.base_url)
    with pytest.raises(upstream.UpstreamError) as err:
        upstream.fetch(HOTPOT, prepared=False)
    said = str(err.value)
    assert "\n" not in said and upstream.pinned(HOTPOT).label in said and upstream.ENV_GITHUB in said
    return said


def test_a_host_that_announces_more_than_the_file_is_refused_before_its_body(fresh_cache, monkeypatch) -> None:
    with HostileHost("huge") as host:
        said = fetch_from(host, monkeypatch)
    assert f"announces {ANNOUNCED:,} bytes; nothing was read" in said
    assert leftovers(fresh_cache) == []


def test_a_host_that_streams_past_the_files_size_is_cut_at_it(fresh_cache, monkeypatch) -> None:
    size = upstream.pinned(HOTPOT).size
    with HostileHost("huge-unannounced") as host:
        said = fetch_from(host, monkeypatch)
    read = int(re.search(r"stopped reading at ([\d,]+)", said).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert size < read <= size + 2**20, said  # past the size by at most one block the transport gave
    assert leftovers(fresh_cache) == []


def test_a_host_that_drips_is_cut_at_the_whole_transfers_deadline(fresh_cache, monkeypatch) -> None:
    monkeypatch.setenv(ENV_DEADLINE, "1.5")
    with HostileHost("drip", interval_s=0.05) as host:
        said = fetch_from(host, monkeypatch)
    assert "not finished within 2 s" in said and ENV_DEADLINE in said  # (1.5 shown rounded)
    assert leftovers(fresh_cache) == []


def test_a_page_that_is_not_the_file_fails_on_the_checksum_saying_what_came_back(fresh_cache, monkeypatch) -> None:
    with HostileHost("html") as host:
        said = fetch_from(host, monkeypatch)
    assert "the bytes served are not" in said
    assert f"text/html; charset=utf-8, {len(SIGN_IN):,} bytes: '<!DOCTYPE html><html><head><title>Sign in" in said
    assert leftovers(fresh_cache) == []


def test_the_deadline_fits_the_file_and_the_variable_sets_it(monkeypatch) -> None:
    monkeypatch.delenv(ENV_DEADLINE, raising=False)
    largest = max(f.size for f in upstream.files().values())
    assert deadline_for(73_543) < 30 and deadline_for(largest) > largest / 50_000  # a 400 kbit/s line
    monkeypatch.setenv(ENV_DEADLINE, "7")
    assert deadline_for(largest) == 7.0
    monkeypatch.setenv(ENV_DEADLINE, "soon")
    with pytest.raises(ConfigError, match=ENV_DEADLINE):
        deadline_for(1)


def test_credentials_in_the_hosts_url_never_reach_the_line(tmp_path: Path) -> None:
    with HostileHost("huge") as host:
        url = host.base_url.replace("http://", "http://user:secret-token@") + "/f"
        with pytest.raises(DownloadError) as err:
            download(url, tmp_path / "f", label="a file", size=10)
    assert "secret-token" not in str(err.value) and "a file from http://127.0.0.1" in str(err.value)


def test_a_hub_file_is_bounded_by_the_listings_size(tmp_path: Path) -> None:
    from react_bench.tasks.hubdata import _fetch

    spec = HubSpec("hotpotqa/hotpot_qa", "distractor", "validation")
    entry = SimpleNamespace(path="distractor/validation-00000-of-00001.parquet", size=1000, lfs=None)
    with HostileHost("huge-unannounced") as host:
        with pytest.raises(DataUnavailableError) as err:
            _fetch(host.base_url, spec, "0" * 40, entry, tmp_path / "hub")
    said = str(err.value)
    assert "\n" not in said and "1,000 bytes" in said and "HF_ENDPOINT" in said
    assert host.requests == [f"/datasets/hotpotqa/hotpot_qa/resolve/{'0' * 40}/{entry.path}"]


def test_gpt2s_vocabulary_from_a_hub_that_sends_a_page_is_one_line_and_not_cached(fresh_cache, monkeypatch) -> None:
    from react_bench.methods import lats_official

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with HostileHost("html") as host:
        monkeypatch.setenv("HF_ENDPOINT", host.base_url)
        with pytest.raises(ConfigError) as err:
            lats_official.gpt2_counter()
    assert "\n" not in str(err.value) and "not a vocabulary: text/html" in str(err.value)
    assert leftovers(fresh_cache) == []


@pytest.mark.parametrize("kind", ["huge", "drip", "html"])
def test_a_run_that_needs_a_pinned_file_from_a_hostile_host_ends_in_one_line(
    tmp_path: Path, kind: str, data_dir: Path
) -> None:
    # the questions from the session's data folder (data_dir=, which pinned files are never read from);
    # no prepared folder for the pinned files (REACT_BENCH_DATA_DIR=none), so they come from the host
    env = os.environ | {"REACT_BENCH_CACHE": str(tmp_path / "cache"), ENV_DEADLINE: "2", "REACT_BENCH_DATA_DIR": "none"}
    with HostileHost(kind, interval_s=0.05) as host:
        env[upstream.ENV_GITHUB] = host.base_url
        ran = eval_py(
            "task=hotpotqa", "mode=lats", "lats.protocol=official", "dry_run=true", "n=1", f"data_dir={data_dir}",
            f"results_dir={tmp_path / 'results'}", env=env, timeout=120,
        )  # fmt: skip
    assert ran.returncode == 2, ran.stderr[-2000:]
    said = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    assert len(said) == 1 and "Traceback" not in ran.stderr, ran.stderr[-2000:]
    assert "lapisrocks/LanguageAgentTreeSearch@853d816:hotpot/hotpot.py" in said[0]
    assert upstream.ENV_GITHUB in said[0]
    assert leftovers(tmp_path / "cache" / "upstream") == []
