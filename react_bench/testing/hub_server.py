"""A local stand-in of the Hugging Face hub, enough for ``datasets.load_dataset`` and ``huggingface_hub``.

Point ``HF_ENDPOINT`` at it. It serves dataset repositories from folders, each folder being the
repository's file tree (``README.md`` with its ``configs:`` YAML, ``<config>/<split>-00000-of-00001.parquet``,
as the hub's no-script datasets are laid out), at one commit whose sha is a hash of the files.
It speaks the hub's wire protocol as ``huggingface_hub`` reads it:

- ``GET /api/datasets/<repo>`` and ``/api/datasets/<repo>/revision/<rev>``: the repository's
  info (``sha``, ``siblings``, ``cardData``, ...). A repository may hold several refs (``main``,
  ``refs/convert/parquet``: the hub's parquet export of a script-built dataset), each one commit;
  a revision is one URL-encoded path segment (``refs%2Fconvert%2Fparquet``), as clients send it.
- ``GET /api/datasets/<repo>/tree/<rev>/<path>`` (``recursive``) and
  ``POST /api/datasets/<repo>/paths-info/<rev>``: file entries with ``oid``, ``size`` and, for the
  large files, ``lfs`` (sha256, size, pointer size), as the hub stores parquet files in LFS.
- ``HEAD|GET /datasets/<repo>/resolve/<rev>/<path>``: a small file is answered directly with
  ``ETag`` and ``X-Repo-Commit``; an LFS file answers 302 to a content host (``localhost:<port>/cdn/<sha256>``,
  another origin, as the hub redirects to its CDN) with ``X-Linked-Etag`` and ``X-Linked-Size``,
  which is what the client keys its cache on. ``Range`` requests are honoured.
- Model repositories (``models=``, e.g. a tokenizer's ``vocab.json``) the same way without the
  ``datasets`` prefix: ``/<repo>/resolve/<rev>/<path>`` and ``/api/models/<repo>...``; a name asked
  under the other kind is ``RepoNotFound``, as on the hub.
- Errors as the hub gives them: an unknown repository is 401 ``X-Error-Code: RepoNotFound``
  (the hub does not tell a private repository from a missing one), an unknown revision 404
  ``RevisionNotFound``, a missing file 404 ``EntryNotFound``; each with ``{"error": ...}``.

Every request is recorded (method and path), so a test can say what was downloaded. Run as a
process for whole-command checks::

    python -m react_bench.testing.hub_server --port 8765 hotpotqa/hotpot_qa=/path/to/folder
"""

from __future__ import annotations

import argparse
import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from react_bench.testing.serve import ThreadedApp

LFS_MIN_BYTES = 1024  # files at least this large are served as LFS objects (parquet always is)
_LFS_SUFFIXES = (".parquet", ".arrow")
_LAST_MODIFIED = "2024-01-18T10:00:00.000Z"


@dataclass(frozen=True)
class HubFile:
    path: str
    data: bytes
    blob_oid: str  # git's sha1 of the blob (of the LFS pointer, for an LFS file)
    sha256: str
    lfs: bool

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "file", "oid": self.blob_oid, "size": len(self.data), "path": self.path}
        if self.lfs:
            entry["lfs"] = {"oid": self.sha256, "size": len(self.data), "pointerSize": len(self._pointer())}
        return entry

    def _pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.data)}\n".encode()


def _git_blob_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's object id, not security


def read_repo(folder: Path) -> dict[str, HubFile]:
    """The files of a repository folder, as the hub would hold them."""
    files: dict[str, HubFile] = {}
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = file.relative_to(folder).as_posix()
        data = file.read_bytes()
        sha256 = hashlib.sha256(data).hexdigest()
        lfs = rel.endswith(_LFS_SUFFIXES) or len(data) >= LFS_MIN_BYTES and not rel.endswith(".md")
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {len(data)}\n".encode()
        files[rel] = HubFile(rel, data, _git_blob_oid(pointer if lfs else data), sha256, lfs)
    return files


