"""WebShop as an environment: an HTTP client of a WebShop server, acting as the paper's notebook did.

One ``WebShopEnv`` per episode (a session, ``fixed_i``); the server (WebShop itself at
``webshop.url``, or the project's own, ``envs/webshop/server.py``) holds the products and
scores the purchase. The episode's state is the notebook's ``webshopEnv`` state: the page type
(``init``, ``search``, ``item``, ``item_sub``, ``end``), the query, the page number, the ASIN,
the options chosen, the sub-page, and what the last page offered (its ASINs, its options).

Actions (the notebook's): ``search[query]`` from the instruction page; ``click[button]``: a
result's ASIN on a results page, an option value on an item page (``You have clicked {value}.``),
``Description`` / ``Features`` / ``Reviews`` / ``Attributes`` on an item page, ``< Prev``
(item page -> results, options cleared; sub-page -> item), ``Back to Search`` (-> the instruction
page), ``Buy Now`` (the episode ends; the reward is read from the done page); ``think[...]`` is
answered ``OK.``. A search text is cut to ``MAX_QUERY`` characters (the page says so), and one that
starts with ``[`` but is no list literal is sent as words: a model's text never ends an episode as an
error (WebShop's server reads keywords that start with ``[`` as a list literal). Anything else, or
an action the page does not offer, is ``Invalid action!`` (an ``is_error`` observation). As in the
notebook, ``Next >`` and ``< Prev`` on a results page are invalid (it allowed only the first page of
results). A click the instruction page or a sub-page
does not offer (not one of the buttons the notebook knew: ``Buy Now``, ``Back to Search``,
``Next >``, ``< Prev``, the sub-pages) shows that page again with ``notebook_clicks`` (the
notebook's, ``protocol=paper``: its loop asked the server for the same page), and is
``Invalid action!`` without (``protocol=custom``, the project's own choice).

A server that cannot be reached, answers with an error status, or sends a page it cannot have
meant (an empty body, binary bytes, HTML that is not the page asked for: an instruction page
without its ``Search`` button, a results page without ``Back to Search``, an item page without
``Buy Now``, a sub-page without ``< Prev``, a done page without a score) ends the example with
reason ``error`` (``EpisodeAbort``; re-run it with ``retry_errors=true``): a fault of the server,
never scored as the model's failure. HTTP calls run in a worker thread.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import httpx2

from react_bench.environment import (
    UNPARSED,
    Action,
    EpisodeAbort,
    Example,
    Observation,
    run_blocking,
    string_action,
)
from react_bench.envs.webshop.render import Page, render
from react_bench.models.base import ToolSpec

INVALID = "Invalid action!"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
WEBSHOP_ACTIONS: tuple[ToolSpec, ...] = (
    string_action("search", "Search the shop (only from the instruction page).", "query", "The search words."),
    string_action(
        "click",
        "Click a button the page shows in [brackets]: a result's ASIN, an option value, Description, Features, "
        "Reviews, < Prev, Back to Search, or Buy Now (which ends the task).",
        "button",
        "The button's text, exactly as shown between the brackets.",
    ),
)


def webshop_action(text: str, actions: Sequence[ToolSpec] = WEBSHOP_ACTIONS) -> Action:
    """The notebook's grammar, exactly: ``think...`` (any text starting so: answered ``OK.``),
    ``search[...]`` and ``click[...]`` read by their prefix, the argument being the text between
    the bracket and the last character (which the notebook took to be ``]`` without checking)."""
    if text.startswith("think"):
        return Action("think", {"thought": text[len("think[") : -1]}, text)
    for name, param in (("search", "query"), ("click", "button")):
        if text.startswith(f"{name}["):
            return Action(name, {param: text[len(name) + 1 : -1]}, text)
    return Action(UNPARSED, {}, text)


@dataclass
class Session:
    page_type: str = "init"
    query: str = ""
    page_num: int = 1
    asin: str = ""
    options: dict[str, str] = field(default_factory=dict)
    subpage: str = ""
    asins: list[str] = field(default_factory=list)
    option_groups: dict[str, str] = field(default_factory=dict)  # value -> group, of the last item page


# A model's search text is the model's, never the server's fault: a query longer than this is cut
# to it (the page says so), so that no search ends an episode as an error (a URL too long for
# the HTTP client, a list literal past the server's bound); a few words is what a search is.
MAX_QUERY = 1000
CUT_NOTE = f"(The search text was cut to its first {MAX_QUERY:,} characters.)"


def _list_literal(text: str) -> bool:
    """Whether ``text`` reads as the list literal WebShop's server takes for keywords (``['a', 'b']``)."""
    try:
        return isinstance(ast.literal_eval(text), list | tuple)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def sendable_query(query: str) -> tuple[str, bool]:
    """A model's search text as it can be sent, and whether it was cut: at most ``MAX_QUERY``
    characters, and words where it starts with ``[`` but is no list literal."""
    cut = len(query) > MAX_QUERY
    query = query[:MAX_QUERY]
    if query.startswith("[") and not _list_literal(query):
        query = " " + query  # words, not a list literal the server would fail to read
    return query, cut


