"""HotpotQA: the dev questions, in the paper's sample or the offline subset; EM and F1.

Decisions a next engineer needs:

- Files (under the data folder): ``offline`` (the default) is
  ``hotpotqa/hotpot_dev_distractor_685.json``, whose paragraphs make the offline wiki;
  ``paper500`` and ``all`` draw from ``hotpotqa/hotpot_dev_v1_simplified.json`` (all 7,405 dev
  questions in original order). From the hub, ``hotpotqa/hotpot_qa`` ``distractor``
  ``validation`` gives the same questions in the same order. Where no data folder is found, that
  hub split is written once as ``hotpot_dev_distractor_v1.json`` (``RECIPE``, ``tasks.hubdata``)
  and serves every split: offline is then all 7,405 questions, their paragraphs the offline wiki.
- Two local formats, told apart by the first record: official distractor
  (``_id``, ``context``, ...; ``dev_index`` where the file is a subset) and simplified
  (``question``, ``answer``, ``type`` only). A distractor file without ``dev_index`` is taken as
  the whole dev set in order only when it has 7,405 records; otherwise its rows cannot be
  matched to the paper's indices and ``paper500`` reports them missing.
- Example ids are HotpotQA ``_id``s. The simplified file has none, so its rows borrow the
  ``_id`` of a distractor file in the same folder whose ``dev_index`` points at them (and whose
  question is the same), else get ``dev-{index}``. Thus the 39 paper500 questions that the 685
  file covers carry the same id in both splits and can be compared pairwise; every example
  also keeps ``metadata["dev_index"]`` to join on.
- Metadata kept for breakdowns: ``type`` (bridge / comparison), ``level`` (None in the
  simplified file), ``dev_index``, ``supporting_titles``.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import json
from pathlib import Path
from typing import Any

from tqdm import tqdm

from react_bench.metrics import exact_match, f1_score
from react_bench.prompts import PaperPrompts
from react_bench.tasks import data
from react_bench.tasks.base import Coverage, Example, Pool, TaskConfig, TaskInfo, select
from react_bench.tasks.data import DataUnavailableError, HubSpec, locate, peek_record, read_records, resolve_pool
from react_bench.tasks.hubdata import Recipe
from react_bench.tasks.wikitask import PALM_HOTPOTQA, PAPER_TABLE1, WikiTask

DEV_SIZE = 7405
FILES = {
    "offline": "hotpotqa/hotpot_dev_distractor_685.json",
    "paper500": "hotpotqa/hotpot_dev_v1_simplified.json",
    "all": "hotpotqa/hotpot_dev_v1_simplified.json",
    "lats100": "hotpotqa/hotpot_train_lats100.json",
}
HUB = HubSpec("hotpotqa/hotpot_qa", "distractor", "validation")
WIKI_SOURCE = "hotpotqa/hotpot_dev_distractor_685.json"  # its context paragraphs are the offline wiki
BUILT_FILE = "hotpot_dev_distractor_v1.json"  # HotpotQA's own name for the whole distractor dev set
_DISTRACTOR_COLUMNS = (
    "_id",
    "dev_index",
    "question",
    "answer",
    "type",
    "level",
    "supporting_titles",
    "supporting_facts",
)
_SIMPLIFIED_COLUMNS = ("question", "answer", "type")


def _require_text(record: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = record.get(key)
        if value is None:
            return f"missing field {key!r}"
        if not isinstance(value, str):
            return f"field {key!r} must be a string, got {type(value).__name__}"
    return None


def check_simplified(record: dict[str, Any]) -> str | None:
    return _require_text(record, ("question", "answer"))


def check_distractor(record: dict[str, Any]) -> str | None:
    if reason := _require_text(record, ("_id", "question", "answer")):
        return reason
    dev_index = record.get("dev_index")
    if dev_index is not None and (not isinstance(dev_index, int) or isinstance(dev_index, bool) or dev_index < 0):
        return f"field 'dev_index' must be a row number, got {dev_index!r}"
    return None


def _titles(record: dict[str, Any]) -> list[str]:
    """Supporting titles: the explicit list where given, else those of supporting_facts; HTML entities
    unescaped, as the offline wiki's titles are (``envs.wiki.build``)."""
    if record.get("supporting_titles"):
        return [html.unescape(str(t)) for t in record["supporting_titles"]]
    facts = record.get("supporting_facts") or []
    return list(dict.fromkeys(html.unescape(str(fact[0])) for fact in facts if fact))


