"""A frozen store of what a live wiki returned, keyed by (backend, action, argument).

The value is the backend's answer (a page's title and text, the similar titles, or the
failure), not the observation string: observations are derived from it deterministically,
and ``lookup`` needs the page text. One SQLite file; writes are serialised by a lock and
each is committed at once, so an interrupted run keeps what it recorded. ``read_only``
opens the file with ``mode=ro``: a replaying run cannot change its store by accident.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS observations(
    backend TEXT NOT NULL,
    action TEXT NOT NULL,
    argument TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (backend, action, argument)
)
"""


class ObservationStore:
    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if read_only:
            if not self.path.is_file():
                raise ConfigError(f"no observation store at {self.path} (record one with wiki=live first)")
            self._conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
        self._lock = threading.Lock()

    def get(self, backend: str, action: str, argument: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT payload FROM observations WHERE backend = ? AND action = ? AND argument = ?",
                (backend, action, argument),
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, backend: str, action: str, argument: str, payload: dict[str, Any]) -> None:
        if self.read_only:
            raise PermissionError(f"{self.path} is open read-only (replay)")
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO observations(backend, action, argument, payload) VALUES (?, ?, ?, ?)",
                (backend, action, argument, text),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM observations").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