def _folder_entry(path: str) -> dict[str, Any]:
    return {"type": "directory", "oid": _git_blob_oid(path.encode()), "size": 0, "path": path}


def _commit_sha(files: dict[str, HubFile]) -> str:
    digest = hashlib.sha1()  # noqa: S324 - a commit id, not security
    for rel, file in sorted(files.items()):
        digest.update(f"{rel}\0{file.blob_oid}\n".encode())
    return digest.hexdigest()


def _error(status: int, code: str, message: str) -> Response:
    return JSONResponse(
        {"error": message}, status_code=status, headers={"X-Error-Code": code, "X-Error-Message": message}
    )


Branches = dict[str, dict[str, HubFile]]  # branch or ref name -> the files at its one commit


class HubStandIn:
    """Serves ``repos`` as hub dataset repositories: ``{"owner/name": folder}`` (the ``main`` branch)
    or ``{"owner/name": {"main": folder, "refs/convert/parquet": folder2}}`` (several refs); ``models``
    as model repositories (``/<owner>/<name>/resolve/...``, ``/api/models/...``: e.g. a tokenizer's files)."""

    def __init__(
        self, repos: dict[str, Path | dict[str, Path]], port: int = 0, models: dict[str, Path] | None = None
    ) -> None:
        self.repos: dict[str, Branches] = {}
        self.models = set(models or ())
        for name, spec in {**repos, **(models or {})}.items():
            refs = spec if isinstance(spec, dict) else {"main": spec}
            self.repos[name] = {ref: read_repo(Path(folder)) for ref, folder in refs.items()}
        self.shas = {
            (name, ref): _commit_sha(files) for name, refs in self.repos.items() for ref, files in refs.items()
        }
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._serving = ThreadedApp("hub stand-in")
        self._port = port

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._serving.port}"

    @property
    def content_host(self) -> str:
        """The "CDN" that LFS files redirect to: the same server under another origin (``localhost``),
        so that the client treats it as the hub's content host, as it does the real one."""
        return f"http://localhost:{self._serving.port}"

    def downloads(self) -> list[str]:
        """Paths of the files whose content was sent (GET on resolve or on the content host)."""
        return [path for method, path in self.requests if method == "GET" and ("/resolve/" in path or "/cdn/" in path)]

    # --- requests -----------------------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        """Every hub route, parsed from the raw path: a revision is one URL-encoded segment
        (``refs%2Fconvert%2Fparquet``), as the client sends it, and may hold slashes once decoded."""
        raw = request.scope.get("raw_path", b"").decode("latin-1").split("?", 1)[0]
        with self._lock:
            self.requests.append((request.method, unquote(raw)))
        parts = raw.strip("/").split("/")
        if parts[:1] == ["cdn"] and len(parts) == 2:
            return self._cdn(request, parts[1])
        api = parts[:2] in (["api", "datasets"], ["api", "models"])
        model = parts[:2] == ["api", "models"] or parts[:1] not in (["datasets"], ["api"])
        if api:
            parts = parts[2:]
        elif parts[:1] == ["datasets"]:
            parts = parts[1:]
        elif not model:
            return Response("Not Found", status_code=404)
        if len(parts) < 2:
            return Response("Not Found", status_code=404)
        name = f"{unquote(parts[0])}/{unquote(parts[1])}"
        if name not in self.repos or (name in self.models) != model:
            return _error(401, "RepoNotFound", f"Repository Not Found for url: {request.url}.")
        rest = parts[2:]
        if api and not rest:
            return self._info(name, "main")
        if len(rest) < 2:
            return Response("Not Found", status_code=404)
        verb, rev, path = rest[0], unquote(rest[1]), unquote("/".join(rest[2:]))
        if api and verb == "revision":
            return self._info(name, unquote("/".join(rest[1:])))
        found = self._at(name, rev)
        if found is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        sha, files = found
        if api and verb == "tree":
            return self._tree(files, path, rev, request.query_params.get("recursive", "").lower() in {"1", "true"})
        if api and verb == "paths-info" and request.method == "POST":
            form = await request.form()
            return self._paths_info(files, [str(p) for p in form.getlist("paths")])
        if not api and verb == "resolve" and request.method in {"GET", "HEAD"}:
            return self._resolve(request, name, sha, files.get(path))
        return Response("Not Found", status_code=404)

    def _at(self, name: str, rev: str) -> tuple[str, dict[str, HubFile]] | None:
        """The commit and files of a branch or ref name (``refs/heads/main`` too) or a commit sha."""
        for ref, files in self.repos[name].items():
            sha = self.shas[(name, ref)]
            if rev in {ref, sha, f"refs/heads/{ref}"}:
                return sha, files
        return None

    def _info(self, name: str, rev: str) -> Response:
        found = self._at(name, rev)
        if found is None:
            return _error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        sha, files = found
        return JSONResponse(
            {
                "_id": sha[:24],
                "id": name,
                "author": name.split("/")[0],
                "sha": sha,
                "lastModified": _LAST_MODIFIED,
                "private": False,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "cardData": {},
                "siblings": [{"rfilename": rel} for rel in files],
                "createdAt": _LAST_MODIFIED,
                "usedStorage": sum(len(f.data) for f in files.values()),
            }
        )

    def _tree(self, files: dict[str, HubFile], path: str, rev: str, recursive: bool) -> Response:
        path = path.strip("/")
        if path and path not in files and not any(rel.startswith(path + "/") for rel in files):
            return _error(404, "EntryNotFound", f'{path} does not exist on "{rev}"')
        base = f"{path}/" if path else ""
        entries: dict[str, dict[str, Any]] = {}
        for rel, file in files.items():
            if not rel.startswith(base):
                continue
            parts = rel[len(base) :].split("/")
            if len(parts) == 1 or recursive:
                for depth in range(1, len(parts)):  # the folders on the way, as the hub lists them
                    folder = base + "/".join(parts[:depth])
                    entries.setdefault(folder, _folder_entry(folder))
                entries[rel] = file.entry()
            else:
                folder = base + parts[0]
                entries.setdefault(folder, _folder_entry(folder))
        return JSONResponse(list(entries.values()))

    def _paths_info(self, files: dict[str, HubFile], wanted: list[str]) -> Response:
        infos: list[dict[str, Any]] = []
        for path in (p.strip("/") for p in wanted):
            if path in files:
                infos.append(files[path].entry())
            elif any(rel.startswith(path + "/") for rel in files):
                infos.append(_folder_entry(path))
        return JSONResponse(infos)

    def _resolve(self, request: Request, name: str, sha: str, file: HubFile | None) -> Response:
        if file is None:
            return _error(404, "EntryNotFound", "Entry not found")
        headers = {"X-Repo-Commit": sha, "Accept-Ranges": "bytes", "ETag": f'"{file.blob_oid}"'}
        if file.lfs:
            headers |= {"X-Linked-Etag": f'"{file.sha256}"', "X-Linked-Size": str(len(file.data))}
            location = f"{self.content_host}/cdn/{file.sha256}?repo={quote(name)}"
            return RedirectResponse(location, status_code=302, headers=headers)
        return _content(request, file.data, headers)

    def _cdn(self, request: Request, sha256: str) -> Response:
        for refs in self.repos.values():
            for files in refs.values():
                for file in files.values():
                    if file.sha256 == sha256:
                        return _content(request, file.data, {"ETag": f'"{sha256}"', "Accept-Ranges": "bytes"})
        return Response("Not Found", status_code=404)

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> HubStandIn:
        app = Starlette(routes=[Route("/{rest:path}", self._handle, methods=["GET", "HEAD", "POST"])])
        self._serving.start(app, self._port)
        return self

    def stop(self) -> None:
        self._serving.stop()

    def __enter__(self) -> HubStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _content(request: Request, data: bytes, headers: dict[str, str]) -> Response:
    """The bytes, or the part a ``Range: bytes=a-b`` header asks for (206)."""
    spec = request.headers.get("range", "")
    if spec.startswith("bytes="):
        first, _, last = spec[len("bytes=") :].partition("-")
        start = int(first) if first else max(len(data) - int(last), 0)
        end = min(int(last), len(data) - 1) if first and last else len(data) - 1
        if start >= len(data):
            return Response(status_code=416, headers={"Content-Range": f"bytes */{len(data)}"})
        part = data[start : end + 1]
        headers = headers | {"Content-Range": f"bytes {start}-{end}/{len(data)}"}
        return Response(
            part if request.method == "GET" else b"",
            status_code=206,
            headers=headers | {"Content-Length": str(len(part))},
        )
    return Response(data if request.method == "GET" else b"", headers=headers | {"Content-Length": str(len(data))})


# --- repository folders in the hub's layout ------------------------------------------------------

HOTPOTQA_CARD = """---
license: cc-by-sa-4.0
pretty_name: HotpotQA
configs:
- config_name: distractor
  data_files:
  - split: validation
    path: distractor/validation-*
