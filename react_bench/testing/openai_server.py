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
    """``with OpenAIServer(responder) as server:`` ... ``server.base_url`` (ends in ``/v1``)."""

    responder: Responder
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __enter__(self) -> OpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
                self._send(Raw(body, content_type="application/json"))

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append((self.path, body))
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
