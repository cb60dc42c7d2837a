"""Build a ``local.py`` wiki file from HotpotQA context paragraphs, FEVER wiki-pages, or JSONL.

Decisions:
- Input is streamed (``iter_json_array`` reads a JSON array object by object; JSONL line by
  line) and written in batches, so memory does not grow with the corpus. Duplicate titles
  are resolved by SQLite (``INSERT OR IGNORE`` on a UNIQUE title): the first occurrence in
  input order wins, with no title set held in Python.
- Pages are inserted in batches of ``BATCH``; each batch's new rows are then indexed with
  one ``INSERT ... SELECT`` (in C, without the GIL), while a reader thread parses the next
  batch. The FTS5 index is loaded with a large term hash (see ``_FTS_LOAD``).
- Idempotent: the same input gives the same file, byte for byte (no timestamps, fixed
  order); the file is written under a temporary name and renamed into place, so readers
  never see half a wiki and concurrent builders of the same input are harmless.
- HotpotQA: one page per context title, its sentences joined as they are (they carry their
  own leading spaces). FEVER: page ids become display titles (``Soul_Food_-LRB-film-RRB-``
  -> ``Soul Food (film)``) and the PTB-tokenised lines are detokenised (``-LRB-`` -> ``(``,
  ````` `` ```` -> ``"``, no space before punctuation) and joined into one paragraph, so
  that the paper's sentence split on ``". "`` works as it does on real Wikipedia text.
- ``ensure_wiki`` caches a wiki under ``$REACT_BENCH_CACHE/wiki`` (default
  ``~/.cache/react-bench/wiki``), named by a hash of the source file and the format version:
  changed data or a new format builds a new file; an unchanged one is reused. Which file a
  task's wiki is built from is the task's business (``tasks``), not the wiki's.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import queue
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from tqdm import tqdm

from react_bench.envs.wiki.local import FORMAT_VERSION, normalize_title, require_fts5, title_key
from react_bench.errors import ConfigError
from react_bench.paths import cache_dir

BATCH = 5_000
_READ_CHUNK = 1 << 20

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages(id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE, key TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE pages_fts USING fts5(
    title, text, content='pages', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
"""
# Bulk load: a large in-memory term hash and no merging. Each flush of the hash becomes one
# index segment (a few per million documents), and no merge is ever paid for. CPU time of
# the FTS5 load measured on the synthetic corpus: FTS5's defaults (1 MB hash, automerge 4)
# about 40% more at 100k documents; at 1M, automerge 4 with this hash 14% more and a final
# 'optimize' 11% more, both only to speed up searches already far under target.
_FTS_LOAD = (
    f"INSERT INTO pages_fts(pages_fts, rank) VALUES ('hashsize', {256 * 1024 * 1024})",
    "INSERT INTO pages_fts(pages_fts, rank) VALUES ('automerge', 0)",
)
_FTS_BATCH = "INSERT INTO pages_fts(rowid, title, text) SELECT id, title, text FROM pages WHERE id > ? ORDER BY id"
_FINISH = (
    "CREATE INDEX pages_key ON pages(key, id)",
    "CREATE VIRTUAL TABLE pages_vocab USING fts5vocab(pages_fts, 'row')",
)


@dataclass(frozen=True)
class BuildStats:
    path: Path
    pages: int  # distinct titles written
    duplicates: int  # input pages dropped because their title was already there
    seconds: float

    @property
    def docs_per_second(self) -> float:
        return (self.pages + self.duplicates) / self.seconds if self.seconds > 0 else float("inf")


def iter_json_array(path: Path) -> Iterator[Any]:
    """Yield the elements of a top-level JSON array one at a time, reading in chunks."""
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as f:
        buffer = f.read(_READ_CHUNK).lstrip()
        if not buffer.startswith("["):
            raise ValueError(f"{path}: expected a JSON array")
        buffer, pos, eof = buffer[1:], 0, False
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n,":
                pos += 1
            if pos < len(buffer) and buffer[pos] == "]":
                return
            try:
                item, end = decoder.raw_decode(buffer, pos)
            except json.JSONDecodeError:
                if eof:
                    raise
                more = f.read(_READ_CHUNK)
                eof = not more
                buffer, pos = buffer[pos:] + more, 0
                continue
            yield item
            pos = end


