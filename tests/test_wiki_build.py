"""Wiki builders: streaming, duplicates, idempotence, the task cache; the 685 questions' gold titles."""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from react_bench.envs.wiki import build
from react_bench.envs.wiki.build import (
    build_from_distractor,
    build_from_jsonl,
    ensure_wiki,
    iter_json_array,
    pages_from_distractor,
)
from react_bench.envs.wiki.env import WikiEnv, page_observation
from react_bench.envs.wiki.local import LocalWiki
from react_bench.errors import ConfigError
from tests.support import DATA, task_wiki


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_iter_json_array_streams_in_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"a": i, "s": 'x, ] [ " }' * i} for i in range(50)] + [[1, 2], "str", 3]
    src = tmp_path / "a.json"
    src.write_text(" \n" + json.dumps(items, indent=1))
    monkeypatch.setattr(build, "_READ_CHUNK", 7)
    assert list(iter_json_array(src)) == items
    (tmp_path / "empty.json").write_text("[ ]")
    assert list(iter_json_array(tmp_path / "empty.json")) == []
    (tmp_path / "bad.json").write_text('[{"a": 1}, {"b": ')
    with pytest.raises(json.JSONDecodeError):
        list(iter_json_array(tmp_path / "bad.json"))


def test_first_title_wins_and_duplicates_are_counted(tmp_path: Path) -> None:
    src = tmp_path / "p.jsonl"
    rows = [("A", "first."), ("B", "b."), ("A", "second."), ("A_", "third."), ("", "no title.")]
    src.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in rows))
    stats = build_from_jsonl(src, tmp_path / "w.sqlite")
    assert (stats.pages, stats.duplicates) == (2, 2)
    assert LocalWiki(stats.path).lookup_title("A").text == "first."


def test_same_input_same_file_byte_for_byte(data_dir: Path, tmp_path: Path) -> None:
    src = data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json"
    first = build_from_distractor(src, tmp_path / "one.sqlite")
    second = build_from_distractor(src, tmp_path / "two.sqlite")
    assert first.pages > 100 and first.pages == second.pages
    assert _sha(first.path) == _sha(second.path)
    build_from_distractor(src, first.path)  # rebuilt in place: still the same
    assert _sha(first.path) == _sha(second.path)
    assert not list(tmp_path.glob(".*.tmp"))


def test_task_wiki_builds_once_and_caches(data_dir: Path, tmp_path: Path) -> None:
    path = task_wiki("fever", data_dir, tmp_path)
    stamp = path.stat().st_mtime_ns
    assert task_wiki("fever", data_dir, tmp_path) == path
    assert path.stat().st_mtime_ns == stamp and path.parent == tmp_path
    pages = (data_dir / "fever" / "wiki_pages_evidence_subset.jsonl").read_text().splitlines()
    assert len(LocalWiki(path)) == len(pages) > 10  # one page per line


def test_task_wiki_default_cache_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    (data / "fever").mkdir(parents=True)
    (data / "fever" / "wiki_pages_evidence_subset.jsonl").write_text(
        json.dumps({"id": "X_-LRB-y-RRB-", "text": "X is y .", "lines": "0\tX is y ."}) + "\n"
    )
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    path = task_wiki("fever", data)
    assert path.parent == tmp_path / "cache" / "wiki"
    assert LocalWiki(path).lookup_title("X (y)").text == "X is y."
    with pytest.raises(ConfigError, match="hotpot_dev_distractor_685"):
        task_wiki("hotpotqa", data)
    with pytest.raises(ConfigError, match="no wiki builder"):
        ensure_wiki("alfworld", data / "fever" / "wiki_pages_evidence_subset.jsonl", "pddl")
    # a damaged cache file is rebuilt rather than trusted
    path.write_bytes(b"this is not an SQLite file")
    assert task_wiki("fever", data) == path
    assert LocalWiki(path).lookup_title("X (y)").text == "X is y."
    with pytest.raises(ConfigError, match="is not a usable wiki"):
        LocalWiki(tmp_path / "data" / "fever" / "wiki_pages_evidence_subset.jsonl")


@pytest.fixture(scope="module")
def hotpot_wiki(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> LocalWiki:
    return LocalWiki(task_wiki("hotpotqa", data_dir, tmp_path_factory.mktemp("cache")))


async def test_every_gold_supporting_title_of_the_offline_questions_is_found(
    data_dir: Path, hotpot_wiki: LocalWiki
) -> None:
    src = data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json"
    questions = json.loads(src.read_text())
    assert len(questions) == (685 if DATA["kind"] == "prepared" else len(questions)) > 50
    variants: dict[str, set[str]] = defaultdict(set)  # a few titles come with two texts
    for title, text in pages_from_distractor(src):
        variants[title].add(text)
    checked = 0
    for question in questions:
        paragraphs = {
            html.unescape(title): html.unescape("".join(sents)).strip() for title, sents in question["context"]
        }
        for title in map(html.unescape, question["supporting_titles"]):  # the file's titles carry "&amp;"
            obs = await WikiEnv(hotpot_wiki).step_text(f"search[{title}]")
            assert not obs.text.startswith("Could not find"), title
            expected = {page_observation(paragraphs[title])} | {page_observation(v) for v in variants[title]}
            assert obs.text in expected, title
            if len(variants[title]) == 1:
                assert obs.text == page_observation(paragraphs[title])
            checked += 1
    assert checked >= 2 * len(questions)


def test_small_batches_index_every_page_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "BATCH", 3)
    src = tmp_path / "p.jsonl"
    rows = [(f"Page {i % 7}", f"Page {i % 7} holds the word w{i}x.") for i in range(20)]  # 13 duplicates
    src.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in rows))
    stats = build_from_jsonl(src, tmp_path / "w.sqlite")
    wiki = LocalWiki(stats.path)
    assert (stats.pages, stats.duplicates) == (7, 13)
    for i in range(7):  # each page's first text is indexed, once; later duplicates are not
        assert wiki.similar(f"w{i}x") == [f"Page {i}"]
    assert wiki.similar("w7x") == []


def test_a_bad_input_line_fails_the_build_and_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "p.jsonl"
    src.write_text(json.dumps({"title": "A", "text": "a."}) + "\n{not json\n")
    with pytest.raises(json.JSONDecodeError):
        build_from_jsonl(src, tmp_path / "w.sqlite")
    assert list(tmp_path.iterdir()) == [src]


def test_hotpotqa_titles_have_no_html_entities(data_file):
    """The distractor file writes "Etiquette &amp; Espionage"; Wikipedia's title is "Etiquette & Espionage"."""
    from react_bench.envs.wiki.build import pages_from_distractor

    pages = dict(pages_from_distractor(data_file("hotpotqa/hotpot_dev_distractor_685.json")))
    assert "Etiquette & Espionage" in pages and "Etiquette &amp; Espionage" not in pages
    assert not [t for t in pages if re.search(r"&(amp|quot|lt|gt|#\d+);", t)]
    assert not [t for t, text in pages.items() if "&amp;" in text or "&quot;" in text]
