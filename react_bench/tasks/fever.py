"""FEVER: claims and their labels, in the paper's sample or the offline subset; label accuracy.

Decisions a next engineer needs:

- Files (under the data folder): ``offline`` (the default) is
  ``fever/paper_test_with_evidence.jsonl``, whose evidence pages are in the offline wiki;
  ``paper500`` and ``all`` draw from ``fever/paper_dev.jsonl`` (9,999 claims; the paper's 500
  are the same row indices as HotpotQA's). From the hub, ``fever/fever`` ``v1.0``
  ``paper_dev`` has one row per evidence sentence: rows are folded into one claim per ``id``
  in order of first appearance. (That hub dataset is built by a loading script, which recent
  ``datasets`` releases refuse to run; the failure is reported as unavailable data, not hidden.)
- Two local formats, told apart by the first record: paper_dev (``claim``) and the evidence
  JSONL (``question`` holds the claim, ``pars`` the gold sentences). Only paper_dev rows have a
  ``dev_index`` (their row), so ``paper500`` drawn from the evidence file finds none of them.
- Example ids are FEVER's claim ids as text.
- Few-shot exemplars are FEVER claims too, written by the prompts module: their ids are left
  out of every split. They are read, at selection time, from ``FEVER_EXEMPLAR_IDS_FILE``
  (``react_bench/prompts/fever_exemplar_ids.json``: a JSON list of ids, or ``{"ids": [...]}``)
  when that file exists, plus ``TaskConfig.exclude_ids``. Asking for one by ``ids`` is an error.
- Score: ``accuracy`` (the prediction names the gold label after normalisation) and
  ``in_label_set`` (it names any label at all), so out-of-set answers can be counted.
- Metadata: ``label``, ``verifiable`` (paper_dev only), ``evidence_titles``, ``dev_index``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from react_bench.metrics import FEVER_LABELS, fever_correct, map_fever_label
from react_bench.tasks import data
from react_bench.tasks.base import Coverage, DataError, Example, Pool, TaskConfig, TaskInfo, select
from react_bench.tasks.data import HubSpec, peek_record, read_records, resolve_data_dir, resolve_pool
from react_bench.tasks.wikitask import PALM_FEVER, PAPER_TABLE1, WikiTask

FILES = {
    "offline": "fever/paper_test_with_evidence.jsonl",
    "paper500": "fever/paper_dev.jsonl",
    "all": "fever/paper_dev.jsonl",
}
HUB = HubSpec("fever/fever", "v1.0", "paper_dev")
WIKI_SOURCE = "fever/wiki_pages_evidence_subset.jsonl"  # the gold evidence lines, in wiki-pages layout
FEVER_EXEMPLAR_IDS_FILE = Path(__file__).resolve().parents[1] / "prompts" / "fever_exemplar_ids.json"
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


def pool_from_hub_rows(rows: list[dict[str, Any]], source: str) -> Pool:
    """One example per claim id from the hub's one-row-per-evidence layout, first-seen order."""
    claims: dict[str, dict[str, Any]] = {}
    titles: dict[str, list[str]] = {}
    for row in rows:
        key = str(row["id"])
        claims.setdefault(key, row)
        url = row.get("evidence_wiki_url")
        if url and url not in titles.setdefault(key, []):
            titles[key].append(url)
    examples = [_example(r, r["claim"], i, titles.get(k, [])) for i, (k, r) in enumerate(claims.items())]
    return Pool.of(source, examples)


def hub_pool() -> Pool:
    dataset = data.load_hub(HUB)  # looked up at call time: tests stand in for the hub here
    label = dataset.features.get("label")
    rows = dataset.to_list()
    if hasattr(label, "int2str"):  # a ClassLabel column: names, not numbers, are the gold
        for row in rows:
            row["label"] = label.int2str(row["label"])
    return pool_from_hub_rows(rows, str(HUB))


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
    )
    label = "Claim"
    prompt_file = "fever"

    def pool(self, config: TaskConfig) -> Pool:
        return resolve_pool(config, task=self.info.name, files=FILES, local_pool=local_pool, hub_pool=hub_pool)

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

        return ensure_wiki(self.info.name, resolve_data_dir(config.data_dir) / WIKI_SOURCE, "fever", cache_dir)
