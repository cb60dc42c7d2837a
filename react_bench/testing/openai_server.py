"""A local HTTP server that speaks the OpenAI API as OpenAI-compatible servers do, for tests.

Real HTTP on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a background thread), so the real
``openai`` SDK talks to it through ``base_url``: ``POST /v1/completions`` (the text runner's raw
prompts) and ``POST /v1/chat/completions`` (messages, tools as functions) answer as SSE streams,
``GET /v1/models`` lists one model. What it sends is whatever a responder returns for the request
body, down to the bytes:

- ``Chunks``: a 200 stream of these objects, each a ``data:`` line, then ``data: [DONE]``;
  a string is sent as it is (a line that is not JSON), ``bytes`` too (not UTF-8);
- ``Raw``: a body as it is, with a status and a content type (an empty 200, an HTML page, a plain
  JSON completion where a stream was asked, a 500);
- ``KeepAlive``: SSE comments every ``every_s`` for ``for_s`` seconds, and nothing else.

``oracle_chunks`` is a model that answers right: it walks ``testing.walker.Walk`` (a search,
then the gold answer) from the request body alone, in the chunk shapes llama.cpp's and vLLM's
servers send (the role first, the text or the tool call in pieces, the finish reason, then the
usage chunk of ``stream_options.include_usage``). ``testing.openai_hostile`` turns its chunks
into the hostile shapes real servers send.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from react_bench.models.base import ModelRequest
from react_bench.testing.walker import Walk, WalkingModel, after_label
from react_bench.types import TextBlock

CHAT_STEP = "Begin your reply with `"


@dataclass(frozen=True)
class Chunks:
    chunks: tuple[Any, ...]
    done: bool = True  # end with ``data: [DONE]``


@dataclass(frozen=True)
class Raw:
    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class KeepAlive:
    for_s: float = 5.0
    every_s: float = 0.05


Spec = Chunks | Raw | KeepAlive
Responder = Callable[[str, dict[str, Any]], Spec]  # (path, body) -> what to send


def sse_body(spec: Chunks) -> bytes:
    out = bytearray()
    for chunk in spec.chunks:
        if isinstance(chunk, bytes):
            out += b"data: " + chunk + b"\n\n"
        elif isinstance(chunk, str):
            out += f"data: {chunk}\n\n".encode()
        else:
            out += f"data: {json.dumps(chunk)}\n\n".encode()
    if spec.done:
        out += b"data: [DONE]\n\n"
    return bytes(out)


@dataclass
class OpenAIServer:
    """``with OpenAIServer(responder) as server:`` ... ``server.base_url`` (ends in ``/v1``).

    The Batch API as OpenAI documents it, where ``batches`` is on (vLLM's and llama.cpp's servers
    have none: 404): ``POST /v1/files`` (multipart, ``purpose=batch``: a JSONL file of requests),
    ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``), ``GET
    /v1/batches`` and ``/v1/batches/<id>`` (``validating``, ``in_progress``, then ``completed``
    after ``batch_polls`` retrievals, with its ``output_file_id`` and ``error_file_id``) and ``GET
    /v1/files/<id>/content``. Each request of a batch is answered by the responder, its stream
    assembled into the whole completion a non-streamed request gets; a request for another
    endpoint than the batch's, or a line that is not a request, goes to the error file."""

    responder: Responder
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    batches: bool = True
    batch_polls: int = 2
    files: dict[str, bytes] = field(default_factory=dict)
    batch_state: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __enter__(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                path = self.path.split("?")[0]
                server.requests.append((path, {}))
                if path.startswith(("/v1/batches", "/v1/files")):
                    return self._send(server._batch_get(path))
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self._send(Raw(body, content_type="application/json"))

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path == "/v1/files":
                    server.requests.append((self.path, {}))
                    return self._send(server._upload(self.headers.get("content-type", ""), raw))
                body = json.loads(raw or b"{}")
                server.requests.append((self.path, body))
                if self.path == "/v1/batches":
                    return self._send(server._create_batch(body))
                self._send(server.responder(self.path, body))

            def _send(self, spec: Spec) -> None:
                if isinstance(spec, KeepAlive):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    self.end_headers()
                    until = time.monotonic() + spec.for_s
                    try:
                        while time.monotonic() < until:
                            self.wfile.write(b": keep-alive\n\n")
                            self.wfile.flush()
                            time.sleep(spec.every_s)
                    except OSError:
                        pass  # the client gave up: as it should
                    self.close_connection = True
                    return
                raw = spec if isinstance(spec, Raw) else Raw(sse_body(spec))
                self.send_response(raw.status)
                self.send_header("content-type", raw.content_type)
                self.send_header("content-length", str(len(raw.body)))
                for name, value in raw.headers:
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(raw.body)
                except OSError:
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # --- the Batch API ------------------------------------------------------------------------

    def batch_custom_ids(self) -> list[str]:
        """Every request's custom id, in every batch created (a request sent twice shows twice)."""
        return [cid for state in self.batch_state.values() for cid in state["custom_ids"]]

    def _upload(self, content_type: str, raw: bytes) -> Spec:
        if not self.batches:
            return _not_found("/v1/files")
        from email.parser import BytesParser
        from email.policy import default

        message = BytesParser(policy=default).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
        fields = {
            part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()
        }
        if fields.get("purpose") != b"batch" or not fields.get("file"):
            return _error(400, "a file and purpose=batch are required")
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = bytes(fields["file"])
        info = {"id": file_id, "object": "file", "bytes": len(self.files[file_id]), "created_at": 1}
        return _json({**info, "filename": "batch.jsonl", "purpose": "batch"})

    def _create_batch(self, body: dict[str, Any]) -> Spec:
        if not self.batches:
            return _not_found("/v1/batches")
        data = self.files.get(str(body.get("input_file_id")))
        endpoint = body.get("endpoint")
        if data is None:
            return _error(400, f"no such file: {body.get('input_file_id')}")
        if endpoint not in ("/v1/chat/completions", "/v1/completions") or body.get("completion_window") != "24h":
            return _error(400, "endpoint must be /v1/chat/completions or /v1/completions; completion_window 24h")
        number = len(self.batch_state) + 1
        outputs, errors, ids = [], [], []
        for line in data.decode().splitlines():
            request = json.loads(line)
            custom_id = request.get("custom_id")
            ids.append(custom_id)
            if request.get("url") != endpoint or not isinstance(request.get("body"), dict):
                error = {"code": "invalid_request", "message": "the request's url is not the batch's endpoint"}
                errors.append(
                    {"id": f"req-{number}-{len(ids)}", "custom_id": custom_id, "response": None, "error": error}
                )
                continue
            spec = self.responder(endpoint, request["body"])
            whole = assembled(spec, endpoint, f"{number}-{len(ids)}")
            response = {"status_code": 200, "request_id": f"req-{number}-{len(ids)}", "body": whole}
            if whole is None:
                response = {"status_code": 500, "request_id": f"req-{number}-{len(ids)}", "body": {"error": {}}}
            outputs.append(
                {"id": f"batch_req_{number}_{len(ids)}", "custom_id": custom_id, "response": response, "error": None}
            )
        batch_id = f"batch_{number:04d}"
        output_id, error_id = f"file-out-{number:04d}", f"file-err-{number:04d}"
        self.files[output_id] = "".join(json.dumps(o) + "\n" for o in outputs).encode()
        self.files[error_id] = "".join(json.dumps(e) + "\n" for e in errors).encode()
        self.batch_state[batch_id] = {
            "polls": 0,
            "custom_ids": ids,
            "view": {
                "id": batch_id,
                "object": "batch",
                "endpoint": endpoint,
                "input_file_id": body["input_file_id"],
                "completion_window": "24h",
                "created_at": 1,
                "output_file_id": output_id,
                "error_file_id": error_id if errors else None,
                "request_counts": {"total": len(ids), "completed": len(outputs), "failed": len(errors)},
            },
        }
        return _json(self._batch_view(batch_id, count=False))

    def _batch_view(self, batch_id: str, count: bool = True) -> dict[str, Any]:
        state = self.batch_state[batch_id]
        if count:
            state["polls"] += 1
        done = state["polls"] >= self.batch_polls
        view = dict(state["view"])
        if not done:
            view |= {"output_file_id": None, "error_file_id": None}
            view["request_counts"] = {"total": view["request_counts"]["total"], "completed": 0, "failed": 0}
        status = "completed" if done else ("validating" if state["polls"] == 0 else "in_progress")
        return {**view, "status": status, "errors": None}

    def _batch_get(self, path: str) -> Spec:
        if not self.batches:
            return _not_found(path)
        parts = path.strip("/").split("/")  # v1 batches [id] | v1 files <id> content
        if parts == ["v1", "batches"]:
            return _json({"object": "list", "data": [], "has_more": False})
        if len(parts) == 3 and parts[1] == "batches" and parts[2] in self.batch_state:
            return _json(self._batch_view(parts[2]))
        if len(parts) == 4 and parts[1] == "files" and parts[3] == "content" and parts[2] in self.files:
            return Raw(self.files[parts[2]], content_type="application/octet-stream")
        return _not_found(path)


def _json(payload: Mapping[str, Any], status: int = 200) -> Raw:
    return Raw(json.dumps(payload).encode(), status=status, content_type="application/json")


def _error(status: int, message: str) -> Raw:
    return _json({"error": {"message": message, "type": "invalid_request_error", "code": None}}, status)


def _not_found(path: str) -> Raw:
    return _json({"error": {"message": f"Not found: {path}", "type": "invalid_request_error"}}, 404)


def assembled(spec: Spec, endpoint: str, number: str) -> dict[str, Any] | None:
    """The whole completion that a streamed answer (``Chunks`` of dicts) adds up to: what the
    same request gets unstreamed. None where the answer is not a well-formed stream."""
    if not isinstance(spec, Chunks) or not all(isinstance(c, dict) for c in spec.chunks):
        return None
    chat = endpoint.endswith("/chat/completions")
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish, usage, model = None, None, "m"
    for chunk in spec.chunks:
        model = chunk.get("model", model)
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0):
                continue
            finish = choice.get("finish_reason") or finish
            if not chat:
                text.append(choice.get("text") or "")
                continue
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or []:
                whole = calls.setdefault(
                    call["index"], {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                whole["id"] = whole["id"] or call.get("id")
                function = call.get("function") or {}
                whole["function"]["name"] = whole["function"]["name"] or function.get("name") or ""
                whole["function"]["arguments"] += function.get("arguments") or ""
    head = {"id": f"cmpl-batch-{number}", "created": 1, "model": model, "usage": usage}
    if not chat:
        return {
            **head,
            "object": "text_completion",
            "choices": [{"index": 0, "text": "".join(text), "finish_reason": finish}],
        }
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {**head, "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def model_config(base_url: str, **settings: Any) -> dict[str, Any]:
    """A run's model config (``RunConfig.model``) for the server at ``base_url``: no key, fast retries."""
    return {
        "provider": "openai",
        "name": "m",
        "base_url": base_url,
        "key_env": None,
        "max_retries": 2,
        "retry_backoff_s": 0.001,
        **settings,
    }


# ------------------------------------------------------------------------- the oracle


def _head(chat: bool) -> dict[str, Any]:
    kind = "chat.completion.chunk" if chat else "text_completion"
    return {"id": "cmpl-oracle", "object": kind, "created": 1, "model": "m"}


def _pieces(text: str, size: int = 9) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage_chunk(chat: bool) -> dict[str, Any]:
    usage = {"prompt_tokens": 1000, "completion_tokens": 30, "total_tokens": 1030}
    return {**_head(chat), "choices": [], "usage": usage}


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, Mapping))


def question_of(messages: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """The question a chat asks and the index of its message (after any exemplar turns)."""
    found, at = "", 0
    for i, message in enumerate(messages):
        asked = after_label(_message_text(message)) if message.get("role") == "user" else None
        if asked is not None:
            found, at = asked, i
    return found, at


def oracle_chunks(walk: Walk, path: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The walk's next turn as a well-formed stream (without ``[DONE]``)."""
    chat = path.endswith("/chat/completions")
    if not chat:
        request = ModelRequest(prompt=str(body["prompt"]), stop=tuple(body.get("stop") or ()))
        block = WalkingModel(walk).respond(request).content[0]
        text = block.text if isinstance(block, TextBlock) else ""
        pieces = [{**_head(False), "choices": [{"index": 0, "text": p, "finish_reason": None}]} for p in _pieces(text)]
        end = {**_head(False), "choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}
        return [*pieces, end, _usage_chunk(False)]
    messages = body["messages"]
    question, at = question_of(messages)
    step = sum(1 for m in messages[at:] if m.get("role") == "assistant") + 1
    role = {**_head(True), "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}
    if body.get("tools"):
        name, argument = walk.action(question, step)
        key = {"search": "entity", "lookup": "keyword", "finish": "answer"}[name]
        arguments = json.dumps({key: argument})
        first = {"index": 0, "id": f"call_{step}", "type": "function", "function": {"name": name, "arguments": ""}}
        calls = [first] + [{"index": 0, "function": {"arguments": p}} for p in _pieces(arguments)]
        middle = [{**_head(True), "choices": [{"index": 0, "delta": {"tool_calls": [c]}}]} for c in calls]
        finish = "tool_calls"
    else:
        said = " ".join(_message_text(m) for m in messages)
        marker = said.rsplit(CHAT_STEP, 1)[-1] if CHAT_STEP in said else "Thought 1:"
        number = int("".join(ch for ch in marker.split(":", 1)[0] if ch.isdigit()) or 1)
        text = walk.text(question, number)
        middle = [{**_head(True), "choices": [{"index": 0, "delta": {"content": p}}]} for p in _pieces(text)]
        finish = "stop"
    end = {**_head(True), "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return [role, *middle, end, _usage_chunk(True)]
