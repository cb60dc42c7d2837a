"""Other projects' public files (the paper's prompts and notebooks, the authors' data, recorded
trajectories), pinned by commit and sha256, fetched on first use; the project ships none of them.

Decisions a next engineer needs:

- One manifest, ``upstream.json`` beside this module, names every such file: repository, full
  commit, path, sha256, size, licence, and its name in a prepared data folder. ``texts`` names
  strings that a notebook (or a module) assigns to a name, e.g. hotpotqa.ipynb's
  ``instruction``: they are read out of the file's source with ``ast`` (parsed, never run), and
  their own sha256 is checked too.
- Where a file comes from, first found wins: a prepared data folder (``$REACT_BENCH_DATA_DIR``,
  ``./data``, ``../shared/data``: ``tasks.data.find_data_dir``; a run's ``data_dir=`` is not read)
  under the manifest's ``prepared`` name, else under ``upstream/<owner>/<repo>/<commit>/<path>``;
  the cache ``$REACT_BENCH_CACHE/upstream/<owner>/<repo>/<commit>/<path>`` (default
  ``~/.cache/react-bench``); GitHub's raw file host, ``$REACT_BENCH_GITHUB`` (default
  ``https://raw.githubusercontent.com``), at ``/<owner>/<repo>/<commit>/<path>``. Each is checked
  against the sha256: a prepared file that differs is an error naming it, never used.
- A download is said first (what, from where, how big), written beside its final name and renamed
  into place only once its sha256 is right: nothing half-written is ever read. It is bounded by
  the manifest's size and a deadline for the whole transfer (``react_bench.download``). A
  mismatch (with what came back instead), an error status, a bound passed or an unreachable host
  is one ``UpstreamError`` line (exit 2 from the scripts) naming the file and the variable to set.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TextIO

from react_bench.download import DownloadError, download
from react_bench.errors import ConfigError
from react_bench.paths import cache_dir
from react_bench.redact import without_userinfo

MANIFEST = Path(__file__).resolve().with_name("upstream.json")
ENV_GITHUB = "REACT_BENCH_GITHUB"
DEFAULT_GITHUB = "https://raw.githubusercontent.com"
UPSTREAM_FOLDER = "upstream"  # a prepared folder's copies of the pinned files that have no prepared name


class UpstreamError(ConfigError):
    """A pinned file that cannot be had: unreachable, refused, or not the bytes pinned."""


@dataclass(frozen=True)
class Pinned:
    """One file of another project's public repository, at one commit."""

    name: str  # the manifest's key, e.g. "react/prompts_naive.json"
    repo: str  # "owner/name"
    commit: str  # the full commit sha
    path: str
    sha256: str
    size: int
    licence: str
    prepared: str | None  # its name in a prepared data folder, where one holds it
    what: str

    @property
    def url_path(self) -> str:
        return f"/{self.repo}/{self.commit}/{self.path}"

    @property
    def label(self) -> str:
        """How runs and messages name it: ``ysymyth/ReAct@6bdb3a1:prompts/prompts_naive.json``."""
        return f"{self.repo}@{self.commit[:7]}:{self.path}"


@dataclass(frozen=True)
class PinnedText:
    """A string that ``file`` assigns to ``variable`` (read as data), with its own sha256."""

    name: str
    file: str  # a Pinned's name
    variable: str
    sha256: str
    prepared: tuple[str, str] | None  # (file in a prepared data folder, key of a JSON object there)
    what: str

    @property
    def label(self) -> str:
        return f"{pinned(self.file).label}#{self.variable}"


@cache
def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def files() -> dict[str, Pinned]:
    return {name: Pinned(name=name, **row) for name, row in _manifest()["files"].items()}


def texts() -> dict[str, PinnedText]:
    found = {}
    for name, row in _manifest()["texts"].items():
        prepared = (str(row["prepared"][0]), str(row["prepared"][1])) if row.get("prepared") else None
        found[name] = PinnedText(name, row["file"], row["variable"], row["sha256"], prepared, row["what"])
    return found


def pinned(name: str) -> Pinned:
    known = files()
    if name not in known:
        raise KeyError(f"upstream.json names no file {name!r}; it has {sorted(known)}")
    return known[name]


def base_url() -> str:
    return (os.environ.get(ENV_GITHUB) or DEFAULT_GITHUB).rstrip("/")


def cached_path(file: Pinned) -> Path:
    return cache_dir() / "upstream" / file.repo / file.commit / file.path


def _in_prepared_folder(rel: str | None) -> Path | None:
    """``rel`` in the prepared data folder, where there is one that holds it."""
    from react_bench.tasks.data import find_data_dir  # lazily: reading the manifest needs no task module

    folder = find_data_dir(None) if rel else None
    if folder is None or rel is None or not (folder / rel).is_file():
        return None
    return folder / rel


