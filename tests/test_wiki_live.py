"""LiveWiki against a local MediaWiki-API stand-in (real HTTP), then replayed with it stopped."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import wikipedia.wikipedia as wikipedia_module

from react_bench.envs.wiki.env import NotFound, PageFound, WikiEnv
from react_bench.envs.wiki.live import DEFAULT_USER_AGENT, LiveSettings, LiveWiki, ReplayMiss, page_text
from react_bench.envs.wiki.store import ObservationStore
from react_bench.errors import ConfigError
from react_bench.loop import Observation
from react_bench.testing.mediawiki_server import MediaWikiStandIn

OROGENY = (
    "The Testland orogeny was an episode of mountain building. It took place long ago.\n\n\n"
    "== Eastern sector ==\n"
    "The eastern sector extends into the Flat Plains. Its rocks are old.\n"
    "See also\n"
)
PAGES = {
    "Testland orogeny": OROGENY,
    "Flat Plains (Testland)": "The Flat Plains are a region of Testland. They rise from 500 to 900 m.",
    "Flat Plains (Elsewhere)": "The Flat Plains of Elsewhere are a different region.",
    "Plains Museum": "The Plains Museum is a museum.",
}
FAST = LiveSettings(timeout_s=0.3, max_attempts=2, backoff_s=0.01)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[MediaWikiStandIn]:
    warnings.filterwarnings("ignore", module="wikipedia")  # bs4's "no parser specified"
    server = MediaWikiStandIn(
        pages=PAGES,
        disambiguations={"Flat Plains": ["Flat Plains (Testland)", "Flat Plains (Elsewhere)"]},
        redirects={"Testland Orogeny": "Testland orogeny"},
    ).start()
    monkeypatch.setattr(wikipedia_module, "API_URL", server.api_url)  # the package, pointed at it
    yield server
    server.stop()


EPISODE = [
    "Search[Testland orogeny]",
    "Lookup[eastern sector]",
    "Search[Flat Plains]",
    "Search[Flat Plains (Testland)]",  # answered after a 429
    "Search[Zyx Plains]",
    "Search[Slow Page]",  # times out on every attempt
    "Lookup[rise]",
    "Finish[500 to 900 m]",
]


async def _run(env: WikiEnv, stand_in: MediaWikiStandIn | None) -> list[Observation]:
    observations = []
    for action in EPISODE:
        if stand_in is not None and action == "Search[Flat Plains (Testland)]":
            stand_in.fail_next(1, status=429, retry_after=0)
        if stand_in is not None and action == "Search[Slow Page]":
            stand_in.delay_next(0.6, count=FAST.max_attempts)
        observations.append(await env.step_text(action))
    return observations


async def test_live_episode_then_identical_replay_with_the_stand_in_stopped(
    stand_in: MediaWikiStandIn, tmp_path: Path
) -> None:
    store_path = tmp_path / "store.sqlite"
    live = LiveWiki("record", ObservationStore(store_path), FAST)
    recorded = await _run(WikiEnv(live), stand_in)
    texts = [o.text for o in recorded]

    assert texts[0] == (
        "The Testland orogeny was an episode of mountain building. It took place long ago.. "
        "The eastern sector extends into the Flat Plains. Its rocks are old.."
    )
    assert texts[1] == "(Result 1 / 1) The eastern sector extends into the Flat Plains."
    assert texts[2] == "Could not find [Flat Plains]. Similar: ['Flat Plains (Testland)', 'Flat Plains (Elsewhere)']."
    assert texts[3] == "The Flat Plains are a region of Testland. They rise from 500 to 900 m.."
    assert texts[4].startswith("Could not find Zyx Plains. Similar: [") and "'Plains Museum'" in texts[4]
    assert recorded[5].is_error and "timed out" in texts[5] and "Slow Page" in texts[5]
    assert texts[6] == "(Result 1 / 1) They rise from 500 to 900 m.."  # failed searches kept the page
    assert recorded[7].final_answer == "500 to 900 m"
    assert not any(o.is_error for i, o in enumerate(recorded) if i != 5)
    assert {r.user_agent for r in stand_in.requests} == {DEFAULT_USER_AGENT}
    slow = [r for r in stand_in.requests if r.params.get("titles") == "Slow Page"]
    assert len(slow) == FAST.max_attempts

    stand_in.stop()
    replay = LiveWiki("replay", ObservationStore(store_path, read_only=True))
    assert await _run(WikiEnv(replay), None) == recorded
    with pytest.raises(ReplayMiss, match="Never Recorded"):
        await WikiEnv(replay).step_text("search[Never Recorded]")


async def test_429_then_success_is_retried(stand_in: MediaWikiStandIn) -> None:
    stand_in.fail_next(2, status=429, retry_after=0)
    wiki = LiveWiki("live", None, LiveSettings(max_attempts=3, backoff_s=0.01))
    obs = await WikiEnv(wiki).step_text("search[Plains Museum]")
    assert obs.text == "The Plains Museum is a museum.."
    assert len(stand_in.requests) >= 3


async def test_persistent_5xx_becomes_an_error_observation(stand_in: MediaWikiStandIn) -> None:
    stand_in.fail_next(2, status=503, retry_after=None)
    obs = await WikiEnv(LiveWiki("live", None, FAST)).step_text("search[Plains Museum]")
    assert obs.is_error and "HTTP 503 (2 attempts)" in obs.text


async def test_redirects_and_case_are_resolved(stand_in: MediaWikiStandIn) -> None:
    wiki = LiveWiki("live", None, FAST)
    assert wiki.lookup_title("Testland Orogeny").title == "Testland orogeny"
    assert wiki.lookup_title("testland orogeny").title == "Testland orogeny"
    assert wiki.lookup_title("Flat Plains") is None
    assert wiki.similar("Plains", k=2) == ["Flat Plains", "Flat Plains (Elsewhere)"]


async def test_record_serves_what_it_holds_and_live_refreshes(stand_in: MediaWikiStandIn, tmp_path: Path) -> None:
    store = ObservationStore(tmp_path / "s.sqlite")
    record = LiveWiki("record", store, FAST)
    first = record.search("Plains Museum")
    stand_in.pages["Plains Museum"] = "The Plains Museum closed. It is now a cafe."
    assert record.search("Plains Museum") == first  # from the store, no network
    refreshed = LiveWiki("live", store, FAST).search("Plains Museum")
    assert refreshed != first and record.search("Plains Museum") == refreshed


async def test_the_store_keys_answers_by_endpoint(stand_in: MediaWikiStandIn, tmp_path: Path) -> None:
    store = ObservationStore(tmp_path / "s.sqlite")
    recorded = LiveWiki("record", store, FAST).search("Plains Museum")
    assert isinstance(recorded, PageFound)
    elsewhere = LiveWiki("replay", store, replace(FAST, api_url="http://127.0.0.1:9/w/api.php"))
    with pytest.raises(ReplayMiss, match="127.0.0.1:9"):  # recorded from another endpoint: never served
        elsewhere.search("Plains Museum")
    assert LiveWiki("replay", store, FAST).search("Plains Museum") == recorded


def test_page_text_drops_headings_and_short_lines() -> None:
    assert page_text("Intro sentence here.\n\n== History ==\nOne two\nA longer line of text.") == (
        "Intro sentence here.\nA longer line of text."
    )


def test_modes_and_stores_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        LiveWiki("replay", None)
    with pytest.raises(ValueError):
        LiveWiki("offline")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no observation store"):
        ObservationStore(tmp_path / "missing.sqlite", read_only=True)
    store = ObservationStore(tmp_path / "s.sqlite")
    store.put("b", "search", "x", {"kind": "not_found", "similar": []})
    store.close()
    read_only = ObservationStore(tmp_path / "s.sqlite", read_only=True)
    assert read_only.get("b", "search", "x") == {"kind": "not_found", "similar": []}
    with pytest.raises(PermissionError):
        read_only.put("b", "search", "y", {})


async def test_odd_strings_are_answered_and_recorded(stand_in: MediaWikiStandIn, tmp_path: Path) -> None:
    wiki = LiveWiki("record", ObservationStore(tmp_path / "s.sqlite"), FAST)
    for query in ["", "   ", "\ud800Plains", "Plains " * 500, "'; DROP TABLE observations; --"]:
        outcome = wiki.search(query)
        assert isinstance(outcome, NotFound), query
    assert len(wiki.store) == 5


async def test_record_mode_asks_again_after_a_stored_failure(stand_in: MediaWikiStandIn, tmp_path: Path) -> None:
    wiki = LiveWiki("record", ObservationStore(tmp_path / "store.sqlite"), FAST)
    stand_in.fail_next(FAST.max_attempts, status=503, retry_after=None)
    first = await WikiEnv(wiki).step_text("search[Plains Museum]")
    assert first.is_error
    second = await WikiEnv(wiki).step_text("search[Plains Museum]")
    assert (second.text, second.is_error) == ("The Plains Museum is a museum..", False)
    third = await WikiEnv(LiveWiki("replay", ObservationStore(tmp_path / "store.sqlite"))).step_text(
        "search[Plains Museum]"
    )
    assert third == second  # the recovered answer replaced the failure in the store


async def test_a_replay_miss_ends_the_episode_with_an_error(tmp_path: Path) -> None:
    from react_bench.loop import Decision, LoopConfig, ToolCall, run_episode, run_to_end
    from react_bench.types import Message

    class OneSearch:
        async def decide(self, history, step):
            yield Decision(Message.assistant("s"), (ToolCall("c1", "search", {"entity": "Never Recorded"}),))

        async def wrap_up(self, history, step, notice):  # pragma: no cover
            raise AssertionError

    replay = LiveWiki("replay", ObservationStore(tmp_path / "empty.sqlite"))
    result = await run_to_end(run_episode(OneSearch(), WikiEnv(replay), LoopConfig()))
    assert (result.reason, result.answer) == ("error", "")
    assert "ReplayMiss" in (result.error or "") and "Never Recorded" in (result.error or "")
