"""A WebShop-compatible server over the generated catalog (``envs/webshop/catalog.py``).

It speaks WebShop's own HTTP interface (github:princeton-nlp/WebShop, ``web_agent_site/app.py``),
so the same client and page renderer work against either: GET or POST on

    /{session}                                                        the instruction page
    /search_results/{session}/{keywords}/{page}                       10 results a page, of the top 50
    /item_page/{session}/{asin}/{keywords}/{page}/{options}           options as a Python dict literal
    /item_sub_page/{session}/{asin}/{keywords}/{page}/{sub}/{options} Description | Features | Reviews | Attributes
    /done/{session}/{asin}/{options}                                  the purchase, scored

Pages are written in this project with the element structure WebShop's templates use where it
matters to a renderer (buttons are ``<button>``, options ``<label>``, result ASINs links of class
``product-link``, the instruction in a block of its own, the score in
``Your score (min 0.0, max 1.0)<pre>{reward}</pre>``). ``keywords`` is the query as written, or a
list literal (``['a', 'b']``), as WebShop's ``convert_web_app_string_to_var`` reads it. Search is
BM25 over each product's title, type, category and attributes. Sessions ``fixed_i`` are goal
``i``; an unknown ASIN, a page that is no whole number or a malformed ``options`` is a 404 / 400
page; a page number of 0 or less is read as WebShop reads it (``int``: its results are the same
slice of the list WebShop's would be).

``WebShopServer(catalog)`` runs in a background thread on a free port of 127.0.0.1 (a context
manager; ``url``); ``scripts/webshop_server.py`` serves one on its own.
"""

from __future__ import annotations