def prepared_path(file: Pinned) -> Path | None:
    """The file in a prepared data folder, where there is one that holds it: under its prepared
    name, else under ``upstream/<owner>/<repo>/<commit>/<path>`` (the raw host's layout)."""
    return _in_prepared_folder(file.prepared) or _in_prepared_folder(f"{UPSTREAM_FOLDER}{file.url_path}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def local(name: str, prepared: bool = True) -> Path | None:
    """The file where it is already here (a prepared folder unless ``prepared`` is false, the
    cache), checked; None: not here."""
    file = pinned(name)
    places = [
        (prepared_path(file) if prepared else None, "the prepared data folder's"),
        (cached_path(file), "the cached"),
    ]
    for path, where in places:
        if path is None or not path.is_file():
            continue
        if _sha256(path) != file.sha256:
            raise UpstreamError(
                f"{where} {path} is not {file.label} (sha256 differs from upstream.json's): "
                "remove it or set REACT_BENCH_DATA_DIR to a folder with the pinned files"
            )
        return path
    return None


def fetch(name: str, out: TextIO | None = None, prepared: bool = True) -> Path:
    """The pinned file ``name`` as a local path: found here, else downloaded once (module docstring);
    ``prepared=False`` passes a prepared data folder by (one whose files are other data under the same names)."""
    found = local(name, prepared)
    if found is not None:
        return found
    file = pinned(name)
    url = base_url() + file.url_path
    shown = without_userinfo(url)
    print(
        f"fetching {file.label} ({file.size / 1e6:.2f} MB, {file.licence}) from {without_userinfo(base_url())}",
        file=sys.stderr if out is None else out,
        flush=True,
    )
    final = cached_path(file)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        try:
            got = download(url, tmp, label=file.label, size=file.size)
        except DownloadError as err:
            raise UpstreamError(f"{err}; {_WHAT_TO_SET}") from None
        if got.sha256 != file.sha256:
            raise UpstreamError(
                f"{shown}: the bytes served are not {file.label} (sha256 {got.sha256[:12]}..., pinned "
                f"{file.sha256[:12]}...; what came back: {got.seen}); nothing was kept. {_WHAT_TO_SET}"
            )
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return final


_WHAT_TO_SET = (
    f"set {ENV_GITHUB} to a reachable copy of GitHub's raw file host, or REACT_BENCH_DATA_DIR to a prepared data folder"
)


def assigned_strings(source: str) -> Iterator[tuple[str, str]]:
    """``(name, text)`` for each ``name = "text"`` at the top of Python ``source`` (parsed, never run);
    ``name = "text".strip()`` (SimpleQA's grader template) too: the one method applied, as data."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a notebook cell with shell or magic lines: no assignment read from it
        return
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _literal_text(node.value)
            if value is not None:
                yield node.targets[0].id, value


_STRIPS = {"strip": str.strip, "lstrip": str.lstrip, "rstrip": str.rstrip}


def _literal_text(node: ast.expr) -> str | None:
    """A string literal, or one with ``.strip()`` / ``.lstrip()`` / ``.rstrip()`` (no argument) applied."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and not node.args
        and not node.keywords
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _STRIPS
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return _STRIPS[node.func.attr](node.func.value.value)
    return None


def sources_of(path: Path) -> Iterator[str]:
    """The Python sources of a file: a notebook's code cells, in order, or a module's whole text."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        yield text
        return
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        raise UpstreamError(f"{path}: not a notebook") from None
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            yield "".join(source) if isinstance(source, list) else str(source)


def text(name: str, out: TextIO | None = None) -> str:
    """The pinned text ``name``: from a prepared folder's JSON where it holds it, else read out of
    its pinned file (fetched on first use); checked against its sha256 either way."""
    known = texts()
    if name not in known:
        raise KeyError(f"upstream.json names no text {name!r}; it has {sorted(known)}")
    item = known[name]
    found = _prepared_text(item)
    where = "the prepared data folder"
    if found is None:
        path = fetch(item.file, out)
        found = next((t for src in sources_of(path) for n, t in assigned_strings(src) if n == item.variable), None)
        where = str(path)
        if found is None:
            raise UpstreamError(f"{item.label}: {path} assigns no string to {item.variable}")
    if hashlib.sha256(found.encode()).hexdigest() != item.sha256:
        raise UpstreamError(f"{item.label}: the text read from {where} is not the pinned one (sha256 differs)")
    return found


def _prepared_text(item: PinnedText) -> str | None:
    path = _in_prepared_folder(item.prepared[0] if item.prepared else None)
    if path is None or item.prepared is None:
        return None
    value = json.loads(path.read_text(encoding="utf-8")).get(item.prepared[1])
    return value if isinstance(value, str) else None
