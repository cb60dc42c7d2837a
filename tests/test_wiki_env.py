"""WikiEnv: the paper's observation strings, lookup cursor, Similar list, invalid actions."""

from __future__ import annotations

import ast
import asyncio
import json
import threading

import pytest

from react_bench.environment import Action
from react_bench.envs.wiki import WikiEnvFactory
from react_bench.envs.wiki.build import build_from_jsonl
from react_bench.envs.wiki.env import NO_MORE_RESULTS, NO_PAGE, WikiEnv, page_observation, page_sentences
from react_bench.envs.wiki.local import LocalWiki

ALPHA = (
    "Alpha Ridge is a mountain range in Testland. It rises to 2,000 m. The eastern sector is dry.\n"
    "The western sector is wet. Snow falls in the eastern sector in May. A sixth sentence is here. "
    "Eastern winds blow."
)
PAGES = [
    {"title": "Alpha Ridge", "text": ALPHA},
    {"title": "Beta Lake", "text": "Beta Lake is a lake. It lies near Alpha Ridge."},
    {"title": "Zebra Lake", "text": "Zebra Lake is small."},
] + [{"title": f"Gamma Station {i}", "text": f"Gamma Station {i} is a station."} for i in range(7)]


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> LocalWiki:
    src = tmp_path_factory.mktemp("wiki") / "pages.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    build_from_jsonl(src, src.with_suffix(".sqlite"))
    return LocalWiki(src.with_suffix(".sqlite"))


def test_sentence_split_reproduces_the_original_including_double_periods() -> None:
    assert page_sentences("A b. C d.\n\n  E f. \nG") == ["A b.", "C d..", "E f..", "G."]
    assert page_observation("") == ""


async def test_search_shows_the_first_five_sentences(wiki: LocalWiki) -> None:
    obs = await WikiEnv(wiki).step_text("Search[Alpha Ridge]")
    assert obs.text == (
        "Alpha Ridge is a mountain range in Testland. It rises to 2,000 m. The eastern sector is dry.. "
        "The western sector is wet. Snow falls in the eastern sector in May."
    )
    assert not obs.is_error and obs.final_answer is None


