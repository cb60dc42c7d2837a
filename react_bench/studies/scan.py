"""One pass over a run's ``examples.jsonl`` for everything a study needs of it, in memory that does
not grow with the records' size.

``scan(run_dir)`` reads the file line by line once and keeps only compact figures (``RunScan``):
the run's metrics (``results.Summary``, the code metrics.json comes from), each example's first
attempt right or wrong and where its line starts (the paired tests, the per-question diff fetch
just the lines they show), the input tokens at each step (sums), and, for a run with CoT-SC samples,
what accuracy at k needs. Given ``report_dir``, the same pass writes the report's side files
(``report_files/<run>/``): pages of ``PAGE`` examples, an index (id, question, gold, prediction,
right or wrong, failure label) and the trajectories as HTML (``studies.trajectory``), each a
small script the page loads when asked (a browser reads no local file but a script from a
``file://`` page).

A study scans each run once (``scan_runs``; the scans are kept for the process, keyed by the file's
size and time), several runs in parallel processes when the study is large, and every table, test,
plot and the report read the scans. Decisions:
- a run's figures are its records' (a killed run shows what it finished); its metrics.json is used
  where it covers the same records (it may say more: the budget that stopped it);
- parallel only above ``PARALLEL_BYTES`` of records (a process start costs about a second).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.methods.registry import find_method
from react_bench.record import ExampleRecord, RunHeader, RunMetrics
from react_bench.results import Summary, failure_label
from react_bench.tasks import task_info

PAGE = 500  # examples per page of the report's side files
PARALLEL_BYTES = 64 * 2**20  # records beyond which runs are scanned in parallel processes
SIDE = "report_files"  # the report's side folder, beside report.html


@dataclass
class RunScan:
    """What a study keeps of one run after reading its records once."""

    run_dir: Path
    metrics: RunMetrics | None  # None: no finished example
    first: dict[str, bool] = field(default_factory=dict)  # id -> its first attempt right
    offsets: dict[str, int] = field(default_factory=dict)  # id -> where its first attempt's line starts
    tokens: dict[int, list[float]] = field(default_factory=dict)  # step -> [uncached, written, read, turns]
    # a mode with CoT-SC samples: (samples, gold, route, prediction) of every record (accuracy at k)
    samples: list[tuple[tuple[str, ...], str, str, str]] = field(default_factory=list)
    right: int = 0
    records: int = 0
    pages: int = 0  # report pages written (0: none)
    side: str | None = None  # the report folder the pages were written for


_SCANS: dict[tuple[str, str | None], tuple[tuple[int, int], RunScan]] = {}


def _stamp(run_dir: Path) -> tuple[int, int]:
    path = run_dir / "examples.jsonl"
    try:
        st = path.stat()
    except FileNotFoundError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def run_key(run_dir: str | Path) -> str:
    """The name of a run's folder of report pages: from its path, so the same whatever the study's order."""
    import hashlib

    return "r" + hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:12]


def _side(run_dir: Path, report_dir: Path | None) -> str | None:
    return None if report_dir is None else str(Path(report_dir).resolve() / SIDE / run_key(run_dir))


def scan(run_dir: str | Path, report_dir: Path | None = None) -> RunScan:
    """The run's scan (kept for the process while its records do not change); with ``report_dir``,
    one whose report pages were written under ``report_dir/report_files/<run_key>``."""
    run_dir = Path(run_dir).resolve()
    side = _side(run_dir, report_dir)
    stamp = _stamp(run_dir)
    kept = _SCANS.get((str(run_dir), side))  # (a scan made with pages is kept under None too)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    result = _scan(run_dir, side)
    _SCANS[(str(run_dir), side)] = (stamp, result)
    if side is not None:  # the same figures serve a reader that asks without a report
        _SCANS[(str(run_dir), None)] = (stamp, result)
    return result


def scan_runs(run_dirs: Sequence[str | Path], report_dir: Path | None = None) -> dict[Path, RunScan]:
    """Every run's scan (``report_dir``: with its report pages); runs of a large study in parallel
    processes, one a run."""
    dirs = [Path(d).resolve() for d in run_dirs]
    total = sum(max(0, _stamp(d)[0]) for d in dirs)
    workers = min(len(dirs), os.cpu_count() or 1)
    if workers > 1 and total > PARALLEL_BYTES:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        todo = [d for d in dirs if not _cached(d, report_dir)]
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            sides = [_side(d, report_dir) for d in todo]
            for d, side, result in zip(todo, sides, pool.map(_scan, todo, sides), strict=True):
                _SCANS[(str(d), side)] = (_stamp(d), result)
                _SCANS[(str(d), None)] = (_stamp(d), result)
    return {d: scan(d, report_dir) for d in dirs}


def _cached(run_dir: Path, report_dir: Path | None) -> bool:
    kept = _SCANS.get((str(run_dir), _side(run_dir, report_dir)))
    return kept is not None and kept[0] == _stamp(run_dir)


def _scan(run_dir: Path, side: str | None) -> RunScan:
    # a folder of records with no run.json (a notebook's, a test's) has no metrics, and every
    # record's samples are kept
    run = RunHeader.read(run_dir) if (run_dir / "run.json").is_file() else None
    summary = Summary(run_dir, task_info(run.task)) if run is not None else None
    out = RunScan(run_dir, None, side=side)
    pages = _Pages(Path(side), run.mode if run is not None else None) if side is not None else None
    method = find_method(run.mode) if run is not None else None
    sampled = run is None or bool(method is not None and method.of_parts and method.spec.samples)
    path = run_dir / "examples.jsonl"
    if path.is_file():
        with path.open("rb") as f:
            offset = 0
            for line in f:
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                record = ExampleRecord.from_dict(json.loads(line))
                executed = record.executed()
                label = summary.add(record, executed) if summary is not None else failure_label(record, executed)
                out.records += 1
                out.right += record.correct
                if record.epoch == 1 and record.id not in out.first:
                    out.first[record.id] = record.correct
                    out.offsets[record.id] = start
                _add_tokens(out.tokens, record)
                if sampled:
                    out.samples.append((tuple(record.samples), record.gold, record.route, record.prediction))
                if pages is not None:
                    pages.add(record, label)
    if pages is not None:
        out.pages = pages.close()
    out.metrics = summary.metrics() if summary is not None and out.records else None
    return out


def _add_tokens(sums: dict[int, list[float]], record: ExampleRecord) -> None:
    """The input tokens of every finished step (``step_finished`` events), summed per step."""
    for episode in record.trajectory:
        for event in episode.events:
            if event.get("type") == "step_finished":
                usage = event.get("usage") or {}
                totals = sums.setdefault(int(event.get("step") or 0), [0.0, 0.0, 0.0, 0.0])
                totals[0] += int(usage.get("input_tokens") or 0)
                totals[1] += int(usage.get("cache_creation_input_tokens") or 0)
                totals[2] += int(usage.get("cache_read_input_tokens") or 0)
                totals[3] += 1


class _Pages:
    """The report's side files of one run: ``i<k>.js`` (the index of page k) and ``t<k>.js`` (its
    trajectories as HTML), written as the records stream past, a page at a time."""

    def __init__(self, folder: Path, mode: str | None = None) -> None:
        import shutil

        self.mode = mode  # the run's method: what it shows of a record beside the episodes
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.folder, self.key = folder, folder.name
        self.rows: list[list[Any]] = []
        self.trajectories: list[str] = []
        self.page = 0

    def add(self, record: ExampleRecord, label: str) -> None:
        from react_bench.studies.trajectory import trajectory_html

        self.rows.append(
            [record.id, record.question, record.gold, record.prediction, record.correct, label, record.epoch]
        )
        self.trajectories.append(trajectory_html(record, label, self.mode))
        if len(self.rows) == PAGE:
            self._flush()

    def _flush(self) -> None:
        if not self.rows:
            return
        key = json.dumps(self.key)
        (self.folder / f"i{self.page}.js").write_text(
            f"RB.index({key},{self.page},{json.dumps(self.rows)});\n", encoding="utf-8"
        )
        (self.folder / f"t{self.page}.js").write_text(
            f"RB.traj({key},{self.page},{json.dumps(self.trajectories)});\n", encoding="utf-8"
        )
        self.rows, self.trajectories = [], []
        self.page += 1

    def close(self) -> int:
        self._flush()
        return self.page
