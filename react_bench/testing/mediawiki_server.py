"""A local stand-in of the MediaWiki action API, enough for the ``wikipedia`` package.

It answers, over real HTTP on 127.0.0.1, the requests that ``wikipedia.page``, its
``content`` property, disambiguation handling and ``wikipedia.search`` make
(``/w/api.php?action=query`` with ``prop=info|pageprops``, ``prop=extracts|revisions``,
``prop=revisions&rvparse`` and ``list=search``), with MediaWiki's title normalisation
(first letter upper-cased, underscores as spaces) and redirects. Faults are queued for the
next requests: an HTTP status (429 with ``Retry-After``, 503, ...) or a delay (to make the
client time out). Every request's parameters and User-Agent are recorded.

Usage::

    with MediaWikiStandIn(pages={"Alpha Lake": "text"}) as wiki:
        wikipedia.wikipedia.API_URL = wiki.api_url
        wiki.fail_next(status=429)
"""

from __future__ import annotations

import asyncio
import html
import socket
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass(frozen=True)
class Fault:
    status: int | None = None  # answer with this status instead
    retry_after: float | None = None
    delay_s: float = 0.0  # wait this long first


@dataclass(frozen=True)
class RecordedRequest:
    params: dict[str, str]
    user_agent: str


def mediawiki_title(title: str) -> str:
    title = " ".join(title.replace("_", " ").split())
    return title[:1].upper() + title[1:]


class MediaWikiStandIn:
    def __init__(
        self,
        pages: Mapping[str, str] | None = None,
        disambiguations: Mapping[str, Sequence[str]] | None = None,
        redirects: Mapping[str, str] | None = None,
    ):
        self.pages = dict(pages or {})
        self.disambiguations = {k: list(v) for k, v in (disambiguations or {}).items()}
        self.redirects = dict(redirects or {})
        self._ids = {t: i + 1 for i, t in enumerate(sorted({*self.pages, *self.disambiguations}))}
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/w/api.php"

    def fail_next(self, count: int = 1, status: int = 429, retry_after: float | None = 0) -> None:
        with self._lock:
            self._faults.extend([Fault(status=status, retry_after=retry_after)] * count)

    def delay_next(self, seconds: float, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([Fault(delay_s=seconds)] * count)

    # --- HTTP -----------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        params = dict(request.query_params)
        with self._lock:
            self.requests.append(RecordedRequest(params, request.headers.get("user-agent", "")))
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.delay_s:
            await asyncio.sleep(fault.delay_s)
        if fault is not None and fault.status is not None:
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return Response(f"stand-in fault {fault.status}", status_code=fault.status, headers=headers)
        return JSONResponse(self.answer(params))

    def answer(self, params: Mapping[str, str]) -> dict[str, Any]:
        if params.get("action", "query") != "query":
            return _error("badparams", "the stand-in only answers action=query")
        if params.get("list") == "search":
            return self._search(params.get("srsearch", ""), int(params.get("srlimit", "10")))
        prop, titles = params.get("prop", ""), params.get("titles", "")
        if "info" in prop:
            return self._info(titles)
        if "extracts" in prop:
            title = mediawiki_title(titles)
            page = {"pageid": self._ids[title], "ns": 0, "title": title, "extract": self.pages[title]}
            page["revisions"] = [{"revid": 1000 + self._ids[title], "parentid": 999}]
            return {"query": {"pages": {str(self._ids[title]): page}}}
        if prop == "revisions" and "rvparse" in params:
            title = mediawiki_title(titles)
            return {
                "query": {"pages": {str(self._ids[title]): {"revisions": [{"*": self._disambiguation_html(title)}]}}}
            }
        return _error("badparams", f"the stand-in does not answer {dict(params)}")

    def _info(self, title: str) -> dict[str, Any]:
        query: dict[str, Any] = {}
        name = mediawiki_title(title)
        if name != title:
            query["normalized"] = [{"from": title, "to": name}]
        if name in self.redirects:
            query["redirects"] = [{"from": name, "to": self.redirects[name]}]
            name = self.redirects[name]
        if name in self._ids:
            page: dict[str, Any] = {"pageid": self._ids[name], "ns": 0, "title": name}
            page["fullurl"] = f"http://127.0.0.1:{self.port}/wiki/{name.replace(' ', '_')}"
            if name in self.disambiguations:
                page["pageprops"] = {"disambiguation": ""}
            query["pages"] = {str(self._ids[name]): page}
        else:
            query["pages"] = {"-1": {"ns": 0, "title": name, "missing": ""}}
        return {"batchcomplete": "", "query": query}

    def _search(self, text: str, limit: int) -> dict[str, Any]:
        words = set(text.lower().split())
        scored = [(-len(words & set(t.lower().split())), t) for t in self._ids]
        hits = [t for score, t in sorted(scored) if score < 0][:limit]
        return {"query": {"searchinfo": {"totalhits": len(hits)}, "search": [{"ns": 0, "title": t} for t in hits]}}

    def _disambiguation_html(self, title: str) -> str:
        items = "".join(
            f'<li><a href="/wiki/{html.escape(o)}" title="{html.escape(o)}">{html.escape(o)}</a>, a meaning</li>'
            for o in self.disambiguations[title]
        )
        return f"<div><p><b>{html.escape(title)}</b> may refer to:</p><ul>{items}</ul></div>"

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> MediaWikiStandIn:
        app = Starlette(routes=[Route("/w/api.php", self._handle)])
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MediaWiki stand-in did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> MediaWikiStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error(code: str, info: str) -> dict[str, Any]:
    return {"error": {"code": code, "info": info}}
