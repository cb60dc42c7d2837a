"""The offline data built from the public hub datasets on first use, where no data folder is found.

Decisions a next engineer needs:

- A prepared data folder (``data_dir``, ``$REACT_BENCH_DATA_DIR``, ``./data``, the development
  layout's folder) is always found first: machines without the hub keep working unchanged.
  Only where none is found does a task build its data, once, under
  ``$REACT_BENCH_CACHE/data/v<BUILD_VERSION>/<task>/`` (default ``~/.cache/react-bench``).
- The sources are the hub's datasets, read through ``datasets.load_dataset`` (so ``HF_ENDPOINT``,
  ``HF_TOKEN`` and proxies work as in any Hugging Face tool): HotpotQA's distractor dev split
  (``hotpotqa/hotpot_qa``, all 7,405 questions, each with its ten paragraphs); FEVER's
  ``paper_dev`` claims (``fever/fever`` ``v1.0``) and the ``wiki_pages`` pages their evidence names.
  The built files keep the official layouts (``hotpot_dev_distractor_v1.json``; FEVER's JSONL and
  wiki-pages layout), so the task readers and the offline wiki builder are the same as for a
  prepared folder, and every question's pages are in the offline wiki built from them.
- Before anything is downloaded the hub is checked (``data.check_hub``: a 3-second connect, or
  ``HF_HUB_OFFLINE``) and the download's size is said (the hub's file listing). Offline, the
  build ends in a ``DataUnavailableError`` of one line (size, the variable to set); nothing is
  written.
- Every file is downloaded by the project itself, bounded by the size the hub's listing gives and
  a deadline for the whole transfer (``react_bench.download``), checked against the listing's
  sha256 where it has one, then read by ``datasets`` from those local files (``HubSpec.load_files``):
  a hub mirror that misbehaves costs at most the listed bytes.
- Atomic and built once: the files are written in ``.tmp-<task>-<id>/`` beside the final folder,
  under a lock (``.<task>.lock``), and renamed into place after ``source.json``; a build killed
  half-way leaves only its temporary folder, which the next build removes. The downloads
  themselves go to a cache inside the temporary folder and are deleted with it: what stays is
  the built files (and, later, the offline wiki built from them).
- ``source.json`` records the source (hub dataset, config, split), the endpoint's host, the
  revision (commit sha) and the record counts; a run copies it into run.json's ``coverage.origin``,
  so every run says which data it used.
- ``BUILD_VERSION`` names the layout: bump it when a recipe changes what it writes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, TextIO

from react_bench.download import DownloadError, download
from react_bench.paths import cache_dir
from react_bench.redact import without_userinfo
from react_bench.tasks.base import DataError
from react_bench.tasks.data import SOURCE_JSON, DataUnavailableError, HubSpec, check_hub

BUILD_VERSION = 1


@dataclass(frozen=True)
class Recipe:
    """How one task's offline data is made from the hub."""

    task: str
    specs: tuple[HubSpec, ...]  # what is downloaded, in order
    size_hint: str  # said when the hub is unreachable (the listing is not at hand then)
    write: Callable[[list[Any], Path], dict[str, int]]  # datasets in, files written, counts out
    files: Mapping[str, str]  # split (and "wiki") -> the file it is read from, in the task's folder

    def build(self) -> Path:
        return ensure_built(self)


def built_root() -> Path:
    return cache_dir() / "data" / f"v{BUILD_VERSION}"


def built_folder(recipe: Recipe) -> Path | None:
    """The task's built folder where a finished build is there."""
    folder = built_root() / recipe.task
    return folder if (folder / SOURCE_JSON).is_file() else None


def ensure_built(recipe: Recipe, out: TextIO | None = None) -> Path:
    """The task's built folder, building it first where there is none (module docstring)."""
    if (folder := built_folder(recipe)) is not None:
        return folder
    out = sys.stderr if out is None else out
    try:
        check_hub()
    except DataUnavailableError as err:
        raise DataUnavailableError(
            f"{recipe.task}: no data folder, and the first run cannot download it ({recipe.size_hint}): "
            f"{err}. Set REACT_BENCH_DATA_DIR (or data_dir) to a prepared data folder, or HF_ENDPOINT to a "
            "reachable hub mirror"
        ) from None
    root = built_root()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{recipe.task}.lock"):
        if (folder := built_folder(recipe)) is not None:  # another process built it meanwhile
            return folder
        for stale in root.glob(f".tmp-{recipe.task}-*"):  # a build killed half-way
            shutil.rmtree(stale, ignore_errors=True)
        tmp = root / f".tmp-{recipe.task}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            _build(recipe, tmp, out)
            final = root / recipe.task
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{recipe.task}: offline data built in {final}", file=out)
    return final


