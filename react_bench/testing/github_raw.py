"""A local stand-in of GitHub's raw file host (``raw.githubusercontent.com``), for ``react_bench.upstream``.

Point ``REACT_BENCH_GITHUB`` at it. It serves ``GET|HEAD /<owner>/<repo>/<ref>/<path>`` as the
raw host does, down to what a client's result depends on:

- 200 with the file's bytes, ``Content-Type: text/plain; charset=utf-8`` (``application/octet-stream``
  for bytes that are not UTF-8), an ``ETag``, ``Cache-Control: max-age=300``, ``Accept-Ranges:
  bytes``, ``X-Content-Type-Options: nosniff`` and a sandboxing ``Content-Security-Policy``;
  the body gzip-encoded where the client accepts it (so a client must check the decoded bytes);
  ``Range`` answered 206 (416 past the end); ``If-None-Match`` with the ETag answered 304.
- A ref is a branch name or a full commit sha, case-sensitive as the paths are; anything else
  (an unknown repository, ref or path) is ``404: Not Found`` in plain text, as the host answers
  it, without telling which part was wrong. Other methods: 405.

Files come from a folder laid out ``<owner>/<repo>/<commit>/<path>`` (``from_tree``), or from a
prepared data folder, each file the manifest (``upstream.json``) names served at its pinned place
(``from_prepared``): this machine's offline copy, served the way GitHub serves the originals.
Every request is recorded (method and path). Run as a process for whole-command checks::

    python -m react_bench.testing.github_raw --port 8766 --tree /path/to/tree --prepared ../shared/data
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import threading
from pathlib import Path
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from react_bench.testing.serve import ThreadedApp
from react_bench.upstream import files as pinned_files

_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
_NOT_FOUND = "404: Not Found"


def from_tree(folder: Path) -> dict[str, bytes]:
    """``/<owner>/<repo>/<commit>/<path>`` -> bytes, for every file under ``folder``."""
    return {"/" + p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def from_prepared(data_dir: Path) -> dict[str, bytes]:
    """The manifest's files that a prepared data folder holds, each at its pinned place."""
    served = {}
    for file in pinned_files().values():
        if file.prepared and (data_dir / file.prepared).is_file():
            served[file.url_path] = (data_dir / file.prepared).read_bytes()
    return served


class RawStandIn:
    """Serves ``files`` (``{"/owner/repo/ref/path": bytes}``); ``branches`` maps ``owner/repo`` to
    ``{branch: commit}`` so a branch name resolves as on the host."""

    def __init__(self, files: dict[str, bytes], branches: dict[str, dict[str, str]] | None = None) -> None:
        self.files = dict(files)
        self.branches = branches or {}
        self.requests: list[tuple[str, str]] = []
        self.sent: list[str] = []  # paths whose bytes were sent (GET answered 200 or 206)
        self._lock = threading.Lock()
        self._serving = ThreadedApp("raw file host stand-in")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._serving.port}"

    def start(self, port: int = 0) -> RawStandIn:
        app = Starlette(routes=[Route("/{rest:path}", self._handle, methods=["GET", "HEAD", "POST", "PUT", "DELETE"])])
        self._serving.start(app, port)
        return self

    def stop(self) -> None:
        self._serving.stop()

    def wait(self) -> None:
        self._serving.wait()

    def _resolve(self, raw_path: str) -> bytes | None:
        parts = raw_path.strip("/").split("/", 3)
        if len(parts) < 4:
            return None
        owner, repo, ref, path = parts
        commit = self.branches.get(f"{owner}/{repo}", {}).get(ref, ref)
        return self.files.get(f"/{owner}/{repo}/{commit}/{path}")

    async def _handle(self, request: Request) -> Response:
        raw = unquote(request.scope.get("raw_path", b"").decode("latin-1").split("?", 1)[0])
        with self._lock:
            self.requests.append((request.method, raw))
        if request.method not in ("GET", "HEAD"):
            return Response("Method Not Allowed", status_code=405, media_type="text/plain")
        data = self._resolve(raw)
        if data is None:
            return Response(_NOT_FOUND, status_code=404, media_type="text/plain; charset=utf-8")
        etag = '"' + hashlib.sha256(data).hexdigest() + '"'
        headers = {
            "ETag": etag,
            "Cache-Control": "max-age=300",
            "Accept-Ranges": "bytes",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": _CSP,
            "Vary": "Authorization,Accept-Encoding,Origin",
        }
        try:
            data.decode("utf-8")
            media = "text/plain; charset=utf-8"
        except UnicodeDecodeError:
            media = "application/octet-stream"
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        status, body = 200, data
        wanted = request.headers.get("range", "")
        if wanted.startswith("bytes="):
            first, _, last = wanted[6:].partition("-")
            start = int(first) if first.isdigit() else max(0, len(data) - int(last or 0))
            end = min(int(last), len(data) - 1) if first.isdigit() and last.isdigit() else len(data) - 1
            if start >= len(data) or start > end:
                return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{len(data)}"})
            status, body = 206, data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        elif "gzip" in request.headers.get("accept-encoding", ""):
            body = gzip.compress(data, mtime=0)
            headers["Content-Encoding"] = "gzip"
        if request.method == "GET":
            with self._lock:
                self.sent.append(raw)
        headers["Content-Length"] = str(len(body))
        return Response(
            b"" if request.method == "HEAD" else body, status_code=status, headers=headers, media_type=media
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--tree", type=Path, action="append", default=[], help="a folder of <owner>/<repo>/<commit>/<path>"
    )
    parser.add_argument("--prepared", type=Path, action="append", default=[], help="a prepared data folder")
    args = parser.parse_args()
    served: dict[str, bytes] = {}
    for folder in args.prepared:
        served |= from_prepared(folder)
    for folder in args.tree:
        served |= from_tree(folder)
    stand_in = RawStandIn(served).start(args.port)
    print(f"PORT {stand_in.base_url.rsplit(':', 1)[1]}", flush=True)
    print(f"serving {len(served)} files at {stand_in.base_url}", flush=True)
    stand_in.wait()


if __name__ == "__main__":
    main()