---
# HotpotQA (a slice served by react-bench's hub stand-in)
"""


def write_hotpotqa_repo(records: list[dict[str, Any]], folder: Path, train: list[dict[str, Any]] | None = None) -> Path:
    """``hotpotqa/hotpot_qa``'s layout (distractor validation, and train where ``train`` is given)
    from records in the official layout."""
    import pyarrow.parquet as pq

    (folder / "distractor").mkdir(parents=True, exist_ok=True)
    card = HOTPOTQA_CARD
    for split, rows_of in (("validation", records), ("train", train)):
        if rows_of is None:
            continue
        pq.write_table(_hotpotqa_table(rows_of), folder / "distractor" / f"{split}-00000-of-00001.parquet")
        if split == "train":
            card = card.replace("  data_files:\n", "  data_files:\n  - split: train\n    path: distractor/train-*\n")
    (folder / "README.md").write_text(card, encoding="utf-8")
    return folder


def _hotpotqa_table(records: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    rows = [
        {
            "id": r["_id"],
            "question": r["question"],
            "answer": r["answer"],
            "type": r.get("type") or "",
            "level": r.get("level") or "",
            "supporting_facts": {
                "title": [f[0] for f in r.get("supporting_facts") or []],
                "sent_id": [int(f[1]) for f in r.get("supporting_facts") or []],
            },
            "context": {"title": [c[0] for c in r["context"]], "sentences": [list(c[1]) for c in r["context"]]},
        }
        for r in records
    ]
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("question", pa.string()),
            ("answer", pa.string()),
            ("type", pa.string()),
            ("level", pa.string()),
            ("supporting_facts", pa.struct([("title", pa.list_(pa.string())), ("sent_id", pa.list_(pa.int32()))])),
            ("context", pa.struct([("title", pa.list_(pa.string())), ("sentences", pa.list_(pa.list_(pa.string())))])),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


FEVER_SCRIPT = """# A dataset loading script: datasets 4+ refuses to run it (the hub's fever/fever main branch has one)
raise RuntimeError("not run")
"""


def write_fever_repo(claims: list[dict[str, Any]], pages: list[dict[str, Any]], folder: Path) -> dict[str, Path]:
    """``fever/fever`` as the hub has it: a loading script on ``main``, and its parquet export on
    ``refs/convert/parquet`` (``v1.0/paper_dev`` one row per evidence sentence, ``wiki_pages``),
    from claims in ``paper_dev.jsonl``'s layout and pages in the wiki-pages layout."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for claim in claims:
        items = [item for group in claim.get("evidence") or [] for item in group] or [[0, 0, None, None]]
        for annotation, evidence, url, line in items:
            rows.append(
                {
                    "id": int(claim["id"]),
                    "label": claim["label"],
                    "claim": claim["claim"],
                    "evidence_annotation_id": int(annotation or 0),
                    "evidence_id": int(evidence or 0),
                    "evidence_wiki_url": url or "",
                    "evidence_sentence_id": -1 if line is None else int(line),
                }
            )
    claim_schema = pa.schema(
        [("id", pa.int32()), ("label", pa.string()), ("claim", pa.string()), ("evidence_annotation_id", pa.int32())]
        + [("evidence_id", pa.int32()), ("evidence_wiki_url", pa.string()), ("evidence_sentence_id", pa.int32())]
    )
    page_schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("lines", pa.string())])
    main, export = folder / "main", folder / "parquet"
    main.mkdir(parents=True, exist_ok=True)
    (main / "README.md").write_text("---\nlicense: cc-by-sa-3.0\npretty_name: FEVER\n---\n# FEVER\n", encoding="utf-8")
    (main / "fever.py").write_text(FEVER_SCRIPT, encoding="utf-8")
    for rel, table in (
        ("v1.0/paper_dev/0000.parquet", pa.Table.from_pylist(rows, schema=claim_schema)),
        ("wiki_pages/wikipedia_pages/0000.parquet", pa.Table.from_pylist(pages, schema=page_schema)),
    ):
        (export / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, export / rel)
    return {"main": main, "refs/convert/parquet": export}


