"""A run folder: where it is, creating or continuing it, appending lines, and reading back what a
stored run recorded of itself (``StoredRun``: resume and replay start from it).

Layout (``results.py`` reads it back): ``<results_dir>/<task>/<model>/<mode>-<runner>/<run id>/``
with ``run.json``, ``examples.jsonl``, ``calls.jsonl``, ``metrics.json``.

Rules a next engineer needs:
- An example counts as finished only with a complete line in BOTH ``examples.jsonl`` and
  ``calls.jsonl``, fsynced (``RunWriter``: group commits off the event loop). A crash can
  cut a line or fall between the two; on resume both files are cut back to exactly the
  finished ids (atomically: a crash then leaves the old file or the
  new, never half), so nothing is counted twice and the cassette stays in step.
- ``retry_errors``: the examples that ended with reason ``error`` (a fault that outlived
  the retries) are taken out of both files the same way and run again; the new line
  replaces the old, so no id ever has two lines; the old lines are kept in ``superseded.jsonl``
  (what those attempts spent is still the run's spending).
- Lines are written with ``ensure_ascii=False``; text that cannot be encoded (a lone
  surrogate that reached a record through the data) falls back to ASCII escapes rather
  than failing the run.
- ``run_id`` is a plain name: letters, digits, ``.``, ``_``, ``-`` (no path separators).
- A run folder is owned by one process at a time: ``prepare`` takes ``.lock`` (an advisory
  ``flock``, which the system drops when its process dies, so a lock left by a killed run is
  stale by construction; the file names the owner's pid, host and start for the message a
  second process gets) before it reads or cuts anything, and ``release`` gives it back.
- A damaged line in the middle of a file (not JSON, no id) is dropped on resume, with the
  lines after it kept: only that example runs again. A line without its newline can only be
  the last one (a crash cut it); an id seen twice keeps its first line.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError

EXAMPLES, CALLS, RUN_JSON, METRICS = "examples.jsonl", "calls.jsonl", "run.json", "metrics.json"
SUPERSEDED = "superseded.jsonl"  # the errored attempts that retry_errors replaced (what they spent stays counted)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.fullmatch(run_id) or run_id in (".", ".."):
        raise ConfigError(
            f"run_id={run_id!r}: use a plain name of letters, digits, '.', '_' and '-' (no path separators)"
        )
    return run_id


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def run_dir_path(results_dir: Path, task: str, model_label: str, mode: str, runner: str, run_id: str) -> Path:
    return results_dir / task / safe_name(model_label) / f"{mode}-{runner}" / check_run_id(run_id)


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """A run's run.json, or one clear ConfigError naming the file."""
    path = run_dir / RUN_JSON
    if not path.is_file():
        raise ConfigError(f"no run at {run_dir} (it has no {RUN_JSON})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read ({type(exc).__name__}: {exc}); it is damaged") from None
    if not isinstance(data, dict) or "fingerprint" not in data:
        raise ConfigError(f"{path} is not a run.json of this project (no fingerprint)")
    return data


@dataclass(frozen=True)
class StoredRun:
    """What a run folder says of itself: its run.json. A folder is self-describing wherever it
    lies: resume and replay read its settings here, never from where it sits in a layout."""

    run_dir: Path
    data: dict[str, Any]

    @classmethod
    def read(cls, run_dir: Path) -> StoredRun:
        return cls(Path(run_dir), read_run_json(Path(run_dir)))

    def composed(self) -> dict[str, Any]:
        """The settings the run was composed from (a fresh copy: the caller may change it)."""
        composed = self.data.get("composed")
        if not isinstance(composed, dict):
            raise ConfigError(
                f"{self.run_dir / RUN_JSON} records no settings to resume from (made by an older version)"
            )
        return json.loads(json.dumps(composed))

    @property
    def example_ids(self) -> list[str]:
        return list(self.data.get("example_ids") or [])

    @property
    def task(self) -> str:
        return str(((self.data.get("config") or {}).get("task") or {}).get("name"))


