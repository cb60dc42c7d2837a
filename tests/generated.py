"""A data folder the tests write themselves, for a clone with no prepared one (``tests/conftest.py``).

The project's own SynthWiki world (``react_bench.envs.wiki.generate``: invented names, deterministic) laid out
as HotpotQA's and FEVER's offline files are, under the names a prepared folder uses, so that every
test of the project's own behaviour (runs of the default task, resume, studies, the wiki) has
examples and pages without the network. It is not benchmark data: a test that checks a fact of
HotpotQA or FEVER themselves reads the real files (``conftest.data_file``) and is skipped, naming
the file, where they cannot be had.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from react_bench.envs.wiki import generate as synthwiki

SEED, SIZE = 0, 120  # a small world: about 450 entities, made in well under a second
HOTPOT = "hotpotqa/hotpot_dev_distractor_685.json"  # the names a prepared folder gives these files
FEVER_CLAIMS = "fever/paper_test_with_evidence.jsonl"
FEVER_PAGES = "fever/wiki_pages_evidence_subset.jsonl"
MARKER = "GENERATED.md"
_SENTENCE_END = re.compile(r"(?<=\.) (?=[A-Z0-9])")


def sentences(text: str) -> list[str]:
    """An article's sentences, each after the first with its leading space (HotpotQA's layout)."""
    parts = _SENTENCE_END.split(text)
    return [parts[0], *(" " + p for p in parts[1:])]


def _hotpot(question: dict[str, Any], index: int, pages: dict[str, str], titles: list[str]) -> dict[str, Any]:
    gold = list(question["supporting_titles"])
    others = [t for t in titles[index % len(titles) :] + titles if t not in gold][:2]  # two distractor pages
    kind = "comparison" if question["type"].startswith("comparison") else "bridge"
    return {
        "_id": question["id"],
        "dev_index": index,
        "question": question["question"],
        "answer": question["answer"],
        "type": kind,
        "level": "medium",
        "supporting_titles": gold,
        "supporting_facts": None,
        "context": [[t, sentences(pages[t])] for t in gold + others],
        "source": "synthwiki",
    }


def _fever_id(title: str) -> str:
    return title.replace(" ", "_")


def write_generated(folder: Path) -> Path:
    """``folder`` laid out as a prepared data folder from SynthWiki's world (module docstring)."""
    world = synthwiki.generate(SEED, SIZE)
    pages = {p["title"]: p["text"] for p in world.pages()}
    titles = sorted(pages)
    test = [q for q in world.questions if q["split"] == "test"]
    questions = [q for q in test if q["type"] != "claim"]
    claims = [q for q in test if q["type"] == "claim"]
    (folder / "hotpotqa").mkdir(parents=True, exist_ok=True)
    (folder / "fever").mkdir(parents=True, exist_ok=True)
    records = [_hotpot(q, i, pages, titles) for i, q in enumerate(questions)]
    (folder / HOTPOT).write_text(json.dumps(records, ensure_ascii=False, indent=0), encoding="utf-8")
    used: dict[str, None] = {}
    with open(folder / FEVER_CLAIMS, "w", encoding="utf-8") as out:
        for number, claim in enumerate(claims, start=1):
            title = claim["supporting_titles"][0]
            nei = claim["answer"] == "NOT ENOUGH INFO"
            evidence = [[[number, None, None, None]]] if nei else [[[number, number, _fever_id(title), 0]]]
            if not nei:
                used[title] = None
            row = {
                "id": number,
                "question": claim["question"],
                "label": claim["answer"],
                "evidence": evidence,
                "pars": [] if nei else [sentences(pages[title])[0]],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(folder / FEVER_PAGES, "w", encoding="utf-8") as out:
        for title in used:
            lines = [s.strip() for s in sentences(pages[title])]
            row = {
                "id": _fever_id(title),
                "text": " ".join(lines),
                "lines": "\n".join(f"{i}\t{s}" for i, s in enumerate(lines)),
                "known_line_ids": list(range(len(lines))),
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    (folder / MARKER).write_text(
        f"Written by tests/generated.py from SynthWiki (seed {SEED}, size {SIZE}): not benchmark data.\n",
        encoding="utf-8",
    )
    return folder
