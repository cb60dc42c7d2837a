"""Where task data comes from: the data folder, local files through ``datasets``, the hub.

Decisions a next engineer needs:

- Data folder: ``data_dir`` if set, else ``$REACT_BENCH_DATA_DIR``, else the first of
  ``./data`` and ``../shared/data`` that exists, tried relative to the working directory and
  then to the repository root. An explicitly set folder (setting or variable) that does not
  exist is an error, not a silent fall-through to other data. ``$REACT_BENCH_DATA_DIR=none``
  uses no folder at all, the defaults included: the run then gets its data as a clone alone does
  (CI's main pass runs the suite so). Where no folder is found at all,
  a task with a ``Recipe`` builds its files from the public hub datasets on first use
  (``tasks.hubdata``; not with ``source=local``), and its examples carry the build's record.
- Local files are read with ``datasets.load_dataset("json", data_files=...)`` (JSON arrays and
  JSON lines alike). datasets 5 copes with the official HotpotQA layout: the mixed-type
  ``context`` / ``supporting_facts`` lists (and the nulls in the 685 file) become its ``Json``
  feature, so no hand-written schema is needed (older releases fail on them, and the ``json``
  fallback below serves instead). Only the columns a task needs are read back.
- datasets' own errors on a malformed file name neither file nor line ("JSON parse error ...
  in row 1"), and a record with a field missing just becomes null. So every record is checked
  (``check`` callback), and when datasets fails or a record is bad the file is re-read with
  the standard ``json`` module to report ``file:line: reason`` (JSON arrays too: elements are
  decoded one by one to know their line). datasets also gives up on some VALID files (a blank
  line in a JSON-lines file whose nested lists mix numbers and strings: its fallback parser
  chokes on the blank line); when the ``json`` pass finds every record good, its records are
  used instead (same values, no arrow table, which nothing downstream needs).
- Parsed files are cached per process, keyed by path, size and modification time: loading
  the 7,405-question file again costs nothing. The checked records (only the columns a task
  reads) are also kept on disk under ``$REACT_BENCH_CACHE/records`` (default
  ``~/.cache/react-bench/records``) with the same key, so a later run reads one small JSON
  file instead of importing datasets (about a second of start-up). ``RECORDS_FORMAT`` is in
  the key: bump it when a task's checks change.
- The hub is used only on request (``source=hub``) or when no local file is there
  (``source=auto``). It is never waited on: ``HF_HUB_OFFLINE=1`` or a failed 3-second TCP
  connect to the hub endpoint ends it at once with a ``DataUnavailableError`` that says what
  to set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from react_bench.errors import ConfigError
from react_bench.paths import cache_dir
from react_bench.tasks.base import DataError, DataFormatError, Pool, TaskConfig


class Recipe(Protocol):
    """How a task's files are built where no data folder is found (``tasks.hubdata.Recipe``)."""

    @property
    def files(self) -> Mapping[str, str]:
        """Split (and "wiki") -> the file, in the built folder."""
        ...

    def build(self) -> Path:
        """The built folder, built first where there is none."""
        ...


SOURCE_JSON = "source.json"  # beside built files: what they were built from (tasks.hubdata)