def _example(id_: str, record: dict[str, Any], dev_index: int | None, titles: list[str]) -> Example:
    metadata = {
        "type": record.get("type"),
        "level": record.get("level"),
        "dev_index": dev_index,
        "supporting_titles": titles,
    }
    return Example(id_, record["question"], record["answer"], metadata)


def _distractor_examples(path: Path) -> list[Example]:
    records = read_records(path, _DISTRACTOR_COLUMNS, check_distractor, "hotpotqa-distractor")
    whole = len(records) == DEV_SIZE
    examples = []
    for row, record in enumerate(records):
        dev_index = record.get("dev_index")
        if dev_index is None and whole:
            dev_index = row
        examples.append(_example(record["_id"], record, dev_index, _titles(record)))
    return examples


def _borrowed_ids(folder: Path, questions: list[str]) -> dict[int, str]:
    """dev_index -> ``_id`` from distractor files beside the simplified one (module docstring)."""
    ids: dict[int, str] = {}
    for sibling in sorted(folder.glob("hotpot_dev_distractor*.json")):
        for example in _distractor_examples(sibling):
            dev_index = example.metadata["dev_index"]
            if dev_index is not None and dev_index < len(questions) and questions[dev_index] == example.question:
                ids[dev_index] = example.id
    return ids


def _simplified_examples(path: Path) -> list[Example]:
    records = read_records(path, _SIMPLIFIED_COLUMNS, check_simplified, "hotpotqa-simplified")
    ids = _borrowed_ids(path.parent, [r["question"] for r in records])
    return [_example(ids.get(row, f"dev-{row}"), record, row, []) for row, record in enumerate(records)]


@functools.lru_cache(maxsize=8)
def _cached_pool(path: str, size: int, mtime_ns: int) -> Pool:
    del size, mtime_ns  # cache key only: a changed file is read again
    file = Path(path)
    first = peek_record(file)
    is_distractor = "_id" in first or "context" in first
    examples = _distractor_examples(file) if is_distractor else _simplified_examples(file)
    return Pool.of(str(file), examples)