async def test_lookup_walks_matches_then_says_no_more(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    await env.step_text("search[Alpha Ridge]")
    texts = [(await env.step_text("lookup[eastern]")).text for _ in range(5)]
    assert texts == [
        "(Result 1 / 3) The eastern sector is dry..",
        "(Result 2 / 3) Snow falls in the eastern sector in May.",
        "(Result 3 / 3) Eastern winds blow..",
        NO_MORE_RESULTS,
        NO_MORE_RESULTS,
    ]
    assert NO_MORE_RESULTS == "No more results.\n"


async def test_lookup_cursor_resets_when_the_keyword_changes(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    await env.step_text("search[Alpha Ridge]")
    assert (await env.step_text("lookup[eastern]")).text.startswith("(Result 1 / 3)")
    assert (await env.step_text("lookup[eastern]")).text.startswith("(Result 2 / 3)")
    # A different string (even only in case) starts again; matching itself ignores case.
    assert (await env.step_text("lookup[EASTERN]")).text.startswith("(Result 1 / 3)")
    assert (await env.step_text("lookup[western]")).text == "(Result 1 / 1) The western sector is wet."
    assert (await env.step_text("lookup[eastern]")).text.startswith("(Result 1 / 3)")
    assert (await env.step_text("lookup[volcano]")).text == NO_MORE_RESULTS


async def test_found_search_resets_the_cursor_a_failed_one_keeps_page_and_cursor(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    await env.step_text("search[Alpha Ridge]")
    await env.step_text("lookup[eastern]")
    assert (await env.step_text("search[Qwxz Mountains]")).text.startswith("Could not find Qwxz Mountains.")
    assert (await env.step_text("lookup[eastern]")).text.startswith("(Result 2 / 3)")
    await env.step_text("search[Beta Lake]")
    assert (await env.step_text("lookup[alpha]")).text == "(Result 1 / 1) It lies near Alpha Ridge.."
    await env.step_text("search[Alpha Ridge]")
    assert (await env.step_text("lookup[eastern]")).text.startswith("(Result 1 / 3)")


async def test_lookup_before_any_page_says_so(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    assert (await env.step_text("lookup[eastern]")).text == NO_PAGE
    await env.step_text("search[Nothing Here At All]")
    assert (await env.step_text("lookup[eastern]")).text == NO_PAGE


async def test_similar_list_is_the_originals_python_list_repr(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    assert (
        await env.step_text("search[Zebra crossing]")
    ).text == "Could not find Zebra crossing. Similar: ['Zebra Lake']."
    assert (await env.step_text("search[Qwxz]")).text == "Could not find Qwxz. Similar: []."
    many = (await env.step_text("search[Gamma]")).text
    prefix = "Could not find Gamma. Similar: "
    assert many.startswith(prefix) and many.endswith(".")
    titles = ast.literal_eval(many[len(prefix) : -1])
    assert len(titles) == 5 and all(t.startswith("Gamma Station ") for t in titles)


@pytest.mark.parametrize(
    ("action", "text"),
    [
        ("Search Alpha Ridge", "Invalid action: search Alpha Ridge"),
        ("search[Alpha Ridge", "Invalid action: search[Alpha Ridge"),
        ("Alpha Ridge]", "Invalid action: alpha Ridge]"),
        ("browse[Alpha Ridge]", "Invalid action: browse[Alpha Ridge]"),
        ("", "Invalid action: "),
        ("   ", "Invalid action: "),
        ("Lookup eastern", "Invalid action: lookup eastern"),
    ],
)
async def test_invalid_actions(wiki: LocalWiki, action: str, text: str) -> None:
    obs = await WikiEnv(wiki).step_text(action)
    assert obs.text == text and obs.is_error


async def test_action_parsing_follows_the_original(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    assert (await env.step_text("  search[Alpha Ridge]  ")).text.startswith("Alpha Ridge is")
    assert (await env.step_text("Think[about it]")).text == "Nice thought."
    # The argument is everything between the first "[" and the last "]", unstripped.
    assert (await env.step_text("search[ Zebra crossing]")).text.startswith("Could not find  Zebra crossing.")


async def test_finish_ends_the_episode_and_later_actions_repeat_it(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    obs = await env.step_text("Finish[1,800 to 7,000 ft]")
    assert obs.final_answer == "1,800 to 7,000 ft" and env.answer == "1,800 to 7,000 ft"
    again = await env.step(Action("search", {"entity": "Alpha Ridge"}))
    assert again == obs


async def test_execute_and_step_text_give_the_same_observations(wiki: LocalWiki) -> None:
    script = [
        ("search", "Alpha Ridge"),
        ("lookup", "eastern"),
        ("lookup", "eastern"),
        ("search", "Gamma"),
        ("lookup", "sector"),
        ("finish", "Testland"),
    ]
    by_text, by_tool = WikiEnv(wiki), WikiEnv(wiki)
    params = {"search": "entity", "lookup": "keyword", "finish": "answer"}
    for name, arg in script:
        assert await by_text.step_text(f"{name}[{arg}]") == await by_tool.step(Action(name, {params[name]: arg}))


async def test_tool_errors_are_error_observations(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    assert (await env.step(Action("browse", {"url": "x"}))).is_error
    assert (await env.step(Action("search", {}))).is_error
    assert (await env.step(Action("search", {"entity": 3}))).is_error
    assert (await env.step(Action("search", {"entity": "Alpha Ridge"}))).text.startswith("Alpha Ridge is")


def test_tools_are_search_lookup_finish_with_named_string_arguments(wiki: LocalWiki) -> None:
    specs = {t.name: t.input_schema for t in WikiEnv(wiki).actions()}
    assert list(specs) == ["search", "lookup", "finish"]
    for name, param in [("search", "entity"), ("lookup", "keyword"), ("finish", "answer")]:
        assert specs[name]["required"] == [param]
        assert specs[name]["properties"][param]["type"] == "string"


async def test_episodes_sharing_a_backend_keep_their_own_state(wiki: LocalWiki) -> None:
    a, b = WikiEnv(wiki), WikiEnv(wiki)
    await asyncio.gather(a.step_text("search[Alpha Ridge]"), b.step_text("search[Beta Lake]"))
    assert (await a.step_text("lookup[eastern]")).text.startswith("(Result 1 / 3)")
    assert (await b.step_text("lookup[eastern]")).text == NO_MORE_RESULTS


async def test_concurrent_actions_of_one_turn_apply_in_call_order(wiki: LocalWiki) -> None:
    env = WikiEnv(wiki)
    await env.step_text("search[Alpha Ridge]")
    results = await asyncio.gather(*(env.step(Action("lookup", {"keyword": "eastern"})) for _ in range(3)))
    assert [r.text.split(")")[0] for r in results] == ["(Result 1 / 3", "(Result 2 / 3", "(Result 3 / 3"]


async def test_a_cancelled_search_returns_before_the_run_closes_the_wiki(wiki: LocalWiki) -> None:
    """Ctrl-C cancels the episodes mid-search and the run then closes the backend. A thread
    cannot be stopped, so the cancel waits for the search to return: a SQLite connection closed
    while a thread read it crashed the process (SIGSEGV, 2 of 40 Ctrl-C runs before)."""
    entered, release = threading.Event(), threading.Event()
    order: list[str] = []

    class Held:
        def search(self, entity: str):  # noqa: ANN202 - the backend's SearchOutcome
            entered.set()
            release.wait(60)
            outcome = wiki.search(entity)
            order.append("search returned")
            return outcome

        def close(self) -> None:
            order.append("closed")

    factory = WikiEnvFactory(Held())  # type: ignore[arg-type]

    async def run() -> None:
        try:
            await factory().step(Action("search", {"entity": "Alpha Ridge"}))
        finally:
            factory.close()  # as Run.aclose does once the examples are cancelled

    task = asyncio.create_task(run())
    try:
        await asyncio.to_thread(entered.wait, 60)
        task.cancel()
        for _ in range(50):  # many turns of the loop: a cancel that did not wait would have ended the task
            await asyncio.sleep(0)
        assert not task.done() and order == []
        task.cancel()  # a second cancel waits as well
        await asyncio.sleep(0)
        assert not task.done()
    finally:
        release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert order == ["search returned", "closed"]