KNOWN_BUTTONS = frozenset({"Buy Now", "Back to Search", "Next >", "< Prev", *SUB_PAGES})  # the notebook's own


class WebShopEnv:
    def __init__(self, url: str, client: httpx2.Client, notebook_clicks: bool = False):
        self.url = url.rstrip("/")
        self.client = client
        self.notebook_clicks = notebook_clicks
        self.session_id = ""
        self.state = Session()
        self._lock = asyncio.Lock()

    def actions(self) -> tuple[ToolSpec, ...]:
        return WEBSHOP_ACTIONS

    async def reset(self, example: Example) -> Observation:
        self.session_id, self.state = example.id, Session()
        page = await self._show()
        return Observation(page.text)

    def close(self) -> None:
        pass  # the HTTP client is the factory's, shared by every episode and closed once per run

    async def step(self, action: Action) -> Observation:
        async with self._lock:  # one page at a time, in the order the calls came
            if self.state.page_type == "end":
                return Observation(INVALID, is_error=True)
            if action.name == "think":
                return Observation("OK.")
            value = next(iter(action.arguments.values()), None) if action.arguments else None
            if action.name not in ("search", "click") or not isinstance(value, str):
                return Observation(INVALID, is_error=True)
            return await (self._search(value) if action.name == "search" else self._click(value))

    async def _search(self, query: str) -> Observation:
        if self.state.page_type != "init":
            return Observation(INVALID, is_error=True)
        query, cut = sendable_query(query)
        self.state = Session(page_type="search", query=query)
        page = await self._observe()
        return replace(page, text=f"{page.text}\n{CUT_NOTE}") if cut else page

    async def _click(self, button: str) -> Observation:
        s = self.state
        match (s.page_type, button):
            case ("item", "Buy Now"):
                s.page_type = "end"
                page = await self._show()
                return Observation(page.text, done=True, reward=page.reward)
            case ("search" | "item" | "item_sub", "Back to Search"):
                self.state = Session()
            case ("item_sub", "< Prev"):
                s.page_type = "item"
            case ("item", "< Prev"):
                s.page_type, s.options = "search", {}
            case ("item", sub) if sub in SUB_PAGES:
                s.page_type, s.subpage = "item_sub", sub
            case ("search", asin) if asin in s.asins:
                s.page_type, s.asin, s.options = "item", asin, {}
            case ("item", value) if value in s.option_groups:
                s.options[s.option_groups[value]] = value
                await self._show()
                return Observation(f"You have clicked {value}.")
            case ("init" | "item_sub", other) if self.notebook_clicks and other not in KNOWN_BUTTONS:
                pass  # the notebook: the same page, asked for again
            case _:
                return Observation(INVALID, is_error=True)
        return await self._observe()

    async def _observe(self) -> Observation:
        page = await self._show()
        return Observation(page.text)

    def _path(self) -> str:
        s, q = self.state, (lambda text: quote(text, safe=""))
        session, options = q(self.session_id), repr(s.options)
        match s.page_type:
            case "init":
                return f"/{session}"
            case "search":
                return f"/search_results/{session}/{q(s.query)}/{s.page_num}"
            case "item":
                return f"/item_page/{session}/{q(s.asin)}/{q(s.query)}/{s.page_num}/{q(options)}"
            case "item_sub":
                return f"/item_sub_page/{session}/{q(s.asin)}/{q(s.query)}/{s.page_num}/{q(s.subpage)}/{q(options)}"
            case _:
                return f"/done/{session}/{q(s.asin)}/{q(options)}"

    async def _show(self) -> Page:
        """Fetch and render the current page; record what it offers. A page that is not the one
        asked for is the server's fault: ``EpisodeAbort``."""
        path = self._path()
        html = await run_blocking(self.get_page, path)
        kind = self.state.page_type
        try:
            page = render(html, self.url + _unquoted(path), first_page=kind == "init")
        except (ValueError, TypeError, AttributeError) as exc:
            raise EpisodeAbort(f"the WebShop server sent a page that cannot be read for {path}: {exc}") from exc
        if not _is_page(page, kind):
            shown = " ".join(html.split())[:80]
            raise EpisodeAbort(f"the WebShop server sent no {kind} page for {path} ({len(html)} characters: {shown!r})")
        if page.asins:
            self.state.asins = page.asins
        if page.options:
            self.state.option_groups = page.options
        return page

    def sendable_query(self, query: str) -> str:
        """``environment.ShopPages``: a search text as this environment sends it."""
        return sendable_query(query)[0]

    def page_view(self, html: str, url: str, first_page: bool, results_shown: int) -> Page:
        """``environment.ShopPages``: a page's HTML as this environment's renderer reads it."""
        return render(html, url, first_page=first_page, results_shown=results_shown)

    def get_page(self, path: str) -> str:
        """The HTML of ``path`` (blocking); a server's fault is ``EpisodeAbort``."""
        try:
            with self.client.stream("GET", self.url + path) as response:
                if response.status_code != 200:
                    raise EpisodeAbort(f"the WebShop server answered {response.status_code} for {path}")
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_PAGE_BYTES:  # read no further: parsing it would cost gigabytes
                        raise EpisodeAbort(f"the WebShop page {path} is larger than {MAX_PAGE_BYTES:,} bytes")
                encoding = response.encoding or "utf-8"
        except httpx2.HTTPError as exc:
            raise EpisodeAbort(
                f"the WebShop server at {self.url} cannot be reached: {type(exc).__name__}: {exc}"
            ) from exc
        return bytes(body).decode(encoding, errors="replace")