def repos_from_prepared(data_dir: Path, folder: Path) -> dict[str, Path | dict[str, Path]]:
    """``hotpotqa/hotpot_qa`` and ``fever/fever`` in the hub's layouts, written under ``folder``
    from a prepared data folder's copies: HotpotQA's distractor questions with their paragraphs
    (validation) and its train questions (train); FEVER's claims with gold evidence and their
    pages. What a CI run serves so that a task's first run downloads as a user's clone does."""
    import json

    hotpot = data_dir / "hotpotqa"
    train_file = hotpot / "hotpot_train_distractor_200.json"
    records = json.loads((hotpot / "hotpot_dev_distractor_685.json").read_text(encoding="utf-8"))
    train = json.loads(train_file.read_text(encoding="utf-8")) if train_file.is_file() else None
    with (data_dir / "fever" / "paper_test_with_evidence.jsonl").open(encoding="utf-8") as f:
        claims = [json.loads(line) for line in f if line.strip()]
    claims = [{"id": c["id"], "label": c["label"], "claim": c["question"], "evidence": c["evidence"]} for c in claims]
    with (data_dir / "fever" / "wiki_pages_evidence_subset.jsonl").open(encoding="utf-8") as f:
        pages = [{k: p[k] for k in ("id", "text", "lines")} for p in map(json.loads, f) if p]
    return {
        "hotpotqa/hotpot_qa": write_hotpotqa_repo(records, folder / "hotpot_qa", train),
        "fever/fever": dict(write_fever_repo(claims, pages, folder / "fever")),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--prepared", type=Path, help="a prepared data folder: serve hotpotqa/hotpot_qa and fever/fever made from it"
    )
    parser.add_argument("repos", nargs="*", help="owner/name=folder, or owner/name@ref=folder for another ref")
    args = parser.parse_args(argv)
    repos: dict[str, Path | dict[str, Path]] = {}
    if args.prepared is not None:
        import tempfile

        repos |= repos_from_prepared(args.prepared, Path(tempfile.mkdtemp(prefix="react-bench-hub-")))
    for spec in args.repos:
        repo, folder = spec.split("=", 1)
        name, _, ref = repo.partition("@")
        refs = repos.setdefault(name, {})
        assert isinstance(refs, dict), f"{name} is served from --prepared already"
        refs[ref or "main"] = Path(folder)
    hub = HubStandIn(repos, port=args.port).start()
    print(hub.endpoint, flush=True)
    hub._serving.wait()


if __name__ == "__main__":
    main()
