"""A local stand-in of the MediaWiki action API, enough for the ``wikipedia`` package.

It answers, over real HTTP on 127.0.0.1, the requests that ``wikipedia.page``, its
``content`` property, disambiguation handling and ``wikipedia.search`` make
(``/w/api.php?action=query`` with ``prop=info|pageprops``, ``prop=extracts|revisions``,
``prop=revisions&rvparse`` and ``list=search``), with MediaWiki's title normalisation
(first letter upper-cased, underscores as spaces) and redirects. For ``wiki.fidelity=paper``
it also serves web pages: ``/w/index.php?search=`` with Wikipedia's "Go" (an exact or
case-variant title or a redirect answers 302 to ``/wiki/<Title>``), saved search-result
pages by query, and a no-hit page otherwise. Faults are queued for the
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
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from react_bench.testing.serve import ThreadedApp


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
        html_articles: Mapping[str, str] | None = None,
        html_search: Mapping[str, str] | None = None,
    ):
        self.pages = dict(pages or {})
        # The web pages (wiki.fidelity=paper reads HTML, as the original code did): articles by
        # title, served at /wiki/<title>; search result pages by query; anything else that
        # /w/index.php?search= does not match is the no-hit page.
        self.html_articles = dict(html_articles or {})
        self.html_search = dict(html_search or {})
        self.disambiguations = {k: list(v) for k, v in (disambiguations or {}).items()}
        self.redirects = dict(redirects or {})
        self._ids = {t: i + 1 for i, t in enumerate(sorted({*self.pages, *self.disambiguations}))}
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._serving = ThreadedApp("MediaWiki stand-in")
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

    # --- web pages (index.php search with the "Go" feature, /wiki/<title>) -------------------

    async def _index(self, request: Request) -> Response:
        query = request.query_params.get("search", "")
        with self._lock:
            self.requests.append(RecordedRequest({"search": query}, request.headers.get("user-agent", "")))
        title = self._go(query)
        if title is not None:  # Wikipedia's "Go": an exact or case-variant title, or a redirect
            return RedirectResponse(f"/wiki/{quote(title.replace(' ', '_'))}", status_code=302)
        if query in self.html_search:
            return HTMLResponse(self.html_search[query])
        return HTMLResponse(NO_HIT_PAGE.format(query=html.escape(query)))

    async def _article(self, request: Request) -> Response:
        title = unquote(request.path_params["title"]).replace("_", " ")
        if title not in self.html_articles:
            return HTMLResponse("<p>Wikipedia does not have an article with this exact name.</p>", status_code=404)
        return HTMLResponse(self.html_articles[title])

    def _go(self, query: str) -> str | None:
        wanted = mediawiki_title(query)
        wanted = self.redirects.get(wanted, wanted)
        for title in self.html_articles:
            if title == wanted or title.lower() == wanted.lower():
                return title
        return None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> MediaWikiStandIn:
        routes = [
            Route("/w/api.php", self._handle),
            Route("/w/index.php", self._index),
            Route("/wiki/{title:path}", self._article),
        ]
        self.port = self._serving.start(Starlette(routes=routes))
        return self

    def stop(self) -> None:
        self._serving.stop()

    def __enter__(self) -> MediaWikiStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


NO_HIT_PAGE = """<!DOCTYPE html><html><head><title>Search results - Wikipedia</title></head><body>
<div id="content"><h1>Search results</h1>
<p class="mw-search-nonefound">There were no results matching the query.</p>
<p class="mw-search-createlink">The page "{query}" does not exist. You can ask for it to be created.</p>
</div><div id="footer"><ul><li>Main page</li><li>Contents</li></ul></div></body></html>"""


def _error(code: str, info: str) -> dict[str, Any]:
    return {"error": {"code": code, "info": info}}