def pages_from_distractor(path: Path) -> Iterator[tuple[str, str]]:
    """HotpotQA official format: every ``[title, [sentences]]`` of every question's context. Its
    titles carry HTML entities (``Etiquette &amp; Espionage``) where Wikipedia's have none: unescaped,
    text as well, so titles read, search and match as the live wiki's do."""
    for question in iter_json_array(path):
        for title, sentences in question["context"]:
            yield normalize_title(html.unescape(title)), html.unescape("".join(sentences)).strip()


_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "-COLON-": ":"}
_PTB_RE = re.compile("|".join(re.escape(t) for t in _PTB))
_SPACE_BEFORE = re.compile(r" (?=[.,;:!?%)\]}]|'s\b|'re\b|'ve\b|'ll\b|'d\b|'m\b|n't\b|'(?: |$))")
_SPACE_AFTER = re.compile(r"(?<=[(\[{$]) ")


def detokenize_fever(sentence: str) -> str:
    """Undo FEVER's PTB tokenisation well enough for sentence splitting and reading."""
    text = _PTB_RE.sub(lambda m: _PTB[m.group(0)], sentence)
    text = text.replace("`` ", '"').replace(" ''", '"').replace("``", '"').replace("''", '"')
    text = _SPACE_BEFORE.sub("", text)
    return _SPACE_AFTER.sub("", text).strip()


def fever_lines(lines: str) -> list[str]:
    """The sentences of a FEVER ``lines`` field (``id\\tsentence\\tlinks...`` per line), in order."""
    numbered: list[tuple[int, str]] = []
    for line in lines.split("\n"):
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].strip():
            numbered.append((int(parts[0]), parts[1]))
    return [sentence for _, sentence in sorted(numbered)]


def pages_from_fever(path: Path) -> Iterator[tuple[str, str]]:
    """FEVER wiki-pages JSONL ``{id, text, lines}``: one page per id."""
    for record in _iter_jsonl(path):
        sentences = fever_lines(record.get("lines") or "") or [record.get("text") or ""]
        text = " ".join(s for s in (detokenize_fever(x) for x in sentences) if s)
        yield normalize_title(record["id"]), text


def pages_from_jsonl(path: Path) -> Iterator[tuple[str, str]]:
    """Generic JSONL ``{title, text}``; ``text`` may hold several paragraphs separated by newlines."""
    for record in _iter_jsonl(path):
        yield normalize_title(record["title"]), record["text"]


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def build_wiki(pages: Iterable[tuple[str, str]], out: Path, *, source: str = "", progress: bool = False) -> BuildStats:
    """Write pages (display title, text) into a new wiki file at ``out`` (replaced atomically)."""
    require_fts5()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    start = time.perf_counter()
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            seen = _load(conn, pages, source, progress)
        finally:
            conn.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    written = seen[1]
    return BuildStats(out, written, seen[0] - written, time.perf_counter() - start)


def _load(conn: sqlite3.Connection, pages: Iterable[tuple[str, str]], source: str, progress: bool) -> tuple[int, int]:
    """Fill an empty database; return (pages read, pages written)."""
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "cache_size=-262144"):
        conn.execute(f"PRAGMA {pragma}")
    conn.executescript(_SCHEMA)
    conn.execute("BEGIN")
    for statement in _FTS_LOAD:
        conn.execute(statement)
    read = indexed = 0
    bar = tqdm(total=None, unit=" pages", desc="wiki build", disable=not progress, mininterval=0.5)
    for batch in _batches_in_background(pages):
        conn.executemany("INSERT OR IGNORE INTO pages(title, key, text) VALUES (?, ?, ?)", batch)
        # Index the batch's new pages now: SQLite releases the GIL while it tokenises, so
        # the reader thread parses the next batch on the other core meanwhile.
        conn.execute(_FTS_BATCH, (indexed,))
        indexed = conn.execute("SELECT coalesce(max(id), 0) FROM pages").fetchone()[0]
        read += len(batch)
        bar.update(len(batch))
    bar.close()
    for statement in _FINISH:
        conn.execute(statement)
    written = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    meta = {"format": FORMAT_VERSION, "source": source, "pages": str(written), "duplicates": str(read - written)}
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(meta.items()))
    conn.execute("COMMIT")
    return read, written


