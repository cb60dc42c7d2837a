"""A stand-in OTLP/HTTP trace collector: what ``trace.endpoint`` sends to, in the tests.

It speaks OTLP/HTTP as the specification (opentelemetry.io/docs/specs/otlp) says a collector does:
``POST /v1/traces`` with an ``ExportTraceServiceRequest`` as binary protobuf
(``application/x-protobuf``) or OTLP/JSON (``application/json``), gzip or not; the answer is 200
with an ``ExportTraceServiceResponse`` in the request's encoding; another path is 404, another
method 405, another content type 415, a body that does not decode 400 with a ``google.rpc.Status``.
``delay_s`` makes it a slow collector (each request answered that much later); ``status`` makes it
refuse every request with that code (503: a retryable refusal, as an overloaded collector's).

What it took is kept as plain span dicts (``spans``): hex ids, names, kinds, Unix-nanosecond
times, attributes as Python values, the resource's and the scope's names.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import threading
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from react_bench.testing.serve import ThreadedApp

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return None if kind is None else getattr(value, kind)


def spans_of(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    out = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(
                    {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_id": span.parent_span_id.hex() or None,
                        "name": span.name,
                        "kind": KINDS.get(span.kind, str(span.kind)),
                        "start_ns": span.start_time_unix_nano,
                        "end_ns": span.end_time_unix_nano,
                        "attributes": {kv.key: _value(kv.value) for kv in span.attributes},
                        "status": {"code": span.status.code, "message": span.status.message},
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    }
                )
    return out


class OtlpReceiver:
    """``start()`` serves on 127.0.0.1 and returns the base URL (``url``); ``spans``: what it took."""

    def __init__(self, delay_s: float = 0.0, status: int | None = None) -> None:
        self.delay_s, self.status = delay_s, status
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._app = ThreadedApp("OTLP receiver")
        self.url = ""

    def start(self, port: int = 0) -> str:
        app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])
        self.url = f"http://127.0.0.1:{self._app.start(app, port)}"
        return self.url

    def stop(self) -> None:
        self._app.stop()

    async def _traces(self, request: Request) -> Response:
        with self._lock:
            self.requests += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.status is not None:
            return Response(b"", status_code=self.status)
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if kind not in (PROTOBUF, JSON):
            return Response(b"", status_code=415)
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        message = ExportTraceServiceRequest()
        try:
            if kind == PROTOBUF:
                message.ParseFromString(body)
            else:
                json_format.Parse(body.decode("utf-8"), message)
        except Exception as exc:  # OTLP: 400 with a google.rpc.Status
            return Response(f'{{"code": 3, "message": "{type(exc).__name__}"}}', status_code=400, media_type=JSON)
        spans = spans_of(message)
        with self._lock:
            self.spans.extend(spans)
        answer = ExportTraceServiceResponse()
        if kind == PROTOBUF:
            return Response(answer.SerializeToString(), media_type=PROTOBUF)
        return Response(json_format.MessageToJson(answer), media_type=JSON)


def main() -> None:  # pragma: no cover - a manual stand-in
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4318)
    args = parser.parse_args()
    receiver = OtlpReceiver()
    print(f"OTLP receiver at {receiver.start(args.port)}/v1/traces", flush=True)
    receiver._app.wait()


if __name__ == "__main__":  # pragma: no cover
    main()
