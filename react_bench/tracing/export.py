"""Spans sent to an OTLP/HTTP collector without ever holding a run up, or written as JSON lines.

``SpanQueue``: a bounded queue and one background thread that sends batches with
OpenTelemetry's own OTLP/HTTP exporter (the ``trace`` extra: ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``, imported here only, and only once tracing is on).
``put`` never blocks: spans beyond the queue's room are dropped and counted. A batch the
collector did not take (down, refusing, slower than the exporter's timeout) is dropped and
counted; once one has failed, ``close`` does not wait for the rest, so a run against a collector
that is down ends as it would without tracing. ``close`` returns a ``Sent`` the run prints
(``trace: 27 span(s) to http://host:4318/v1/traces: 27 sent``) and keeps in ``metrics.json``.

The endpoint: ``trace.endpoint`` (a collector's base URL, ``/v1/traces`` added, or the traces URL
itself) or the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``.
Headers a collector needs (Langfuse's, a vendor's key) go in the standard
``OTEL_EXPORTER_OTLP_HEADERS``, which the exporter reads itself: never in the run's config or
files. The endpoint is printed and kept without its URL credentials.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.redact import without_userinfo
from react_bench.tracing.spans import SCOPE, Span

QUEUE_SPANS = 20_000  # spans waiting to be sent, at most (a large example's trace is a few hundred)
BATCH_SPANS = 512  # spans a request carries, at most
EXPORT_TIMEOUT_S = 5.0  # the exporter's own deadline for one batch, its retries included
FLUSH_S = 30.0  # how long the end of a run waits for a collector that answers to take the rest
TRACES_PATH = "/v1/traces"


def traces_url(endpoint: str | None) -> str | None:
    """The OTLP/HTTP traces URL: ``endpoint`` (a base URL gets ``/v1/traces``), else the standard
    variables' (``..._TRACES_ENDPOINT`` as it is, ``OTEL_EXPORTER_OTLP_ENDPOINT`` plus the path);
    None: tracing is off."""
    if endpoint:
        url = endpoint.rstrip("/")
        return url if url.endswith(TRACES_PATH) else url + TRACES_PATH
    own = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if own:
        return own
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + TRACES_PATH if base else None


def _sdk() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.trace.export import SpanExportResult
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    except ImportError as exc:
        raise ConfigError(
            f"tracing needs OpenTelemetry's SDK and OTLP exporter ({exc.name} is missing): "
            "pip install 'react-bench[trace]' (make setup installs it)"
        ) from None
    return {
        "OTLPSpanExporter": OTLPSpanExporter,
        "Resource": Resource,
        "ReadableSpan": ReadableSpan,
        "SpanExportResult": SpanExportResult,
        "InstrumentationScope": InstrumentationScope,
        "SpanContext": SpanContext,
        "SpanKind": SpanKind,
        "Status": Status,
        "StatusCode": StatusCode,
        "TraceFlags": TraceFlags,
    }


def to_otel(spans: Iterable[Span], service: str = "react-bench") -> list[Any]:
    """The SDK's ``ReadableSpan``s of ``spans`` (what its exporters take)."""
    sdk = _sdk()
    from importlib.metadata import version

    resource = sdk["Resource"].create({"service.name": service, "openinference.project.name": service})
    scope = sdk["InstrumentationScope"](SCOPE, version("react-bench"))
    flags = sdk["TraceFlags"](sdk["TraceFlags"].SAMPLED)
    kinds = {"internal": sdk["SpanKind"].INTERNAL, "client": sdk["SpanKind"].CLIENT}
    out = []
    for span in spans:
        context = sdk["SpanContext"](span.trace_id, span.span_id, is_remote=False, trace_flags=flags)
        parent = (
            None
            if span.parent_id is None
            else sdk["SpanContext"](span.trace_id, span.parent_id, is_remote=False, trace_flags=flags)
        )
        status = (
            sdk["Status"](sdk["StatusCode"].ERROR, span.error) if span.error else sdk["Status"](sdk["StatusCode"].UNSET)
        )
        out.append(
            sdk["ReadableSpan"](
                span.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=dict(span.attributes),
                kind=kinds[span.kind],
                status=status,
                start_time=span.start_ns,
                end_time=span.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


@dataclass
class Sent:
    """What became of a run's spans."""

    url: str
    made: int = 0
    sent: int = 0
    dropped: int = 0
    reason: str = ""  # why spans were dropped, in a few words
    untraced: int = 0  # examples whose spans could not be made (a fault of ours, said)

    def line(self) -> str:
        said = f"trace: {self.made} span(s) to {self.url}: {self.sent} sent"
        if self.dropped:
            said += f", {self.dropped} dropped"
        if self.untraced:
            said += f", {self.untraced} example(s) not traced"
        if self.dropped or self.untraced:
            said += f" ({self.reason}); the run's record holds them: react-bench traces"
        return said

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.url,
            "spans": self.made,
            "sent": self.sent,
            "dropped": self.dropped,
            "untraced_examples": self.untraced,
        }


@dataclass
class SpanQueue:
    """Spans to a collector from a background thread (see the module docstring)."""

    url: str
    capacity: int = QUEUE_SPANS
    timeout_s: float = EXPORT_TIMEOUT_S
    exporter: Any = None  # the SDK's OTLPSpanExporter (built here unless given)
    sent: Sent = field(init=False)

    def __post_init__(self) -> None:
        self.url = without_userinfo(self.url)
        self.sent = Sent(self.url)
        sdk = _sdk()
        if self.exporter is None:
            # its failures are ours to count and say once; its own log would repeat them on stderr
            quiet = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
            quiet.addHandler(logging.NullHandler())
            quiet.propagate = False
            self.exporter = sdk["OTLPSpanExporter"](endpoint=self.url, timeout=self.timeout_s)
        self._ok = sdk["SpanExportResult"].SUCCESS
        self._queue: queue.Queue[list[Span] | None] = queue.Queue()
        self._waiting = 0
        self._closed = False
        self._lock = threading.Lock()
        self._failed = threading.Event()
        self._thread = threading.Thread(target=self._send, name="react-bench-traces", daemon=True)
        self._thread.start()

    def put(self, spans: Sequence[Span]) -> None:
        """Queue an example's spans; never blocks. Beyond the queue's room they are dropped, counted."""
        with self._lock:
            self.sent.made += len(spans)
            if self._waiting + len(spans) > self.capacity:
                self._drop(len(spans), "the queue was full: the collector is slower than the run")
                return
            self._waiting += len(spans)
        self._queue.put(list(spans))

    def _drop(self, n: int, reason: str) -> None:
        self.sent.dropped += n
        self.sent.reason = self.sent.reason or reason

    def _send(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = item
            while len(batch) < BATCH_SPANS:  # what else is waiting goes along
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.extend(more)
            for i in range(0, len(batch), BATCH_SPANS):
                self._export(batch[i : i + BATCH_SPANS])

    def _export(self, chunk: list[Span]) -> None:
        ok, reason = False, "the collector did not take them"
        try:
            ok = self.exporter.export(to_otel(chunk)) == self._ok
        except Exception as exc:  # the exporter's own fault: counted, never the run's
            reason = f"the exporter failed: {type(exc).__name__}"
        with self._lock:
            if self._closed:  # counted already, as dropped, when the run ended
                return
            self._waiting -= len(chunk)
            if ok:
                self.sent.sent += len(chunk)
            else:
                self._drop(len(chunk), reason)
                self._failed.set()

    def close(self, flush_s: float = FLUSH_S) -> Sent:
        """Stop, having waited up to ``flush_s`` for what is queued, unless the collector has already
        failed (then nothing is waited for); what was not sent is counted dropped."""
        self._queue.put(None)
        deadline = time.monotonic() + flush_s
        while self._thread.is_alive() and not self._failed.is_set() and time.monotonic() < deadline:
            self._thread.join(0.05)
        with self._lock:
            self._closed = True
            if self._waiting:
                self._drop(self._waiting, "the collector did not answer in time")
                self._waiting = 0
        try:
            self.exporter.shutdown()
        except Exception:  # pragma: no cover - a closing exporter's fault is nothing to the run
            pass
        return self.sent


def write_jsonl(spans: Iterable[Span], path: Path) -> int:
    """``spans`` as JSON lines (``Span.to_dict``) in ``path``; how many."""
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for span in spans:
            out.write(json.dumps(span.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n
