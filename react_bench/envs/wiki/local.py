"""An offline Wikipedia in one SQLite file: exact titles first, BM25 (FTS5) for "Similar".

Schema (written by ``build.py``; ``FORMAT_VERSION`` names it):
- ``pages(id, title UNIQUE, key, text)``: ``title`` is the display title (FEVER ids are
  turned into ``Soul Food (film)`` at build time); ``key`` is ``title_key(title)``;
  ``text`` is paragraphs separated by ``"\\n"``.
- ``pages_fts``: FTS5 over (title, text), external content ``pages``, unicode61 tokenizer
  with diacritics removed; ``pages_vocab``: its fts5vocab ``row`` table (for inspection).

Title lookup: the exact display title after ``normalize_title`` (underscores, FEVER's
``-LRB-``/``-RRB-``/``-LSB-``/``-RSB-``/``-LCB-``/``-RCB-``/``-COLON-`` tokens, runs of
spaces), then the case-folded ``key`` (the lowest id wins when several titles fold alike).

Similar titles: the query is never handed to FTS5 syntax. It is cut into word tokens
(letters and digits, as unicode61 does), each token is quoted as a string literal, and the
tokens are OR-ed and ranked by BM25 with titles weighted ``TITLE_WEIGHT`` times the text.
So quotes, ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``^``, ``:``, parentheses are words or
nothing, never operators. Two bounds keep the cost flat on large corpora:
- at most ``MAX_QUERY_TOKENS`` distinct tokens (the first ones) are used: a 100k-character
  query costs what a 32-word one does;
- BM25 costs about a microsecond per matching page, so tokens are taken rarest first while
  their summed page counts stay within ``POSTINGS_BUDGET``. Page counts are themselves
  counted only up to the budget (a capped walk of the token's posting list; fts5vocab
  would walk all of it). The tokens left out are the most common ones, whose BM25 weight
  is the smallest (near zero, or clamped to 1e-6 by FTS5, once a token is in half the
  pages): "the", "of", "film" on the HotpotQA wiki. Counts are cached per token. When even the rarest token is over
  budget (a query of only very common words), the pages that contain all tokens (else the
  rarest one) are listed unranked, in page order.

Thread safety: one read-only connection per thread (``threading.local``), so episodes
running in worker threads read in parallel; ``close`` must wait until no thread reads (the
environments' ``run_blocking`` sees to it: a connection closed under a read crashes the process).
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
import unicodedata
from pathlib import Path

from react_bench.envs.wiki.env import NotFound, Page, PageFound, SearchOutcome
from react_bench.errors import ConfigError

FORMAT_VERSION = "react-bench-wiki-2"  # 2: HotpotQA titles and text with HTML entities unescaped
MAX_QUERY_TOKENS = 32
POSTINGS_BUDGET = 4_000
TITLE_WEIGHT = 10.0

_FEVER_TOKENS = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "-COLON-": ":",
}
_FEVER_TOKEN_RE = re.compile("|".join(re.escape(t) for t in _FEVER_TOKENS))
_SPACES_RE = re.compile(r"\s+")
_WORD_RE = re.compile(r"[^\W_]+")


def normalize_title(title: str) -> str:
    """Display form: FEVER bracket tokens restored, underscores as spaces, spaces folded."""
    # Lone surrogates (possible in JSON tool arguments) cannot be stored or bound as UTF-8.
    title = title.encode("utf-8", "replace").decode("utf-8")
    title = _FEVER_TOKEN_RE.sub(lambda m: _FEVER_TOKENS[m.group(0)], title)
    return _SPACES_RE.sub(" ", title.replace("_", " ")).strip()


def title_key(title: str) -> str:
    return normalize_title(title).casefold()


def _fold(token: str) -> str:
    """A token as unicode61 (remove_diacritics 2) stores it: case-folded, no accents."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_tokens(query: str) -> list[str]:
    """Distinct folded word tokens of a query, in order, at most ``MAX_QUERY_TOKENS``."""
    seen: dict[str, None] = {}
    for match in _WORD_RE.finditer(unicodedata.normalize("NFC", query)):
        token = _fold(match.group(0))
        if token and token not in seen:
            seen[token] = None
            if len(seen) == MAX_QUERY_TOKENS:
                break
    return list(seen)


