"""Live Wikipedia through the ``wikipedia`` package, with a frozen observation store.

``search(entity)``: ``wikipedia.page(entity, auto_suggest=False)`` (the package's
auto-suggest rewrites correct titles into wrong ones); a disambiguation page becomes the
Similar list (its first options; the observation shows ``[entity]`` as the original's
did, see ``env.py``); a missing page becomes the API's search results for the
entity (what the original's Wikipedia search page listed); a page's text is its plain-text
extract without section headings and without lines of two words or fewer (the original kept
only ``<p>``/``<ul>`` texts of more than two words). Network failures that outlast the
retries become ``SearchFailed``: an error observation, never an exception.

Transport: the package calls ``requests.get`` with no timeout and reads the JSON whatever
the status. ``_Transport`` replaces the package's ``requests`` reference with an object whose
``get`` adds a descriptive User-Agent, a timeout, and retries with exponential backoff on
429/5xx, timeouts and refused connections (``Retry-After`` is honoured, capped). Its
settings come from a context variable set around each call, so LiveWikis with different
settings can coexist; ``api_url=None`` keeps the package's own ``API_URL`` (``set_lang``).

Store modes (key: (``name@endpoint``, action, argument); ``store.py`` keeps the backend's answer):
- ``live``: always asks the network; writes every answer to the store when there is one.
- ``record``: a stored answer is served as it is (so every episode of a run, and every
  later replay, sees the same thing); otherwise the network, then the store. A stored
  failure (Wikipedia unreachable) is asked again and overwritten. The disk cache of ``wiki=live``.
- ``replay``: the store only; the network is never touched. A missing key raises
  ``ReplayMiss``: a clear error naming the key, never a silent live call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, get_args

import requests
import wikipedia
import wikipedia.wikipedia as wikipedia_module

from react_bench.environment import EpisodeAbort
from react_bench.envs.wiki.env import (
    MAX_SIMILAR,
    NotFound,
    Page,
    PageFound,
    SearchFailed,
    SearchOutcome,
    outcome_from_dict,
    outcome_to_dict,
)
from react_bench.envs.wiki.store import ObservationStore
from react_bench.errors import ConfigError
from react_bench.redact import without_userinfo

Mode = Literal["live", "record", "replay"]
MODES: tuple[str, ...] = get_args(Mode)
DEFAULT_USER_AGENT = (
    "react-bench/0.1 (research benchmark reproducing ReAct, Yao et al. 2022; "
    "set wiki.user_agent to add your contact address) wikipedia-python/1.4.0"
)


@dataclass(frozen=True)
class LiveSettings:
    api_url: str | None = None  # None: the package's API_URL (wikipedia.set_lang)
    user_agent: str = DEFAULT_USER_AGENT
    timeout_s: float = 10.0
    max_attempts: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.timeout_s <= 0 or self.backoff_s < 0:
            raise ConfigError(f"invalid live wiki settings: {self}")


class WikiUnavailable(Exception):
    """The API could not be reached or kept failing after all retries."""


class ReplayMiss(EpisodeAbort):
    """Replay mode was asked for something the store does not hold: the example cannot be
    reproduced, so its episode ends with reason ``error`` (never a made-up observation)."""


_settings: ContextVar[LiveSettings | None] = ContextVar("react_bench_live_wiki_settings", default=None)


class _Transport:
    """Stands in for the ``requests`` module inside ``wikipedia.wikipedia`` (only ``get`` is used)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def get(
        self, url: str, params: Any = None, headers: dict[str, str] | None = None, *, to_api: bool = True, **_: Any
    ) -> requests.Response:
        """``to_api``: the package's calls go to the configured API endpoint; ``fetch_url``'s
        page requests go to ``url`` itself."""
        s = _settings.get() or LiveSettings()
        headers = {**(headers or {}), "User-Agent": s.user_agent}
        target = (s.api_url or url) if to_api else url
        problem = ""
        for attempt in range(1, s.max_attempts + 1):
            wait = s.backoff_s * 2 ** (attempt - 1)
            try:
                response = self._session().get(target, params=params, headers=headers, timeout=s.timeout_s)
            except requests.Timeout:
                problem = f"timed out after {s.timeout_s:g} s"
            except requests.ConnectionError:
                problem = "connection failed"
            else:
                if response.status_code != 429 and response.status_code < 500:
                    return response
                problem = f"HTTP {response.status_code}"
                wait = _retry_after(response) if _retry_after(response) is not None else wait
            if attempt < s.max_attempts:
                time.sleep(min(wait, s.max_backoff_s))
        raise WikiUnavailable(f"Wikipedia API unavailable: {problem} ({s.max_attempts} attempts)")


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date or nothing: use our own backoff


_PAGES = _Transport()


