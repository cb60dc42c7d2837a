"""LocalWiki: title normalisation (FEVER included), BM25 Similar list, hostile query strings."""

from __future__ import annotations

import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from react_bench.envs.wiki import local
from react_bench.envs.wiki.build import build_from_fever, build_from_jsonl, detokenize_fever
from react_bench.envs.wiki.env import NotFound, PageFound, WikiEnv
from react_bench.envs.wiki.local import LocalWiki, normalize_title, query_tokens
from react_bench.errors import ConfigError

PAGES = [
    ("Alpha Ridge", "Alpha Ridge is a mountain range. It lies near the coast."),
    ("Apple", "Apple is a fruit."),
    ("APPLE", "APPLE is an acronym."),
    ("Orbit Station", "Orbit Station is a space station. It is not a planet."),
    ("Alphabet", "Alphabet is a set of letters."),
    ("Café Noir", "Café Noir is a film."),
] + [(f"Common Page {i}", f"Common page number {i} shares the word common.") for i in range(30)]


def _write_jsonl(path: Path, pages: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in pages))
    return path


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> LocalWiki:
    src = _write_jsonl(tmp_path_factory.mktemp("local") / "pages.jsonl", PAGES)
    build_from_jsonl(src, src.with_suffix(".sqlite"))
    return LocalWiki(src.with_suffix(".sqlite"))


@pytest.mark.parametrize(
    ("raw", "display"),
    [
        ("Soul_Food_-LRB-film-RRB-", "Soul Food (film)"),
        ("Star_Wars_-LSB-Episode_IV-RSB-", "Star Wars [Episode IV]"),
        ("Re-Animator_-COLON-_Beyond", "Re-Animator : Beyond"),
        ("  Alpha   Ridge ", "Alpha Ridge"),
    ],
)
def test_normalize_title(raw: str, display: str) -> None:
    assert normalize_title(raw) == display


def test_fever_title_is_found_in_both_forms(tmp_path: Path) -> None:
    src = tmp_path / "wiki_pages.jsonl"
    record = {
        "id": "Soul_Food_-LRB-film-RRB-",
        "text": "",
        "lines": "0\tSoul Food is a 1997 film -LRB- a drama -RRB- .\tdrama\n1\t\n2\tIt was a hit , they say .",
    }
    src.write_text(json.dumps(record) + "\n")
    wiki = LocalWiki(build_from_fever(src, tmp_path / "fever.sqlite").path)
    for query in ["Soul_Food_-LRB-film-RRB-", "Soul Food (film)", "soul food (film)", "Soul_Food_(film)"]:
        page = wiki.lookup_title(query)
        assert page is not None and page.title == "Soul Food (film)", query
    assert page.text == "Soul Food is a 1997 film (a drama). It was a hit, they say."


def test_detokenize_fever() -> None:
    assert detokenize_fever("The 101st -LRB- `` Screaming Eagles '' -RRB- is elite .") == (
        'The 101st ("Screaming Eagles") is elite.'
    )
    assert detokenize_fever("He did n't go to John 's house , did he ?") == "He didn't go to John's house, did he?"


def test_every_page_of_the_fever_subset_is_found_by_its_id(data_file, tmp_path: Path) -> None:
    src = data_file("fever/wiki_pages_evidence_subset.jsonl")
    wiki = LocalWiki(build_from_fever(src, tmp_path / "fever.sqlite").path)
    ids = [json.loads(line)["id"] for line in src.read_text().splitlines() if line.strip()]
    assert any("-LRB-" in i for i in ids)
    for page_id in ids:
        page = wiki.lookup_title(page_id)
        assert page is not None and page.title == normalize_title(page_id), page_id


def test_title_lookup_prefers_the_exact_title_then_folds_case(wiki: LocalWiki) -> None:
    assert wiki.lookup_title("APPLE").text == "APPLE is an acronym."
    assert wiki.lookup_title("Apple").text == "Apple is a fruit."
    assert wiki.lookup_title("apple").text == "Apple is a fruit."  # first of the case-folded twins
    assert wiki.lookup_title("alpha_ridge").title == "Alpha Ridge"
    assert wiki.lookup_title("Alpha Ridg") is None


def test_similar_ranks_title_matches_first(wiki: LocalWiki) -> None:
    assert set(wiki.similar("orbit of the ridge")[:2]) == {"Orbit Station", "Alpha Ridge"}
    assert wiki.similar("Alphabet letters") == ["Alphabet"]
    assert wiki.similar("cafe noir")[0] == "Café Noir"  # diacritics folded on both sides