DRY_RUN_FILES = frozenset({"dry_run_request.json", "dry_run.json"})
LOCK = ".lock"
_HELD: dict[Path, int] = {}  # run folder -> the descriptor holding its lock, in this process


def refuse_links(folder: Path) -> None:
    """A run folder holds plain files and folders only: one someone sent may hold a link
    (``.lock`` or ``examples.jsonl`` -> a file of the user's) that a write would follow out of
    the folder. Before the project writes into a folder it did not create (resume, export),
    any link in it is refused in one line."""
    if not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = Path(root) / name
            if path.is_symlink():
                raise ConfigError(
                    f"{path} is a link (to {os.readlink(path)}); a run folder holds plain files only, "
                    "so nothing is written into this one: remove the link, or copy the files it should hold"
                )


def acquire(run_dir: Path) -> None:
    """Own ``run_dir`` for this process, or one ConfigError naming the process that owns it."""
    key = run_dir.resolve()
    if key in _HELD:
        raise ConfigError(f"{run_dir} is already being run by this process")
    refuse_links(run_dir)
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)  # never through a link
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        owner = _owner(fd)
        os.close(fd)
        raise ConfigError(
            f"{run_dir} is being run by another process ({owner}); wait for it to end or stop it, then resume"
        ) from None
    os.ftruncate(fd, 0)
    os.write(
        fd,
        json.dumps(
            {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        ).encode(),
    )
    _HELD[key] = fd


def release(run_dir: Path) -> None:
    fd = _HELD.pop(run_dir.resolve(), None)
    if fd is not None:
        os.close(fd)  # closing drops the flock; the file stays, unlocked (stale on sight)


def _owner(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {data['pid']} on {data['host']}, since {data['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its pid is not readable"


Attempt = tuple[str, int]  # an example's id and its epoch: one line of each file


def prepare(
    run_dir: Path, *, resume: bool, retry_errors: bool, fingerprint: str, dry_run: bool = False
) -> set[Attempt]:
    """Create the run folder, or continue it: the attempts (id, epoch) already finished there. A
    folder that holds only a dry run's files counts as new."""
    if run_dir.is_dir() and any(p.name not in DRY_RUN_FILES | {LOCK} for p in run_dir.iterdir()):
        if dry_run:
            raise ConfigError(f"{run_dir} holds a run; a dry run needs a new run_id")
        if not resume:
            raise ConfigError(f"{run_dir} exists; add resume=true to continue it, or choose another run_id")
        if read_run_json(run_dir)["fingerprint"] != fingerprint:
            raise ConfigError(f"{run_dir} was run with another protocol (fingerprint differs); refusing to mix")
        acquire(run_dir)  # before anything is read or cut: a second process stops here
        try:
            drop = errored_ids(run_dir / EXAMPLES) if retry_errors else set()
            if drop:
                keep_superseded(run_dir, drop)
            return finished_ids(run_dir / EXAMPLES, run_dir / CALLS, drop)
        except BaseException:
            release(run_dir)
            raise
    if resume:
        raise ConfigError(f"resume: there is no run at {run_dir} to resume")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next((p for p in (run_dir, *run_dir.parents) if p.exists() and not p.is_dir()), run_dir)
        raise ConfigError(f"cannot create the run folder {run_dir}: {blocking} is a file, not a folder") from None
    except OSError as exc:  # permissions, a read-only or full disk: one line, nothing written
        raise ConfigError(f"cannot create the run folder {run_dir}: {exc.strerror or exc}") from None
    if not dry_run:
        acquire(run_dir)
    return set()


def errored_ids(examples: Path) -> set[Attempt]:
    return {i for i, raw in complete_lines(examples).items() if json.loads(raw).get("reason") == "error"}


def keep_superseded(run_dir: Path, ids: set[Attempt]) -> None:
    """Append the lines of ``ids`` to superseded.jsonl (fsynced) before they leave examples.jsonl,
    each line once: a crash between the two steps and a second retry add nothing twice."""
    lines = [raw for id_, raw in complete_lines(run_dir / EXAMPLES).items() if id_ in ids]
    path = run_dir / SUPERSEDED
    have = set(path.read_bytes().splitlines(keepends=True)) if path.exists() else set()
    new = [raw for raw in lines if raw not in have]
    if new:
        with path.open("ab") as f:
            f.write(b"".join(new))
            f.flush()
            os.fsync(f.fileno())


def finished_ids(examples: Path, calls: Path, drop: set[Attempt] | None = None) -> set[Attempt]:
    """Attempts with a complete line in BOTH files (less ``drop``); both files are cut back to those."""
    kept_examples, kept_calls = complete_lines(examples), complete_lines(calls)
    done = (set(kept_examples) & set(kept_calls)) - (drop or set())
    for path, kept in ((examples, kept_examples), (calls, kept_calls)):
        content = b"".join(raw for id_, raw in kept.items() if id_ in done)
        if path.exists() and path.read_bytes() != content:
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_bytes(content)
            os.replace(tmp, path)  # a crash now leaves the old file or the new, never half
    return done


def complete_lines(path: Path) -> dict[Attempt, bytes]:
    """The intact JSON lines of ``path`` by attempt (id, epoch; a line without an epoch is the
    first): a damaged line is dropped and those after it kept (a line without its newline is the
    last, cut by a crash); an attempt's first line counts."""
    lines: dict[Attempt, bytes] = {}
    if not path.exists():
        return lines
    with path.open("rb") as f:
        for raw in f:
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("no newline")
                record = json.loads(raw)
                lines.setdefault((str(record["id"]), int(record.get("epoch") or 1)), raw)
            except (ValueError, KeyError, TypeError):
                continue  # damaged: this example runs again, the others stand
    return lines


def json_line(record: dict[str, Any]) -> bytes:
    try:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, so the line is valid UTF-8 and reads back the same
        return (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")


class RunWriter:
    """Appends finished examples to ``examples.jsonl`` and ``calls.jsonl``: durably, in order,
    and off the event loop.

    ``await writer.write(example_line, calls_line)`` returns once both lines are on disk
    (written and fsynced); only then does the example count as finished. Writing is a group
    commit: the lines of every example that finishes while a batch is being written go out
    together in the next batch, each file written once and fsynced once, in a worker thread,
    so the examples in flight never wait for the disk. A failed write fails every example of
    its batch (the run stops with the error); nothing is reported finished that is not on disk.
    """

    def __init__(self, run_dir: Path) -> None:
        self._files = ((run_dir / EXAMPLES).open("ab"), (run_dir / CALLS).open("ab"))
        self._pending: list[tuple[bytes, bytes, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.batches = 0

    async def write(self, example_line: bytes, calls_line: bytes) -> None:
        done = asyncio.get_running_loop().create_future()
        self._pending.append((example_line, calls_line, done))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        await asyncio.shield(done)  # a cancelled example's lines still go out whole, or not at all

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._write, [b[0] for b in batch], [b[1] for b in batch])
            except BaseException as exc:  # noqa: BLE001 - handed to every example of the batch
                for *_, done in batch:
                    if not done.done():
                        done.set_exception(exc if isinstance(exc, Exception) else OSError(str(exc)))
                if not isinstance(exc, Exception):
                    raise
                continue
            for *_, done in batch:
                if not done.done():
                    done.set_result(None)

    def _write(self, example_lines: list[bytes], calls_lines: list[bytes]) -> None:
        for f, lines in zip(self._files, (example_lines, calls_lines), strict=True):
            f.write(b"".join(lines))
            f.flush()
            os.fsync(f.fileno())
        self.batches += 1

    async def aclose(self) -> None:
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        for f in self._files:
            f.close()


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
