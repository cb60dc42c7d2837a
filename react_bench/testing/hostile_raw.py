"""A file host that misbehaves, for tests and benchmarks of the project's bounded downloads
(``react_bench.download``): whatever path is asked, it answers in one of three ways.

- ``huge``: 200 with ``Content-Length: 10000000000``, then zeros for as long as the client reads;
- ``huge-unannounced``: the same stream with no length said (chunked), so only the byte cap stops it;
- ``drip``: 200, then one byte every ``interval_s`` (a second by default), never finishing;
- ``html``: 200 with a sign-in page (``text/html``), as a proxy or a captive portal answers.

It counts the bytes it has handed to the connection (``sent``); a client reads at most that.
Run as a process for whole-command checks::

    python -m react_bench.testing.hostile_raw huge --port 8767
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from react_bench.testing.serve import ThreadedApp

KINDS = ("huge", "huge-unannounced", "drip", "html")
ANNOUNCED = 10_000_000_000
SIGN_IN = (
    b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form action='/login' method='post'>"
    b"<input name='user'><input name='password' type='password'></form></body></html>\n"
)
BLOCK = 64 * 1024


class HostileHost:
    """Serves ``kind`` (module docstring) at every path, on 127.0.0.1."""

    def __init__(self, kind: str, interval_s: float = 1.0) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: one of {KINDS}")
        self.kind, self.interval_s = kind, interval_s
        self.sent = 0
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._serving = ThreadedApp(f"hostile host ({kind})")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._serving.port}"

    def start(self, port: int = 0) -> HostileHost:
        self._serving.start(Starlette(routes=[Route("/{rest:path}", self._handle)]), port)
        return self

    def stop(self) -> None:
        self._serving.stop()

    def __enter__(self) -> HostileHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _count(self, size: int) -> None:
        with self._lock:
            self.sent += size

    async def _handle(self, request: Request) -> Response:
        with self._lock:
            self.requests.append(request.url.path)
        if self.kind == "html":
            self._count(len(SIGN_IN))
            return Response(SIGN_IN, media_type="text/html; charset=utf-8")
        if self.kind == "drip":
            return StreamingResponse(self._drip(request), media_type="text/plain; charset=utf-8")
        headers = {"Content-Length": str(ANNOUNCED)} if self.kind == "huge" else {}
        return StreamingResponse(self._zeros(request), media_type="text/plain; charset=utf-8", headers=headers)

    async def _zeros(self, request: Request) -> AsyncIterator[bytes]:
        block = b"0" * BLOCK
        for _ in range(ANNOUNCED // BLOCK):
            if await _gone(request):
                return
            self._count(len(block))
            yield block

    async def _drip(self, request: Request) -> AsyncIterator[bytes]:
        while not await _gone(request):
            self._count(1)
            yield b"#"
            await asyncio.sleep(self.interval_s)


async def _gone(request: Request) -> bool:
    """Whether the client has hung up (the stream then stops: what a real host does)."""
    try:
        async with asyncio.timeout(0.001):
            return await request.is_disconnected()
    except TimeoutError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--interval", type=float, default=1.0, help="drip: seconds between bytes")
    args = parser.parse_args()
    host = HostileHost(args.kind, args.interval).start(args.port)
    print(f"PORT {host.base_url.rsplit(':', 1)[1]}", flush=True)
    host._serving.wait()


if __name__ == "__main__":
    main()