HOSTILE = [
    '"',
    '""',
    "'",
    'Alpha"Ridge',
    "AND",
    "OR",
    "NOT",
    "alpha NOT ridge",
    "NEAR(alpha ridge, 2)",
    "alpha AND",
    "*",
    "alph*",
    "^alpha",
    "title:alpha",
    "{title text}: alpha",
    "(",
    ")",
    "((alpha)",
    "-alpha",
    "+",
    "",
    "   ",
    "\x00alpha",
    "\ud800alpha ridge",  # a lone surrogate, as json.loads gives for "\\ud800"
    "'; DROP TABLE pages; --",
    "🙂 ridge",
    "x" * 100_000,
    "alpha " * 20_000,
    " ".join(f"w{i}" for i in range(20_000)),
]


@pytest.mark.parametrize("query", HOSTILE, ids=[f"q{i}" for i in range(len(HOSTILE))])
def test_hostile_queries_never_crash(wiki: LocalWiki, query: str) -> None:
    outcome = wiki.search(query)
    assert isinstance(outcome, (PageFound, NotFound))
    if isinstance(outcome, NotFound):
        assert len(outcome.similar) <= 5


def test_hostile_queries_keep_their_meaning(wiki: LocalWiki) -> None:
    # Operators are words: NOT does not exclude, NEAR/AND are not syntax, * is no prefix.
    assert "Alpha Ridge" in wiki.similar("alpha NOT ridge")
    assert "Orbit Station" in wiki.similar("NOT")  # "not" is a word of that page
    assert "Alpha Ridge" in wiki.similar("NEAR")  # "near" is a word of that page
    assert wiki.similar("alph*") == []  # no page has the word "alph"; no prefix matching
    assert wiki.similar("title:alpha") == ["Alpha Ridge"]  # "title" is a word, not a column filter
    assert wiki.similar('"') == [] and wiki.similar("") == []
    assert wiki.search("'; DROP TABLE pages; --") == NotFound(())
    assert wiki.lookup_title("Alpha Ridge") is not None


def test_long_queries_are_cut_to_a_bounded_number_of_tokens() -> None:
    tokens = query_tokens(" ".join(f"w{i}" for i in range(10_000)))
    assert tokens == [f"w{i}" for i in range(local.MAX_QUERY_TOKENS)]
    assert query_tokens("Café, CAFÉ and cafe") == ["cafe", "and"]


def test_common_tokens_are_dropped_over_budget_and_all_common_queries_still_answer(
    wiki: LocalWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "POSTINGS_BUDGET", 10)
    # "common" is on 30 pages (over budget): the rare "orbit" alone ranks.
    assert wiki.similar("common orbit")[0] == "Orbit Station"
    # Only common words: pages holding all of them, unranked, still at most 5.
    titles = wiki.similar("common page")
    assert len(titles) == 5 and all(t.startswith("Common Page") for t in titles)


def test_the_file_is_opened_read_only(wiki: LocalWiki) -> None:
    with pytest.raises(sqlite3.OperationalError):
        wiki._conn().execute("DELETE FROM pages")


def test_concurrent_searches_from_threads(wiki: LocalWiki) -> None:
    queries = ["Alpha Ridge", "Apple", "orbit", "Common Page 7", "qwxz"] * 40
    expected = [wiki.search(q) for q in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(wiki.search, queries)) == expected


async def test_env_over_the_local_wiki(wiki: LocalWiki) -> None:
    obs = await WikiEnv(wiki).step_text("search[alpha_ridge]")
    assert obs.text == "Alpha Ridge is a mountain range. It lies near the coast.."


def test_this_python_has_fts5_and_a_missing_fts5_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    local.require_fts5()
    connect = sqlite3.connect

    def no_fts5(_: str) -> sqlite3.Connection:
        conn = connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE v USING no_such_module(x)")  # raises like a build without FTS5
        return conn

    monkeypatch.setattr(local.sqlite3, "connect", no_fts5)
    with pytest.raises(RuntimeError, match="no FTS5"):
        local.require_fts5()


def test_a_missing_or_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no local wiki"):
        LocalWiki(tmp_path / "none.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE meta(key TEXT, value TEXT)").connection.commit()
    with pytest.raises(ValueError, match="rebuild"):
        LocalWiki(other)