def fetch_url(url: str) -> str:
    """A web page's HTML through the same User-Agent, timeouts and retries (``paper.py``)."""
    return _PAGES.get(url, to_api=False).text


_install_lock = threading.Lock()


def _install_transport() -> None:
    with _install_lock:
        if not isinstance(wikipedia_module.requests, _Transport):
            wikipedia_module.requests = _Transport()


def _utf8(text: str) -> str:
    """Lone surrogates (possible in JSON tool arguments) cannot be sent or stored as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _heading(line: str) -> bool:
    """A section heading of the extract (``== History ==``): what ``^=+.*=+$`` matches, in linear
    time (that pattern backtracks cubically on a line of ``=``)."""
    return len(line) >= 2 and line[0] == "=" and line[-1] == "="


def page_text(content: str) -> str:
    """A page's plain-text extract as the environment's page text (paragraphs by ``\\n``)."""
    lines = (line.strip() for line in content.split("\n"))
    return "\n".join(line for line in lines if line and not _heading(line) and len(line.split(" ")) > 2)


# The package memoises search() for the whole process; the store is our cache, and the
# memo would hide retries and leak answers between endpoints.
_search_titles: Callable[..., list[str]] = getattr(wikipedia.search, "fn", wikipedia.search)


class LiveWiki:
    """Wikipedia over HTTP, recorded to / replayed from an ``ObservationStore``. Thread-safe."""

    def __init__(
        self,
        mode: Mode = "live",
        store: ObservationStore | None = None,
        settings: LiveSettings | None = None,
        name: str = "wikipedia-en",
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if mode in ("record", "replay") and store is None:
            raise ValueError(f"mode {mode!r} needs an observation store")
        self.mode = mode
        self.store = store
        self.settings = settings or LiveSettings()
        self.name = name
        # Stored answers are keyed by the endpoint too: one store may hold several wikis, and
        # an answer recorded from one api_url is never served for another.
        self.endpoint = self.settings.api_url or wikipedia.API_URL
        self.store_key = f"{name}@{without_userinfo(self.endpoint)}"  # stored: never a user or password
        if mode != "replay":
            _install_transport()

    def search(self, entity: str) -> SearchOutcome:
        entity = _utf8(entity)
        return outcome_from_dict(self._through_store("search", entity, lambda: outcome_to_dict(self._fetch(entity))))

    def lookup_title(self, title: str) -> Page | None:
        outcome = self.search(title)
        if isinstance(outcome, SearchFailed):
            raise WikiUnavailable(outcome.message)
        return outcome.page if isinstance(outcome, PageFound) else None

    def similar(self, query: str, k: int = MAX_SIMILAR) -> list[str]:
        query = _utf8(query)

        def fetch() -> dict[str, Any]:
            return {"titles": self._with_settings(lambda: _search_titles(query, results=k)) if query.strip() else []}

        return list(self._through_store(f"similar:{k}", query, fetch)["titles"])

    def _through_store(self, action: str, argument: str, fetch: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if self.store is not None and self.mode in ("record", "replay"):
            stored = self.store.get(self.store_key, action, argument)
            # record mode asks again after a stored failure: an outage is not Wikipedia's answer
            if stored is not None and (self.mode == "replay" or stored.get("kind") != "failed"):
                return stored
            if self.mode == "replay":
                raise ReplayMiss(
                    f"replay: no recorded answer for ({self.store_key!r}, {action!r}, {argument!r}) "
                    f"in {self.store.path}; record it with wiki=live"
                )
        payload = fetch()
        if self.store is not None:
            self.store.put(self.store_key, action, argument, payload)
        return payload

    def _with_settings(self, call: Callable[[], Any]) -> Any:
        token = _settings.set(self.settings)
        try:
            return call()
        finally:
            _settings.reset(token)

    def _fetch(self, entity: str) -> SearchOutcome:
        if not entity.strip():
            return NotFound(())
        try:
            return self._with_settings(lambda: self._resolve(entity))
        except WikiUnavailable as exc:
            return SearchFailed(str(exc))
        except (wikipedia.WikipediaException, ValueError, KeyError, IndexError) as exc:
            # ValueError covers a body that is not JSON; Key/IndexError an unexpected shape.
            return SearchFailed(f"unexpected answer from the Wikipedia API: {type(exc).__name__}: {exc}")

    @staticmethod
    def _resolve(entity: str) -> SearchOutcome:
        try:
            page = wikipedia.page(entity, auto_suggest=False, redirect=True)
            return PageFound(Page(page.title, page_text(page.content)))
        except wikipedia.DisambiguationError as exc:
            options = list(dict.fromkeys(o for o in exc.options if o))
            return NotFound(tuple(options[:MAX_SIMILAR]), disambiguation=True)
        except wikipedia.PageError:
            return NotFound(tuple(_search_titles(entity, results=MAX_SIMILAR)[:MAX_SIMILAR]))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