_DONE = object()


def _batches_in_background(pages: Iterable[tuple[str, str]]) -> Iterator[list[tuple[str, str, str]]]:
    """Batches of (title, key, text), read and parsed by a thread; at most 3 batches in memory."""
    batches: queue.Queue[Any] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def read() -> None:
        try:
            rows = ((title, title_key(title), text) for title, text in pages if title)
            while (batch := list(islice(rows, BATCH))) and not stop.is_set():
                batches.put(batch)
            batches.put(_DONE)
        except Exception as exc:  # noqa: BLE001 -- handed to the consumer, which raises it
            batches.put(exc)

    reader = threading.Thread(target=read, name="wiki-build-reader", daemon=True)
    reader.start()
    try:
        while (item := batches.get()) is not _DONE:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.set()
        while reader.is_alive():  # unblock a reader waiting on a full queue
            try:
                batches.get(timeout=0.05)
            except queue.Empty:
                pass
        reader.join()


def build_from_distractor(src: Path, out: Path, *, progress: bool = False) -> BuildStats:
    """HotpotQA distractor-format JSON (dev or train) -> wiki of its context paragraphs."""
    return build_wiki(pages_from_distractor(Path(src)), out, source=Path(src).name, progress=progress)


def build_from_fever(src: Path, out: Path, *, progress: bool = False) -> BuildStats:
    return build_wiki(pages_from_fever(Path(src)), out, source=Path(src).name, progress=progress)


def build_from_jsonl(src: Path, out: Path, *, progress: bool = False) -> BuildStats:
    return build_wiki(pages_from_jsonl(Path(src)), out, source=Path(src).name, progress=progress)


BUILDERS: dict[str, Callable[..., BuildStats]] = {
    "distractor": build_from_distractor,
    "fever": build_from_fever,
    "jsonl": build_from_jsonl,
}


def default_cache_dir() -> Path:
    return cache_dir() / "wiki"


def ensure_wiki(name: str, src: Path, kind: str, cache_dir: Path | None = None) -> Path:
    """The wiki built from ``src`` (a file in the layout ``kind``: ``distractor``, ``fever`` or
    ``jsonl``), built on first use and cached as ``<name>-<hash of src>.sqlite``; a task names
    its own source (``tasks``), the wiki knows none."""
    if kind not in BUILDERS:
        raise ConfigError(f"no wiki builder for {kind!r}; known: {sorted(BUILDERS)}")
    src = Path(src)
    if not src.is_file():
        raise ConfigError(f"{src} is missing: the {name} wiki is built from it (see the data README)")
    digest = hashlib.sha256(FORMAT_VERSION.encode())
    with open(src, "rb") as f:
        for chunk in iter(lambda: f.read(_READ_CHUNK), b""):
            digest.update(chunk)
    out = Path(cache_dir or default_cache_dir()) / f"{name}-{digest.hexdigest()[:16]}.sqlite"
    if out.is_file() and not usable_wiki(out):
        out.unlink()  # a damaged cache (a killed build, a disk error) is rebuilt, not trusted
    if not out.is_file():
        BUILDERS[kind](src, out, progress=False)
    return out


def usable_wiki(path: Path) -> bool:
    """Whether ``path`` is a readable wiki of this format (a cache check; never raises)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == FORMAT_VERSION
