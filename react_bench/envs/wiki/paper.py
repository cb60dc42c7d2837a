"""Live Wikipedia observed the way the paper's code observed it (``wiki.fidelity=paper``).

The original environment did not use the API: it fetched Wikipedia's search page and read
its HTML. This backend does the same, step by step, so that the paper's models' view of a
page is reproduced (``live.py`` is the ``clean`` alternative: exact titles through the API,
plain-text extracts):

1. GET ``<index.php>?search=<entity with spaces as "+">`` (the rest of the URL quoted by
   ``requests``, as the original's ``requests.get(url)``). Wikipedia's "Go" feature sends an
   exact or case-variant title straight to the article, following redirects.
2. Parse with BeautifulSoup's ``html.parser``. If the page has search-result headings
   (``div.mw-search-result-heading``), nothing matched exactly: the observation is
   ``Could not find <entity>. Similar: [first 5 headings]`` where each heading is its whole
   text, so notes such as ``(redirect from ...)`` and ``(section ...)`` stay in it.
3. Otherwise the page's text blocks are all ``<p>`` texts first, then all ``<ul>`` texts, each
   stripped (document order within each kind; footnote markers such as ``[3]`` kept). If any
   block contains ``may refer to:`` the page is a disambiguation page and the search is run
   again for ``[<entity>]`` (the observation then names ``[<entity>]``).
4. Else the page text is every block of more than two space-separated words, passed through
   the original's ``clean_str`` (re-reading backslash escapes), each ending with a newline.
   This holds for a search page that found nothing at all too: its own text becomes the
   "page", as it did for the paper's models.

``clean_str`` raises on some text (a lone trailing backslash); the original crashed there.
Here the block is kept as it was. Every answer goes through the same observation store as
``live.py`` (record / replay), under its own key name, so clean and paper answers never mix.
"""

from __future__ import annotations

from typing import Any

from react_bench.envs.wiki.env import MAX_SIMILAR, NotFound, Page, PageFound, SearchOutcome
from react_bench.envs.wiki.live import LiveWiki, fetch_url

DISAMBIGUATION_MARK = "may refer to:"


def clean_str(text: str) -> str:
    """The original's re-reading of backslash escapes in page text (unchanged where it fails)."""
    try:
        return text.encode().decode("unicode-escape").encode("latin1").decode("utf-8")
    except (UnicodeDecodeError, UnicodeEncodeError):
        return text


def search_url(index_url: str, entity: str) -> str:
    return f"{index_url}?search={entity.replace(' ', '+')}"


def index_url_of(api_url: str) -> str:
    return api_url.rsplit("/", 1)[0] + "/index.php"


def read_search_page(html: str) -> tuple[list[str], list[str]]:
    """(result headings, text blocks) of a search page or article, as the original read them."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, features="html.parser")
    result_divs = soup.find_all("div", {"class": "mw-search-result-heading"})
    headings = [clean_str(div.get_text().strip()) for div in result_divs]
    blocks = [element.get_text().strip() for element in soup.find_all("p") + soup.find_all("ul")]
    return headings, blocks


def page_from_blocks(blocks: list[str]) -> str:
    text = ""
    for block in blocks:
        if len(block.split(" ")) > 2:
            text += clean_str(block)
            if not block.endswith("\n"):
                text += "\n"
    return text


class PaperWiki(LiveWiki):
    """``LiveWiki`` whose answers come from the search page's HTML (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("name", "wikipedia-en-paper")
        super().__init__(*args, **kwargs)

    def _resolve(self, entity: str) -> SearchOutcome:  # type: ignore[override]
        index = index_url_of(self.endpoint)
        headings, blocks = read_search_page(fetch_url(search_url(index, entity)))
        if headings:
            return NotFound(tuple(headings[:MAX_SIMILAR]))
        if any(DISAMBIGUATION_MARK in block for block in blocks):
            bracketed = f"[{entity}]"
            headings, blocks = read_search_page(fetch_url(search_url(index, bracketed)))
            if headings:
                return NotFound(tuple(headings[:MAX_SIMILAR]), disambiguation=True)
            return PageFound(Page(bracketed, page_from_blocks(blocks)))
        return PageFound(Page(entity, page_from_blocks(blocks)))
