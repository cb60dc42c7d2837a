"""FEVER: claims and their labels, in the paper's sample or the offline subset; label accuracy.

Decisions a next engineer needs:

- Files (under the data folder): ``offline`` (the default) is
  ``fever/paper_test_with_evidence.jsonl``, whose evidence pages are in the offline wiki;
  ``paper500`` and ``all`` draw from ``fever/paper_dev.jsonl`` (9,999 claims; the paper's 500
  are the same row indices as HotpotQA's). From the hub, ``fever/fever`` ``v1.0``
  ``paper_dev`` has one row per evidence sentence: rows are folded into one claim per ``id``
  in order of first appearance (``fold_claims``). That hub dataset is built by a loading script,
  which ``datasets`` 4+ refuses to run, so its parquet export (``refs/convert/parquet``) is read.
- Where no data folder is found, the claims are written once as ``paper_dev.jsonl`` with the wiki
  pages their evidence names (``RECIPE``, ``tasks.hubdata``); every split reads that claims file.
- Two local formats, told apart by the first record: paper_dev (``claim``) and the evidence
  JSONL (``question`` holds the claim, ``pars`` the gold sentences). Only paper_dev rows have a
  ``dev_index`` (their row), so ``paper500`` drawn from the evidence file finds none of them.
- Example ids are FEVER's claim ids as text.
- Few-shot exemplars are FEVER claims too, written by the prompts module: their ids are left
  out of every split. They are read, at selection time, from ``FEVER_EXEMPLAR_IDS_FILE``
  (``react_bench/prompts/fever_exemplar_ids.json``: a JSON list of ids, or ``{"ids": [...]}``)
  when that file exists, plus ``TaskConfig.exclude_ids``. Asking for one by ``ids`` is an error.
- Score: ``accuracy`` (the prediction names the gold label after normalisation) and
  ``in_label_set`` (it names any label at all), so out-of-set answers can be counted: an answer
  counts only if it normalises to one of SUPPORTS / REFUTES / NOT ENOUGH INFO (the ReAct code
  compares normalised strings); anything else is "out of set", counted and reported, and wrong.
- Metadata: ``label``, ``verifiable`` (paper_dev only), ``evidence_titles``, ``dev_index``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from react_bench.metrics import normalize_answer
from react_bench.prompts import PaperPrompts
from react_bench.tasks import data
from react_bench.tasks.base import Coverage, DataError, Example, Pool, TaskConfig, TaskInfo, select
from react_bench.tasks.data import HubSpec, locate, peek_record, read_records, resolve_pool
from react_bench.tasks.hubdata import Recipe
from react_bench.tasks.wikitask import PALM_FEVER, PAPER_TABLE1, WikiTask

FILES = {
    "offline": "fever/paper_test_with_evidence.jsonl",
    "paper500": "fever/paper_dev.jsonl",
    "all": "fever/paper_dev.jsonl",
}
# fever/fever is built by a loading script, which datasets 4+ refuses to run; the hub's parquet
# export of it (refs/convert/parquet, one folder per config and split) is read instead.
HUB_EXPORT = "refs/convert/parquet"
HUB = HubSpec("fever/fever", None, "paper_dev", revision=HUB_EXPORT, data_files="v1.0/paper_dev/*.parquet")
HUB_PAGES = HubSpec(
    "fever/fever", None, "wikipedia_pages", revision=HUB_EXPORT, data_files="wiki_pages/wikipedia_pages/*.parquet"
)
WIKI_SOURCE = "fever/wiki_pages_evidence_subset.jsonl"  # the gold evidence lines, in wiki-pages layout
BUILT_CLAIMS = "paper_dev.jsonl"  # built from the hub: FEVER's own name and layout for these claims
BUILT_PAGES = "wiki_pages_evidence.jsonl"  # the wiki pages the claims' evidence names, whole
FEVER_EXEMPLAR_IDS_FILE = Path(__file__).resolve().parents[1] / "prompts" / "fever_exemplar_ids.json"

FEVER_LABELS: tuple[str, ...] = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
_LABEL_BY_NORM = {normalize_answer(label): label for label in FEVER_LABELS}


def map_fever_label(prediction: str) -> str | None:
    """The FEVER label a prediction names (normalised equality), or None when it names none."""
    return _LABEL_BY_NORM.get(normalize_answer(prediction))


def fever_correct(prediction: str, gold: str) -> float:
    label = map_fever_label(prediction)
    return float(label is not None and label == map_fever_label(gold))


@dataclass(frozen=True)
class LabelAccuracy:
    accuracy: float
    correct: int
    total: int
    out_of_set: int  # predictions that named no label (counted wrong)

    @property
    def out_of_set_rate(self) -> float:
        return self.out_of_set / self.total if self.total else 0.0


def label_accuracy(predictions: Sequence[str], golds: Sequence[str]) -> LabelAccuracy:
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold labels")
    correct = sum(int(fever_correct(p, g)) for p, g in zip(predictions, golds))
    out = sum(map_fever_label(p) is None for p in predictions)
    total = len(golds)
    return LabelAccuracy(correct / total if total else 0.0, correct, total, out)


_COLUMNS = ("id", "claim", "question", "label", "verifiable", "evidence")


def _check(record: dict[str, Any], text_key: str) -> str | None:
    id_ = record.get("id")
    if id_ is None:
        return "missing field 'id'"
    if isinstance(id_, bool) or not isinstance(id_, (int, str)):
        return f"field 'id' must be an integer or a string, got {type(id_).__name__}"
    text = record.get(text_key)
    if not isinstance(text, str):
        return f"missing field {text_key!r}" if text is None else f"field {text_key!r} must be a string"
    label = record.get("label")
    if label not in FEVER_LABELS:
        return f"field 'label' must be one of {', '.join(FEVER_LABELS)}, got {label!r}"
    return None


def check_paper_dev(record: dict[str, Any]) -> str | None:
    return _check(record, "claim")


def check_evidence(record: dict[str, Any]) -> str | None:
    return _check(record, "question")


def _evidence_titles(evidence: Any) -> list[str]:
    """Page titles of FEVER evidence: sets of [annotation, evidence id, title, line]."""
    titles = (item[2] for group in evidence or [] for item in group or [] if len(item) > 2 and item[2])
    return list(dict.fromkeys(str(title) for title in titles))


def _example(record: dict[str, Any], claim: str, dev_index: int | None, titles: list[str]) -> Example:
    metadata = {
        "label": record["label"],
        "verifiable": record.get("verifiable"),
        "evidence_titles": titles,
        "dev_index": dev_index,
    }
    return Example(str(record["id"]), claim, record["label"], metadata)


@functools.lru_cache(maxsize=8)
def _cached_pool(path: str, size: int, mtime_ns: int) -> Pool:
    del size, mtime_ns  # cache key only: a changed file is read again
    file = Path(path)
    if "claim" in peek_record(file):
        records = read_records(file, _COLUMNS, check_paper_dev, "fever-paper-dev")
        examples = [_example(r, r["claim"], row, _evidence_titles(r["evidence"])) for row, r in enumerate(records)]
    else:
        records = read_records(file, _COLUMNS, check_evidence, "fever-evidence")
        examples = [_example(r, r["question"], None, _evidence_titles(r["evidence"])) for r in records]
    return Pool.of(str(file), examples)


def local_pool(path: Path) -> Pool:
    stat = path.stat()
    return _cached_pool(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


def fold_claims(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The hub's one-row-per-evidence-sentence layout folded into one record per claim id, in
    first-seen order, in ``paper_dev.jsonl``'s layout: evidence sets grouped by evidence id, each
    item ``[annotation id, evidence id, page, line]`` (``[.., .., None, None]`` for NOT ENOUGH INFO)."""
    claims: dict[str, dict[str, Any]] = {}
    sets: dict[str, dict[Any, list[list[Any]]]] = {}
    for row in rows:
        key = str(row["id"])
        if key not in claims:
            label = row["label"]
            verifiable = "NOT VERIFIABLE" if label == "NOT ENOUGH INFO" else "VERIFIABLE"
            claims[key] = {"id": row["id"], "verifiable": verifiable, "label": label, "claim": row["claim"]}
        url, line = row.get("evidence_wiki_url") or None, row.get("evidence_sentence_id")
        item = [row.get("evidence_annotation_id"), row.get("evidence_id"), url, line if url else None]
        sets.setdefault(key, {}).setdefault(row.get("evidence_id"), []).append(item)
    return [claim | {"evidence": list(sets.get(key, {}).values())} for key, claim in claims.items()]