def origin_of(path: Path) -> dict[str, Any] | None:
    """The ``source.json`` beside a built file (None for a prepared folder's files)."""
    record = path.parent / SOURCE_JSON
    if not record.is_file():
        return None
    data = json.loads(record.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None


ENV_DATA_DIR = "REACT_BENCH_DATA_DIR"
NO_DATA_DIR = "none"  # $REACT_BENCH_DATA_DIR=none: no prepared folder, not even a default one
REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULT_DIRS = (Path("data"), Path("..") / "shared" / "data")
HUB_CONNECT_TIMEOUT_S = 3.0

Record = dict[str, Any]
# Returns None for a good record, else the reason it is bad.
RecordCheck = Callable[[Record], str | None]


class DataUnavailableError(DataError):
    """No source of the data could be reached; the message says what to set."""


def candidate_dirs() -> list[Path]:
    """The default folders, in the order they are tried."""
    bases = dict.fromkeys([Path.cwd().resolve(), REPO_ROOT])  # once where they are the same folder
    return [base / rel for base in bases for rel in _DEFAULT_DIRS]


def find_data_dir(setting: str | None = None) -> Path | None:
    """The data folder (module docstring); None when nothing is set and no default folder exists.
    ``DataUnavailableError`` when an explicitly set folder does not exist."""
    for explicit, what in ((setting, "data_dir"), (os.environ.get(ENV_DATA_DIR), ENV_DATA_DIR)):
        if explicit and explicit.strip().lower() == NO_DATA_DIR and what == ENV_DATA_DIR:
            return None
        if explicit:
            path = Path(explicit).expanduser()
            if not path.is_dir():
                raise DataUnavailableError(f"{what}={explicit} is not a folder")
            return path.resolve()
    for path in candidate_dirs():
        if path.is_dir():
            return path.resolve()
    return None


def resolve_data_dir(setting: str | None = None) -> Path:
    """The data folder (module docstring); ``DataUnavailableError`` when there is none."""
    if (folder := find_data_dir(setting)) is not None:
        return folder
    tried = ", ".join(str(p) for p in candidate_dirs())
    raise DataUnavailableError(
        f"no data folder: set data_dir or {ENV_DATA_DIR} to the folder holding hotpotqa/ and fever/. Tried: {tried}"
    )


def locate(config: TaskConfig, key: str, files: dict[str, str], recipe: Recipe | None) -> Path:
    """``files[key]`` in the data folder; where none is found (and ``source`` is not ``local``),
    the file ``recipe`` builds from the hub, built on first use (``tasks.hubdata``)."""
    if recipe is not None and config.source != "local" and find_data_dir(config.data_dir) is None:
        return recipe.build() / recipe.files[key]
    return resolve_data_dir(config.data_dir) / files[key]


# --- local files -----------------------------------------------------------------------------


def _json_array_records(text: str) -> Iterator[tuple[int, Any]]:
    """(line, element) for each element of a top-level JSON array, decoded one by one."""
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] != "[":
        raise json.JSONDecodeError("expected a JSON array or JSON lines", text, pos)
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "]":
        return
    while True:
        line = text.count("\n", 0, pos) + 1
        value, pos = decoder.raw_decode(text, pos)
        yield line, value
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        if pos >= len(text) or text[pos] != ",":
            raise json.JSONDecodeError("expected ',' or ']' between array elements", text, pos)
        pos = _skip_ws(text, pos + 1)


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _numbered(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, record) for every record of a JSON array or JSON-lines file, in order.

    Decoding errors surface as ``DataFormatError`` naming the file and line.
    """
    text = path.read_text(encoding="utf-8")
    try:
        if text.lstrip().startswith("["):
            yield from _json_array_records(text)
        else:
            yield from _json_lines(text)
    except _LineDecodeError as err:
        raise DataFormatError(str(path), err.line, f"invalid JSON at column {err.colno}: {err.msg}") from None
    except json.JSONDecodeError as err:
        raise DataFormatError(str(path), err.lineno, f"invalid JSON at column {err.colno}: {err.msg}") from None


class _LineDecodeError(ValueError):
    def __init__(self, line: int, err: json.JSONDecodeError):
        super().__init__(err.msg)
        self.line, self.colno, self.msg = line, err.colno, err.msg


def _json_lines(text: str) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            try:
                yield number, json.loads(raw)
            except json.JSONDecodeError as err:
                raise _LineDecodeError(number, err) from None


def _read_with_json(path: Path, columns: tuple[str, ...], check: RecordCheck) -> list[Record]:
    """The records read with the ``json`` module; ``DataFormatError`` at the first bad one."""
    records = []
    for line, record in _numbered(path):
        if reason := _reason(record, check):
            raise DataFormatError(str(path), line, reason)
        records.append({c: record.get(c) for c in columns})
    return records


def _reason(record: Any, check: RecordCheck) -> str | None:
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    return check(record)


@dataclass(frozen=True)
class _FileKey:
    path: str
    size: int
    mtime_ns: int
    columns: tuple[str, ...]


_CACHE: dict[tuple[_FileKey, str], list[Record]] = {}


def read_records(path: Path, columns: tuple[str, ...], check: RecordCheck, kind: str) -> list[Record]:
    """The records of a local JSON / JSON-lines file through ``datasets``, checked.

    ``columns`` are the fields read back (absent ones come back as None); ``kind`` names the
    format for the cache key and messages. Raises ``DataFormatError`` naming file and line.
    """
    if not path.is_file():
        raise DataUnavailableError(f"{path}: no such file")
    stat = path.stat()
    key = (_FileKey(str(path.resolve()), stat.st_size, stat.st_mtime_ns, columns), kind)
    if key not in _CACHE:
        stored = _records_file(key)
        records = _read_stored(stored)
        if records is None:
            records = _load_checked(path, columns, check)
            _store(stored, records)
        _CACHE[key] = records
    return _CACHE[key]


# Bump when a task's record checks or the stored form change: older stored records are then unused.
RECORDS_FORMAT = 1


def _records_file(key: tuple[_FileKey, str]) -> Path:
    """Where the checked records of a file are kept between runs (module docstring)."""
    text = json.dumps([RECORDS_FORMAT, key[1], *dataclasses.astuple(key[0])], default=list)
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return cache_dir() / "records" / f"{key[1]}-{digest}.json"


def _read_stored(path: Path) -> list[Record] | None:
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or damaged: read the source again
        return None
    return records if isinstance(records, list) and all(isinstance(r, dict) for r in records) else None


def _store(path: Path, records: list[Record]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only home: every run reads the source, as before
        pass


def _load_checked(path: Path, columns: tuple[str, ...], check: RecordCheck) -> list[Record]:
    import datasets  # a second of import time, paid only when data is read

    bars = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()  # a local file: no "Generating train split" bars
    try:
        dataset = datasets.load_dataset("json", data_files=str(path), split="train")
    except Exception:  # noqa: BLE001 - datasets wraps parse failures in many types
        # Either the file is malformed (the json pass names file and line) or it is valid and
        # datasets' reader gave up on it: its fallback parser fails on a blank line in a JSON
        # lines file whose nested lists mix numbers and strings. Then the json pass's records
        # are used, which hold the same values.
        return _read_with_json(path, columns, check)
    finally:
        if bars:
            datasets.utils.logging.enable_progress_bar()
    present = [c for c in columns if c in dataset.column_names]
    records = [{c: row.get(c) for c in columns} for row in dataset.select_columns(present).to_list()]
    for number, record in enumerate(records, start=1):
        if reason := check(record):
            _read_with_json(path, columns, check)  # raises with the line
            raise DataFormatError(str(path), None, f"record {number}: {reason}")
    return records


# --- the hub ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubSpec:
    """A split of a hub dataset: by config (``name``), or by ``data_files`` (a glob in the
    repository) at ``revision`` where the split is read from files rather than a config, e.g. the
    hub's parquet export (``refs/convert/parquet``) of a dataset built by a loading script."""

    path: str
    name: str | None
    split: str
    revision: str | None = None
    data_files: str | None = None

    def __str__(self) -> str:
        where = f"@{self.revision}" if self.revision else ""
        return f"hub:{self.path}{where}" + (f"/{self.name}" if self.name else "") + f"[{self.split}]"

    @property
    def pattern(self) -> str:
        """The glob of the split's files in the repository."""
        if self.data_files:
            return self.data_files
        return f"{self.name}/{self.split}-*" if self.name else f"data/{self.split}-*"

    def load(self, cache_dir: str | None = None, revision: str | None = None) -> Any:
        """The split as a ``datasets.Dataset`` (``revision``: a commit sha that pins it)."""
        import datasets

        revision = revision or self.revision
        if self.data_files:
            return datasets.load_dataset(
                self.path,
                data_files={self.split: self.data_files},
                split=self.split,
                revision=revision,
                cache_dir=cache_dir,
            )
        return datasets.load_dataset(self.path, self.name, split=self.split, revision=revision, cache_dir=cache_dir)

    def load_files(self, paths: list[Path], cache_dir: str | None = None) -> Any:
        """The split from its files, downloaded already (``tasks.hubdata``), by their format."""
        import datasets

        builders = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
        kinds = {builders.get(p.suffix) for p in paths}
        if len(kinds) != 1 or None in kinds:
            raise DataUnavailableError(f"{self}: files of no one readable format: {sorted(p.name for p in paths)}")
        files = {self.split: [str(p) for p in paths]}
        return datasets.load_dataset(kinds.pop(), data_files=files, split=self.split, cache_dir=cache_dir)


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _hub_endpoint() -> tuple[str, int]:
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def check_hub() -> None:
    """Fail fast (``DataUnavailableError``) when the hub cannot be reached."""
    if _hub_offline():
        raise DataUnavailableError("the Hugging Face hub is switched off here (HF_HUB_OFFLINE=1)")
    host, port = _hub_endpoint()
    try:
        socket.create_connection((host, port), timeout=HUB_CONNECT_TIMEOUT_S).close()
    except OSError as err:
        raise DataUnavailableError(f"the Hugging Face hub ({host}:{port}) is unreachable: {err}") from err


