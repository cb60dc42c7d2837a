"""``react-bench traces <run dir>``: a finished or received run's examples as the traces a live run sends.

The spans are made by the code ``trace.endpoint`` runs (``spans.example_spans``) from what the run
folder holds: ``run.json``'s header, each ``examples.jsonl`` record with its ``timeline`` (the
times as recorded: a trace sent a month later shows when its example ran), ``calls.jsonl`` for
the responses (``--content``) and ``batches.json`` for batch ids. Then they go to a collector
(``--endpoint``, else the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``) or into a JSON-lines file
(``--out``). A record written before timelines were kept gives its agent span alone, said once.

A received run folder is read as data: a line that is not JSON is skipped and counted, nothing is
written but ``--out``, and no span carries anything the folder did not hold.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.record import ExampleRecord, RunHeader
from react_bench.tracing.spans import RunInfo, Span, count_spans, example_spans


def _lines(path: Path, skipped: list[int]) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError:
                skipped[0] += 1
                continue
            if isinstance(value, dict):
                yield value
            else:
                skipped[0] += 1


def run_spans(run_dir: Path, *, content: bool = False) -> tuple[list[Span], dict[str, int]]:
    """The run's spans, example by example in its record's order; and what was read (examples,
    those without a timeline, lines skipped)."""
    from react_bench.tracing.live import read_batch_ids

    if not (run_dir / "run.json").is_file():
        raise ConfigError(f"{run_dir}: not a run folder (no run.json)")
    try:
        info = RunInfo.of(RunHeader.read(run_dir))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{run_dir / 'run.json'}: unreadable ({type(exc).__name__})") from None
    skipped = [0]
    cassettes: dict[tuple[str, int], Mapping[str, Any]] = {}
    if content:
        for line in _lines(run_dir / "calls.jsonl", skipped):
            cassettes[(str(line.get("id")), int(line.get("epoch") or 1))] = line
    batches = read_batch_ids(run_dir)
    spans: list[Span] = []
    examples = untimed = 0
    for line in _lines(run_dir / "examples.jsonl", skipped):
        try:
            record = ExampleRecord.from_dict(line)
            made = example_spans(info, record, cassettes.get((record.id, record.epoch)), batches, content=content)
        except (KeyError, TypeError, ValueError, AttributeError):  # a line no run of ours wrote
            skipped[0] += 1
            continue
        examples += 1
        untimed += record.timeline is None
        spans += made
    return spans, {"examples": examples, "untimed": untimed, "skipped": skipped[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="react-bench traces", description=(__doc__ or "").split("\n\n")[0].split(": ", 1)[-1]
    )
    parser.add_argument("run_dir", type=Path, help="a run folder (results/<task>/<model>/<mode>-<runner>/<run id>)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--endpoint", help="an OTLP/HTTP collector (Phoenix: http://localhost:6006)")
    where.add_argument("--out", type=Path, help="the spans as JSON lines, in this file")
    parser.add_argument("--content", action="store_true", help="the messages, actions and observations too")
    args = parser.parse_args(argv)
    from react_bench.tracing.export import SpanQueue, traces_url, write_jsonl

    url = None if args.out else traces_url(args.endpoint)
    if args.out is None and url is None:
        parser.error("give --endpoint URL or --out FILE (or set OTEL_EXPORTER_OTLP_ENDPOINT)")
    try:
        spans, read = run_spans(args.run_dir, content=args.content)
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(count_spans(spans).items()))
        print(f"{args.run_dir}: {read['examples']} example(s), {len(spans)} span(s) ({counts or 'none'})")
        if read["untimed"]:
            print(f"note: {read['untimed']} record(s) from before timelines were kept: their agent span alone")
        if read["skipped"]:
            print(f"note: {read['skipped']} line(s) that are not records were skipped")
        if args.out is not None:
            print(f"{write_jsonl(spans, args.out)} span(s) written to {args.out}")
            return 0
        assert url is not None
        queue = SpanQueue(url)
        queue.put(spans)
        sent = queue.close()
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    print(sent.line())
    return 0 if not sent.dropped else 1