MAX_PAGE_BYTES = 5_000_000  # WebShop's own pages are tens of kilobytes (docs/security.md)


# What every page of a kind shows, on WebShop's own templates and the project's server alike.
_MARKS = {"init": "Search", "search": "Back to Search", "item": "Buy Now", "item_sub": "< Prev"}


def _is_page(page: Page, kind: str) -> bool:
    if kind == "end":  # a score the page's own label bounds (NaN fails too)
        return page.reward is not None and 0.0 <= page.reward <= 1.0
    return _MARKS[kind] in page.buttons


def _unquoted(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)


@dataclass
class WebShopFactory:
    """One ``WebShopEnv`` per episode, sharing one HTTP client (and the in-process server, if any)."""

    url: str
    timeout_s: float = 30.0
    server: Any = None  # the project's own server, started for this run (stopped by close)
    notebook_clicks: bool = False  # protocol=paper: an unoffered click shows the page again

    def __post_init__(self) -> None:
        self.client = httpx2.Client(timeout=self.timeout_s)

    def __call__(self) -> WebShopEnv:
        return WebShopEnv(self.url, self.client, self.notebook_clicks)

    def pages(self) -> WebShopEnv:
        """``environment.ShopFactory``: the shop's pages, for a method that reads them its own way."""
        return self()

    def close(self) -> None:
        self.client.close()
        if self.server is not None:
            self.server.stop()
            self.server = None