def load_hub(spec: HubSpec) -> Any:
    """A hub split as a ``datasets.Dataset``; tests replace this function with a local stand-in."""
    check_hub()
    try:
        return spec.load()
    except Exception as err:  # network, auth, or a dataset the installed datasets cannot build
        raise DataUnavailableError(f"{spec}: {type(err).__name__}: {err}") from err


def peek_record(path: Path) -> Record:
    """The first record of a JSON array or JSON-lines file, to tell its format apart."""
    if not path.is_file():
        raise DataUnavailableError(f"{path}: no such file")
    line, record = next(_numbered(path), (1, None))
    if not isinstance(record, dict):
        raise DataFormatError(str(path), line, "expected JSON objects (an array of them, or one per line)")
    return record


# --- choosing the source ---------------------------------------------------------------------


def resolve_pool(
    config: TaskConfig,
    *,
    task: str,
    files: dict[str, str],
    local_pool: Callable[[Path], Pool],
    hub_pool: Callable[[], Pool],
    recipe: Recipe | None = None,
) -> Pool:
    """The examples to select from: ``data_file``, else the split's local file or the hub.

    ``files`` maps each split to its file under the data folder. The ``offline`` split is
    local only: its file is what the offline wiki is built from. Where no data folder is found,
    ``recipe`` builds the task's files from the hub on first use (``tasks.hubdata``).
    """
    if config.data_file:
        if config.source == "hub":
            raise ConfigError("task.data_file names a local file; it cannot be combined with task.source=hub")
        path = Path(config.data_file).expanduser()
        return local_pool(path if path.is_absolute() else resolve_data_dir(config.data_dir) / path)
    if config.split not in files:
        raise ConfigError(f"split={config.split} is not one of {task}'s: {', '.join(files)}")
    rel = files[config.split]
    if config.source == "hub":
        if config.split == "offline":
            raise ConfigError(
                f"{task}: the offline split is the local file {rel}; use split=paper500 or all with the hub"
            )
        return hub_pool()
    if recipe is not None and config.source != "local" and find_data_dir(config.data_dir) is None:
        path = locate(config, config.split, files, recipe)  # built from the hub on first use
        return dataclasses.replace(local_pool(path), origin=origin_of(path))
    try:
        path = resolve_data_dir(config.data_dir) / rel
        if not path.is_file():
            raise DataUnavailableError(f"{path}: no such file")
        return local_pool(path)
    except DataUnavailableError as local_err:
        if config.source == "local" or config.split == "offline":
            raise DataUnavailableError(f"{task} {config.split}: {local_err}. {_WHAT_TO_SET.format(rel=rel)}") from None
        try:
            return hub_pool()
        except DataUnavailableError as hub_err:
            raise DataUnavailableError(
                f"{task} {config.split}: no local data ({local_err}) and no hub ({hub_err}). "
                + _WHAT_TO_SET.format(rel=rel)
            ) from None


_WHAT_TO_SET = f"Set data_dir or {ENV_DATA_DIR} to a folder holding {{rel}}, or task.data_file to the file itself"
