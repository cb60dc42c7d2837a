"""``trace.endpoint``: a run's examples sent as traces while it goes (``evaluate`` holds one ``LiveTrace``).

Each example's spans are made from its record as it is written (``spans.example_spans``: the code
``react-bench traces`` runs afterwards) and queued for a background sender (``export.SpanQueue``),
so a collector that is down or slow never holds the run up. At the end the run says what became
of them, and keeps it in ``trace.json`` beside its record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from react_bench import rundir
from react_bench.record import ExampleRecord, RunHeader
from react_bench.tracing.export import Sent, SpanQueue
from react_bench.tracing.spans import RunInfo, batch_ids, example_spans

TRACE_JSON = "trace.json"


def read_batch_ids(run_dir: Path) -> dict[str, str]:
    """Response id -> batch id, from the run's ``batches.json`` (none: no batches)."""
    path = run_dir / "batches.json"
    if not path.is_file():
        return {}
    try:
        return batch_ids(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return {}


class LiveTrace:
    def __init__(self, url: str, run_dir: Path, content: bool) -> None:
        self.run_dir, self.content = run_dir, content
        self.info = RunInfo.of(RunHeader.read(run_dir))
        self.queue = SpanQueue(url)

    def example(self, record: ExampleRecord, cassette: Mapping[str, Any]) -> None:
        calls = (record.timeline or {}).get("calls") or ()
        batched = any(isinstance(c, Mapping) and c.get("source") == "batch" for c in calls)
        batches = read_batch_ids(self.run_dir) if batched else {}
        try:
            spans = example_spans(self.info, record, cassette, batches, content=self.content)
        except Exception as exc:  # a fault of ours in the spans costs the trace, never the run: said at its end
            self.queue.sent.untraced += 1
            self.queue.sent.reason = self.queue.sent.reason or f"spans not made: {type(exc).__name__}"
            return
        self.queue.put(spans)

    def close(self) -> Sent:
        sent = self.queue.close()
        rundir.write_json(self.run_dir / TRACE_JSON, sent.to_dict())
        return sent