import ast
import html
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from react_bench.envs.webshop.catalog import PRODUCT_WINDOW, Catalog, Goal, Product, Search
from react_bench.envs.webshop.env import SUB_PAGES
from react_bench.envs.webshop.reward import reward


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _page(body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html>\n<head><title>WebShop</title><style>body { font-family: sans-serif; }</style></head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def _instruction(goal: Goal) -> str:
    return f'<div id="instruction-text"><h4>Instruction:<br>{_e(goal.instruction)}</h4></div>'


def _form(action: str, label: str) -> str:
    return f'<form method="post" action="{_e(action)}"><button type="submit">{_e(label)}</button></form>'


def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


@dataclass
class Shop:
    catalog: Catalog

    def __post_init__(self) -> None:
        self.engine = Search(self.catalog.products)

    def start_page(self, session: str, goal: Goal) -> str:
        return _page(
            '<div id="logo"><h2>WebShop</h2></div>\n'
            f'<div id="instruction-text"><h4>Instruction: <br>{_e(goal.instruction)}</h4></div>\n'
            f'<form method="post" action="/{_q(session)}"><input type="text" name="search_query">'
            '<button type="submit">Search</button></form>'
        )

    def results_page(self, session: str, goal: Goal, keywords: str, page: int) -> str:
        found = self.engine.search(_query(keywords))
        shown = found[(page - 1) * PRODUCT_WINDOW : page * PRODUCT_WINDOW]
        base = f"/search_results/{_q(session)}/{_q(keywords)}"
        navigation = (_form(f"{base}/{page - 1}", "< Prev") if page > 1 else "") + _form(f"{base}/{page + 1}", "Next >")
        items = "\n".join(
            f'<div class="item"><h4><a class="product-link" href="/item_page/{_q(session)}/{p.asin}/{_q(keywords)}/'
            f'{page}/{_q("{}")}">{p.asin}</a></h4><h4 class="product-title">{_e(p.title)}</h4>'
            f'<h5 class="product-price">{p.price_text}</h5></div>'
            for p in shown
        )
        return _page(
            f"{_instruction(goal)}\n{_form(f'/{_q(session)}', 'Back to Search')}\n"
            f"<h3>Page {page} (Total results: {len(found)})</h3>\n{navigation}\n{items}"
        )

    def item_page(self, session: str, goal: Goal, product: Product, keywords: str, page: int, options: dict) -> str:
        at = f"{_q(session)}/{product.asin}/{_q(keywords)}/{page}"
        groups = []
        for name, values in product.options.items():
            radios = "".join(
                f'<input type="radio" id="{_e(name)}{i}" name="{_e(name)}" value="{_e(v)}"'
                f'{" checked" if options.get(name) == v else ""}><label for="{_e(name)}{i}">{_e(v)}</label>'
                for i, v in enumerate(values)
            )
            groups.append(f'<div class="option"><h4>{_e(name)}</h4><div class="radio-toolbar">{radios}</div></div>')
        chosen = _q(repr(options))
        tabs = "".join(_form(f"/item_sub_page/{at}/{sub}/{chosen}", sub) for sub in SUB_PAGES[:3])
        return _page(
            f"{_instruction(goal)}\n{_form(f'/{_q(session)}', 'Back to Search')}\n"
            f"{_form(f'/search_results/{_q(session)}/{_q(keywords)}/{page}', '< Prev')}\n"
            + "\n".join(groups)
            + f"\n<h2>{_e(product.title)}</h2>\n<h4>Price: {product.price_text}</h4>\n"
            f"<h4>Rating: {_e(product.rating)}</h4>\n{tabs}\n"
            + _form(f"/done/{_q(session)}/{product.asin}/{chosen}", "Buy Now")
        )

    def sub_page(
        self, session: str, goal: Goal, product: Product, keywords: str, page: int, sub: str, options: dict
    ) -> str:
        if sub == "Description":
            content = f'<p class="product-info">{_e(product.description)}</p>'
        elif sub == "Features":
            content = (
                "<ul>" + "".join(f'<li><p class="product-info">{_e(f)}</p></li>' for f in product.features) + "</ul>"
            )
        elif sub == "Reviews":
            content = "".join(
                f'<div class="review"><h4>"{_e(r["title"])}"</h4><p><span>{r["score"]}</span></p>'
                f'<p class="content">{_e(r["body"])}</p></div>'
                for r in product.reviews
            )
        else:
            content = "<ul>" + "".join(f"<li>{_e(a)}</li>" for a in product.attributes) + "</ul>"
        back = f"/item_page/{_q(session)}/{product.asin}/{_q(keywords)}/{page}/{_q(repr(options))}"
        return _page(
            f"{_instruction(goal)}\n{_form(f'/{_q(session)}', 'Back to Search')}\n{_form(back, '< Prev')}\n"
            f'<div class="card">{content}</div>'
        )

    def done_page(self, goal: Goal, product: Product, options: dict) -> str:
        scored = reward(product, goal, options)
        return _page(
            '<div id="thankyou"><h1>Thank you for shopping with us!</h1></div>\n'
            f'<div id="stats"><h3 id="reward">Your score (min 0.0, max 1.0)<pre>{scored.total}</pre></h3>'
            f'<div style="display:none"><pre id="asin">{product.asin}</pre><pre id="options">{_e(repr(options))}</pre>'
            f'<pre id="goal-asin">{goal.asin}</pre></div></div>'
        )

    def respond(self, path: str) -> tuple[int, str]:
        """(status, html) for a request path (percent-encoded segments)."""
        parts = [unquote(p) for p in path.split("?")[0].strip("/").split("/")]
        route, args = (parts[0], parts[1:]) if len(parts) > 1 else ("index", parts)
        if not args or not args[0]:
            return 404, _page("<h1>Not found</h1><p>no session</p>")
        goal = self.catalog.goal(args[0])
        if goal is None:
            return 404, _page(f"<h1>Not found</h1><p>no goal for session {_e(args[0])}</p>")
        try:
            if route == "index" and len(args) == 1:
                return 200, self.start_page(args[0], goal)
            if route == "search_results" and len(args) == 3:
                return 200, self.results_page(args[0], goal, args[1], _page_number(args[2]))
            if route == "item_page" and len(args) == 5:
                return 200, self.item_page(
                    args[0], goal, self._product(args[1]), args[2], _page_number(args[3]), _options(args[4])
                )
            if route == "item_sub_page" and len(args) == 6 and args[4] in SUB_PAGES:
                return 200, self.sub_page(
                    args[0], goal, self._product(args[1]), args[2], _page_number(args[3]), args[4], _options(args[5])
                )
            if route == "done" and len(args) == 3:
                return 200, self.done_page(goal, self._product(args[1]), _options(args[2]))
        except LookupError as exc:
            return 404, _page(f"<h1>Not found</h1><p>{_e(exc)}</p>")
        except ValueError as exc:
            return 400, _page(f"<h1>Bad request</h1><p>{_e(exc)}</p>")
        return 404, _page(f"<h1>Not found</h1><p>{_e(path)}</p>")

    def _product(self, asin: str) -> Product:
        product = self.catalog.by_asin.get(asin)
        if product is None:
            raise LookupError(f"no product {asin}")
        return product


MAX_LITERAL = 4096  # characters of a list or dict literal in a URL (a query's words, an item's options)
MAX_BODY = 1 << 20  # bytes of a POST body the server reads (a search form is a few dozen)


def _literal(text: str, what: str) -> Any:
    """A Python literal from a URL (WebShop's own URLs carry them), read safely: bounded in size
    first (``ast.literal_eval`` of ``'-' * 20000 + '1'`` exhausts the parser's memory or stack),
    and every way it can fail is a bad request, never a dropped connection."""
    if len(text) > MAX_LITERAL:
        raise ValueError(f"{what} is {len(text)} characters long (at most {MAX_LITERAL})")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(f"{what} {text[:200]!r} is not a {what.split()[-1]} literal") from None


def _query(keywords: str) -> str:
    if keywords.startswith("["):
        words = _literal(keywords, "keywords list")
        if not isinstance(words, (list, tuple)):
            raise ValueError(f"keywords {keywords[:200]!r} is not a list literal")
        return " ".join(map(str, words))
    return keywords


def _page_number(text: str) -> int:
    """WebShop's ``int(page)``: 0 and below are pages too (its results slice ``[(page - 1) * 10 :
    page * 10]`` then, which LATS's code reaches with ``< Prev`` on the first page)."""
    try:
        if len(text) > 32:
            raise ValueError
        return int(text)
    except ValueError:
        raise ValueError(f"page {text[:40]!r} is not a page number") from None


def _options(text: str) -> dict[str, str]:
    options = _literal(text, "options dict")
    if not isinstance(options, dict):
        raise ValueError(f"options {text[:200]!r} is not a dict literal")
    return {str(k): str(v) for k, v in options.items()}


class _Handler(BaseHTTPRequestHandler):
    """Every request gets a status line within a bounded time: a malformed one a 4xx (the
    stdlib's for the request line and headers, ours for the body's length), a fault of the
    shop's a 500; a client silent for ``timeout`` seconds is disconnected."""

    shop: Shop
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per client
    timeout = 30  # seconds a connection may wait on the client (socket timeout)

    def setup(self) -> None:
        super().setup()
        # without it, the headers and the body go out as two small writes and the second waits
        # for a delayed ACK (about 40 ms a page)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        try:
            status, body = self.shop.respond(self.path)
        except Exception as exc:  # a fault of ours: answered, said, and the server goes on
            status, body = 500, _page(f"<h1>Server error</h1><p>{_e(type(exc).__name__)}</p>")
        data = body if isinstance(body, bytes) else body.encode("utf-8")  # bytes: a test's hostile page
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        given = (self.headers.get("Content-Length") or "0").strip()
        if not given.isdigit():
            self.close_connection = True
            self.send_error(400, "Content-Length is not a number of bytes")
            return
        length = int(given)
        if length > MAX_BODY:
            self.close_connection = True
            self.send_error(413, f"a body of at most {MAX_BODY} bytes")
            return
        try:
            got = len(self.rfile.read(length)) if length else 0  # a search form: WebShop redirects it
        except OSError:  # the socket's timeout: the client stopped sending
            got = -1
        if got != length:
            self.close_connection = True
            self.send_error(408 if got == -1 else 400, "the body ended before its Content-Length")
            return
        self.do_GET()

    def log_message(self, format: str, *args: Any) -> None:  # quiet: a run's console is the user's
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


class WebShopServer:
    """The shop on 127.0.0.1 in a background thread (``port=0``: a free one)."""

    def __init__(self, catalog: Catalog, port: int = 0, host: str = "127.0.0.1"):
        handler = type("Handler", (_Handler,), {"shop": Shop(catalog)})
        self.httpd = _Server((host, port), handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="webshop", daemon=True)

    def start(self) -> WebShopServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> WebShopServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