def local_pool(path: Path) -> Pool:
    stat = path.stat()
    return _cached_pool(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def pool_from_hub_rows(rows: list[dict[str, Any]], source: str) -> Pool:
    """Examples from rows in the hub's layout (``id``; ``supporting_facts`` as {title, sent_id})."""
    examples = []
    for row, record in enumerate(rows):
        facts = record.get("supporting_facts") or {}
        titles = list(dict.fromkeys(facts.get("title") or []))
        examples.append(_example(str(record["id"]), record, row, titles))
    return Pool.of(source, examples)


def hub_pool() -> Pool:
    dataset = data.load_hub(HUB)  # looked up at call time: tests stand in for the hub here
    columns = [
        c for c in ("id", "question", "answer", "type", "level", "supporting_facts") if c in dataset.column_names
    ]
    return pool_from_hub_rows(dataset.select_columns(columns).to_list(), str(HUB))


def official_record(row: dict[str, Any]) -> dict[str, Any]:
    """A hub row (``id``; ``supporting_facts`` / ``context`` as columns of lists) in the official layout."""
    facts = row.get("supporting_facts") or {}
    context = row.get("context") or {}
    return {
        "_id": str(row["id"]),
        "question": row["question"],
        "answer": row["answer"],
        "type": row.get("type"),
        "level": row.get("level"),
        "supporting_facts": [list(f) for f in zip(facts.get("title") or [], facts.get("sent_id") or [], strict=True)],
        "context": [list(c) for c in zip(context.get("title") or [], context.get("sentences") or [], strict=True)],
    }


def write_built(datasets: list[Any], folder: Path) -> dict[str, int]:
    """The hub's distractor dev split as ``hotpot_dev_distractor_v1.json`` (official layout, dev order)."""
    (dataset,) = datasets
    questions, titles = 0, set[str]()
    with open(folder / BUILT_FILE, "w", encoding="utf-8") as out:
        out.write("[")
        for row in tqdm(dataset, desc="hotpotqa: writing", unit=" questions", leave=False):
            record = official_record(row)
            out.write(("," if questions else "") + "\n" + json.dumps(record, ensure_ascii=False))
            titles.update(title for title, _ in record["context"])
            questions += 1
        out.write("\n]\n")
    return {"questions": questions, "pages": len(titles)}


RECIPE = Recipe(
    task="hotpotqa",
    specs=(HUB,),
    size_hint="hotpotqa/hotpot_qa's distractor dev split: 7,405 questions with their paragraphs, 45.7 MB of data "
    "as the hub's card gives it",
    write=write_built,
    files={"offline": BUILT_FILE, "paper500": BUILT_FILE, "all": BUILT_FILE, "wiki": BUILT_FILE},
)


TRAIN_HUB = HubSpec("hotpotqa/hotpot_qa", "distractor", "train")
LATS_FILE = "hotpot_train_lats100.json"
LATS_QUESTIONS = 100  # LATS's hotpot/lats.sh: --task_start_index 0 --task_end_index 100, split "train"


def write_lats100(datasets: list[Any], folder: Path) -> dict[str, int]:
    """The first 100 questions of the hub's distractor train split (official layout, train order):
    the questions LATS's HotpotQA figures were made on (its ``hotpot_train_v1.1_simplified.json``
    rows 0-99, the same split in the same order)."""
    (dataset,) = datasets
    rows = [official_record(dataset[k]) for k in range(min(LATS_QUESTIONS, len(dataset)))]
    (folder / LATS_FILE).write_text(json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"questions": len(rows), "of": len(dataset)}


LATS_RECIPE = Recipe(
    task="hotpotqa-lats100",
    specs=(TRAIN_HUB,),
    size_hint="hotpotqa/hotpot_qa's distractor train split, 90,447 questions, of which the first 100 are kept",
    write=write_lats100,
    files={"lats100": LATS_FILE, "wiki": LATS_FILE},
)


def lats100_file(config: TaskConfig) -> Path:
    """split=lats100: the data folder's file where it holds one, else the hub build's (``LATS_RECIPE``)."""
    folder = data.find_data_dir(config.data_dir)
    if folder is not None and (folder / FILES["lats100"]).is_file():
        return folder / FILES["lats100"]
    if config.source == "local":
        raise DataUnavailableError(f"hotpotqa lats100: no {FILES['lats100']} in the data folder (task.source=local)")
    return LATS_RECIPE.build() / LATS_FILE


class HotpotQATask(WikiTask):
    info = TaskInfo(
        grounded_answers=True,
        name="hotpotqa",
        title="HotpotQA",
        metrics=("em", "f1"),
        primary_metric="em",
        column="HotpotQA EM",
        paper={"PaLM-540B": PALM_HOTPOTQA, "GPT-3": {"react": 30.4}},
        paper_table=PAPER_TABLE1,
        groups=("type", "level"),
        # hotpotqa.ipynb: instruction + webthink_simple6; the other styles' keys of the same file
        paper_prompts=PaperPrompts(
            "react/prompts_naive.json",
            {"react": "webthink_simple6", "act": "webact_simple6", "cot": "cotqa_simple6", "standard": "webqa_simple6"},
            instruction="react/hotpotqa_instruction",
        ),
    )

    def pool(self, config: TaskConfig) -> Pool:
        if config.split == "lats100" and not config.data_file:  # built from the hub's train split, whatever the folder
            path = lats100_file(config)
            return dataclasses.replace(local_pool(path), origin=data.origin_of(path))
        return resolve_pool(
            config, task=self.info.name, files=FILES, local_pool=local_pool, hub_pool=hub_pool, recipe=RECIPE
        )

    def select(self, config: TaskConfig) -> tuple[list[Example], Coverage]:
        examples, coverage = select(self.pool(config), config)
        self.coverage = coverage
        return examples, coverage

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        return self.select(config)[0]

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return {"em": exact_match(prediction, gold), "f1": f1_score(prediction, gold)}

    def local_wiki(self, config: TaskConfig, cache_dir: Path | None = None) -> Path:
        from react_bench.envs.wiki.build import ensure_wiki

        if config.split == "lats100":  # its questions' own paragraphs: the offline wiki of LATS's questions
            return ensure_wiki("hotpotqa-lats100", lats100_file(config), "distractor", cache_dir)
        return ensure_wiki(
            self.info.name, locate(config, "wiki", {"wiki": WIKI_SOURCE}, RECIPE), "distractor", cache_dir
        )


TASKS = (HotpotQATask,)  # the registry's (``react_bench.tasks.TASKS``)