def require_fts5() -> None:
    """Fail clearly when Python's sqlite3 was built without FTS5 (the local wiki needs it)."""
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
    except sqlite3.OperationalError as exc:
        raise RuntimeError(
            f"this Python's sqlite3 (SQLite {sqlite3.sqlite_version}) has no FTS5, which the local wiki "
            "needs; use a Python whose SQLite is built with FTS5 (e.g. python.org or distro builds)"
        ) from exc


def _literal(token: str) -> str:
    """An FTS5 string literal: whatever is inside double quotes is text, never syntax."""
    return '"' + token.replace('"', '""') + '"'


class LocalWiki:
    """A read-only SQLite+FTS5 wiki. Safe to share across threads and episodes."""

    def __init__(self, path: str | Path, name: str | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(f"no local wiki at {self.path}; build one with scripts/build_wiki.py")
        self.name = name or f"local:{self.path.name}"
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()
        # The file is read-only, so a token's page count never changes; common tokens ("the",
        # "of") recur in nearly every query. lru_cache is thread-safe.
        self._count = functools.lru_cache(maxsize=1 << 16)(self._capped_count)
        try:
            version = self._conn().execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.Error as exc:
            raise ConfigError(
                f"{self.path} is not a usable wiki ({exc}); rebuild it with scripts/build_wiki.py"
            ) from None
        if version is None or version[0] != FORMAT_VERSION:
            raise ConfigError(f"{self.path} is not a {FORMAT_VERSION} wiki (found {version}); rebuild it")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            self._local.conn = conn
            with self._opened_lock:
                self._opened.append(conn)
        return conn

    def __len__(self) -> int:
        return self._conn().execute("SELECT count(*) FROM pages").fetchone()[0]

    def search(self, entity: str) -> SearchOutcome:
        page = self.lookup_title(entity)
        return PageFound(page) if page is not None else NotFound(tuple(self.similar(entity)))

    def lookup_title(self, title: str) -> Page | None:
        display = normalize_title(title)
        if not display:
            return None
        conn = self._conn()
        row = conn.execute("SELECT title, text FROM pages WHERE title = ?", (display,)).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT title, text FROM pages WHERE key = ? ORDER BY id LIMIT 1", (display.casefold(),)
            ).fetchone()
        return None if row is None else Page(row[0], row[1])

    def similar(self, query: str, k: int = 5) -> list[str]:
        tokens = query_tokens(query)
        if not tokens or k <= 0:
            return []
        conn = self._conn()
        counts = {t: self._count(t, POSTINGS_BUDGET + 1) for t in tokens}
        present = sorted((t for t in tokens if counts[t]), key=lambda t: counts[t])  # stable: ties keep query order
        if not present:
            return []
        chosen: list[str] = []
        total = 0
        for token in present:
            if total + counts[token] > POSTINGS_BUDGET:
                break
            chosen.append(token)
            total += counts[token]
        if chosen:
            ids = conn.execute(
                "SELECT rowid FROM pages_fts WHERE pages_fts MATCH ? ORDER BY bm25(pages_fts, ?, 1.0) LIMIT ?",
                (" OR ".join(_literal(t) for t in chosen), TITLE_WEIGHT, k),
            ).fetchall()
        else:
            ids = self._unranked(conn, present, k)
        return self._titles(conn, [row[0] for row in ids])

    def _capped_count(self, token: str, cap: int) -> int:
        """Pages containing ``token``, counted up to ``cap`` (the walk of its postings stops there)."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM pages_fts WHERE pages_fts MATCH ? LIMIT ?)"
        return self._conn().execute(sql, (_literal(token), cap)).fetchone()[0]

    @staticmethod
    def _unranked(conn: sqlite3.Connection, tokens: list[str], k: int) -> list[tuple[int]]:
        sql = "SELECT rowid FROM pages_fts WHERE pages_fts MATCH ? ORDER BY rowid LIMIT ?"
        rows = conn.execute(sql, (" AND ".join(_literal(t) for t in tokens), k)).fetchall()
        return rows or conn.execute(sql, (_literal(tokens[0]), k)).fetchall()

    @staticmethod
    def _titles(conn: sqlite3.Connection, page_ids: list[int]) -> list[str]:
        """The titles of ``page_ids``, in their order (one query)."""
        if not page_ids:
            return []
        marks = ",".join("?" * len(page_ids))
        titles = dict(conn.execute(f"SELECT id, title FROM pages WHERE id IN ({marks})", page_ids).fetchall())
        return [titles[i] for i in page_ids]

    def close(self) -> None:
        """Close every thread's connection; the wiki is unusable afterwards."""
        with self._opened_lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
        self._local = threading.local()