def pool_from_hub_rows(rows: list[dict[str, Any]], source: str) -> Pool:
    """One example per claim id from the hub's one-row-per-evidence layout, first-seen order."""
    claims = fold_claims(rows)
    return Pool.of(source, [_example(r, r["claim"], i, _evidence_titles(r["evidence"])) for i, r in enumerate(claims)])


def hub_pool() -> Pool:
    dataset = data.load_hub(HUB)  # looked up at call time: tests stand in for the hub here
    label = dataset.features.get("label")
    rows = dataset.to_list()
    if hasattr(label, "int2str"):  # a ClassLabel column: names, not numbers, are the gold
        for row in rows:
            row["label"] = label.int2str(row["label"])
    return pool_from_hub_rows(rows, str(HUB))


def write_built(datasets: list[Any], folder: Path) -> dict[str, int]:
    """The hub's paper_dev claims as ``paper_dev.jsonl``, and the wiki pages their evidence names
    (picked out of the hub's wiki_pages by id, in Arrow) as ``wiki_pages_evidence.jsonl``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    claims_rows, pages = datasets
    claims = fold_claims(tqdm(claims_rows, desc="fever: claims", unit=" rows", leave=False))
    with open(folder / BUILT_CLAIMS, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(claim, ensure_ascii=False) + "\n" for claim in claims)
    titles = sorted({title for claim in claims for title in _evidence_titles(claim["evidence"])})
    wanted = pc.is_in(pages.data.column("id"), value_set=pa.array(titles, pa.string()))
    kept = pages.select(pc.indices_nonzero(wanted).to_pylist())
    with open(folder / BUILT_PAGES, "w", encoding="utf-8") as out:
        for page in tqdm(kept, desc="fever: pages", unit=" pages", leave=False):
            out.write(json.dumps({k: page.get(k) for k in ("id", "text", "lines")}, ensure_ascii=False) + "\n")
    return {"claims": len(claims), "pages": len(kept), "pages_named": len(titles)}


RECIPE = Recipe(
    task="fever",
    specs=(HUB, HUB_PAGES),
    size_hint="fever/fever's parquet export: paper_dev's 9,999 claims and about 5.4 million wiki pages",
    write=write_built,
    files={"offline": BUILT_CLAIMS, "paper500": BUILT_CLAIMS, "all": BUILT_CLAIMS, "wiki": BUILT_PAGES},
)


def exemplar_ids(path: Path | None = None) -> frozenset[str]:
    """Ids of the claims used as few-shot exemplars (empty when the file does not exist)."""
    path = FEVER_EXEMPLAR_IDS_FILE if path is None else path
    if not path.is_file():
        return frozenset()
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = data.get("ids") if isinstance(data, dict) else data
    if not isinstance(ids, list):
        raise DataError(f'{path}: expected a JSON list of ids or {{"ids": [...]}}')
    return frozenset(str(i) for i in ids)


def score_claim(prediction: str, gold: str) -> dict[str, float]:
    """Label accuracy, and whether the prediction names any label at all (out-of-set answers are counted)."""
    return {"accuracy": fever_correct(prediction, gold), "in_label_set": float(map_fever_label(prediction) is not None)}


class FeverTask(WikiTask):
    info = TaskInfo(
        name="fever",
        title="FEVER",
        metrics=("accuracy",),
        primary_metric="accuracy",
        column="FEVER acc",
        paper={"PaLM-540B": PALM_FEVER, "GPT-3": {"react": 54.0}},
        paper_table=PAPER_TABLE1,
        groups=("label",),
        # FEVER.ipynb sends webthink_simple3 as it is: its exemplars open with their own instruction
        paper_prompts=PaperPrompts(
            "react/fever.json",
            {"react": "webthink_simple3", "act": "webact_simple3", "cot": "cotqa_simple3", "standard": "webqa_simple3"},
        ),
    )
    label = "Claim"
    prompt_file = "fever"

    def pool(self, config: TaskConfig) -> Pool:
        return resolve_pool(
            config, task=self.info.name, files=FILES, local_pool=local_pool, hub_pool=hub_pool, recipe=RECIPE
        )

    def select(self, config: TaskConfig) -> tuple[list[Example], Coverage]:
        examples, coverage = select(self.pool(config), config, exclude=exemplar_ids())
        self.coverage = coverage
        return examples, coverage

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        return self.select(config)[0]

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return score_claim(prediction, gold)

    def local_wiki(self, config: TaskConfig, cache_dir: Path | None = None) -> Path:
        from react_bench.envs.wiki.build import ensure_wiki

        return ensure_wiki(self.info.name, locate(config, "wiki", {"wiki": WIKI_SOURCE}, RECIPE), "fever", cache_dir)


TASKS = (FeverTask,)  # the registry's (``react_bench.tasks.TASKS``)