def _build(recipe: Recipe, tmp: Path, out: TextIO) -> None:
    from huggingface_hub import HfApi, RepoFile

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    revisions: dict[HubSpec, str] = {}  # each split pinned to the commit its listing was read at
    listed: dict[HubSpec, list[RepoFile]] = {}
    for spec in recipe.specs:
        try:
            revisions[spec] = api.dataset_info(spec.path, revision=spec.revision).sha or ""
            top = spec.pattern.split("/")[0]
            entries = api.list_repo_tree(
                spec.path, path_in_repo=top, repo_type="dataset", revision=revisions[spec], recursive=True
            )
            listed[spec] = [e for e in entries if isinstance(e, RepoFile) and fnmatch(e.path, spec.pattern)]
        except Exception as err:  # noqa: BLE001 - auth, a missing repository or revision, the network
            raise DataUnavailableError(f"{recipe.task}: {spec}: {_one_line(err)}") from None
        if not listed[spec]:
            raise DataUnavailableError(f"{recipe.task}: {spec}: the hub lists no file {spec.pattern}")
    files = [(e.path, e.size) for entries in listed.values() for e in entries]
    total = sum(size for _, size in files)
    print(
        f"{recipe.task}: no data folder; building the offline data from the Hugging Face hub "
        f"({', '.join(str(s) for s in recipe.specs)}): downloading {len(files)} files, {_mb(total)}",
        file=out,
        flush=True,
    )
    loaded = []
    for spec in recipe.specs:
        paths = [_fetch(api.endpoint, spec, revisions[spec], entry, tmp / ".hub") for entry in listed[spec]]
        try:
            loaded.append(spec.load_files(paths, cache_dir=str(tmp / ".hf")))
        except Exception as err:  # noqa: BLE001 - datasets wraps format errors in many types
            raise DataUnavailableError(f"{recipe.task}: {spec}: {_one_line(err)}") from None
    counts = recipe.write(loaded, tmp)
    del loaded
    shutil.rmtree(tmp / ".hf", ignore_errors=True)  # what stays is the built files
    shutil.rmtree(tmp / ".hub", ignore_errors=True)
    missing = sorted({rel for rel in recipe.files.values() if not (tmp / rel).is_file()})
    if missing:
        raise DataError(f"{recipe.task}: the build wrote no {', '.join(missing)}")
    record = {
        "source": [str(s) for s in recipe.specs],
        "endpoint": without_userinfo(api.endpoint),
        "revision": {str(spec): sha for spec, sha in revisions.items()},
        "records": counts,
        "bytes_downloaded": total,
        "built": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "build_version": BUILD_VERSION,
    }
    (tmp / SOURCE_JSON).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _fetch(endpoint: str, spec: HubSpec, revision: str, entry: Any, folder: Path) -> Path:
    """One listed file of ``spec`` at ``revision``, bounded by the listing's size and the download
    deadline (``react_bench.download``), checked against the listing's sha256 where it gives one
    (the hub's LFS files)."""
    from urllib.parse import quote

    from huggingface_hub.utils import build_hf_headers

    dest = folder / spec.path / entry.path
    dest.parent.mkdir(parents=True, exist_ok=True)
    url = f"{endpoint.rstrip('/')}/datasets/{spec.path}/resolve/{quote(revision, safe='')}/{quote(entry.path)}"
    label = f"{spec.path}/{entry.path}"
    try:
        got = download(url, dest, label=label, size=int(entry.size), headers=build_hf_headers())
    except DownloadError as err:
        raise DataUnavailableError(
            f"{spec}: {err}; set REACT_BENCH_DATA_DIR (or data_dir) to a prepared data folder, or HF_ENDPOINT to a "
            "reachable hub mirror"
        ) from None
    pinned = getattr(getattr(entry, "lfs", None), "sha256", None)
    if got.size != int(entry.size) or (pinned and got.sha256 != pinned):
        raise DataUnavailableError(
            f"{spec}: {label} from {without_userinfo(endpoint)} is not the file the hub lists ({int(entry.size):,} "
            f"bytes{', sha256 ' + pinned[:12] + '...' if pinned else ''}; what came back: {got.seen}); "
            "set HF_ENDPOINT to a reachable hub mirror"
        )
    return dest


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return f"{type(err).__name__}: {text[:300]}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
