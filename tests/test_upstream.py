"""The authors' files, pinned and fetched on first use (``react_bench.upstream``), against a stand-in
of GitHub's raw file host (``react_bench.testing.github_raw``) over real HTTP; and ``prompt=paper``
from a clone alone, byte for byte the notebooks' first prompts.

The mechanism is tested on files the tests make (a manifest of their own, swapped in for the
project's); the project's own manifest is held to the prepared copies where a prepared folder
has them, and the whole path (a clone copied alone, a fresh HOME, the hub and the raw host at
stand-ins) runs the paper's prompts where the authors' files can be had.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx2
import pytest

from react_bench import upstream
from react_bench.testing.github_raw import RawStandIn, from_prepared
from react_bench.testing.hub_server import HubStandIn, write_fever_repo, write_hotpotqa_repo
from react_bench.testing.messages_server import MessagesServer, Reply
from tests.support import DATA, alone, eval_in, fresh_env

OWNER, COMMIT = "someone/project", "0123456789abcdef0123456789abcdef01234567"
PROMPTS = json.dumps({"react": "Question: a?\nThought 1: t\nAction 1: Finish[b]\n"}).encode()
SENTINEL_NAME = "ran.txt"


def notebook(sentinel: Path) -> bytes:
    """A notebook whose text is an assignment, beside cells that would act if the file were run."""
    cells = [
        {"cell_type": "markdown", "source": ["# Setup"]},
        {"cell_type": "code", "source": ["%pip install nothing\n", "!rm -rf /\n"]},  # not Python: skipped
        {"cell_type": "code", "source": [f"open({str(sentinel)!r}, 'w').write('ran')\n"]},
        {"cell_type": "code", "source": ['instruction = """Solve it.\n', 'Here are some examples.\n"""\n', "x = 1\n"]},
    ]
    return json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 2}).encode()


def entry(path: str, data: bytes, prepared: str | None = None) -> dict:
    return {
        "repo": OWNER,
        "commit": COMMIT,
        "path": path,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "licence": "MIT",
        "prepared": prepared,
        "what": "a test file",
    }


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A manifest of the tests' own, its files served by a raw-host stand-in; an empty cache and no
    prepared folder. Yields (stand-in, files by name, the sentinel a run notebook would write)."""
    sentinel = tmp_path / SENTINEL_NAME
    files = {"t/prompts.json": PROMPTS, "t/demo.ipynb": notebook(sentinel)}
    paths = {"t/prompts.json": "prompts/p.json", "t/demo.ipynb": "demo.ipynb"}
    manifest = {
        "files": {
            name: entry(paths[name], data, "prompts/p.json" if name == "t/prompts.json" else None)
            for name, data in files.items()
        },
        "texts": {
            "t/instruction": {
                "file": "t/demo.ipynb",
                "variable": "instruction",
                "sha256": hashlib.sha256(b"Solve it.\nHere are some examples.\n").hexdigest(),
                "prepared": ["prompts/instructions.json", "demo"],
                "what": "a test text",
            }
        },
    }
    path = tmp_path / "upstream.json"
    path.write_text(json.dumps(manifest))
    monkeypatch.setattr(upstream, "MANIFEST", path)
    upstream._manifest.cache_clear()
    empty = tmp_path / "no-prepared-files"
    empty.mkdir()
    monkeypatch.setenv("REACT_BENCH_DATA_DIR", str(empty))
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    stand_in = RawStandIn({f"/{OWNER}/{COMMIT}/{paths[n]}": d for n, d in files.items()}).start()
    monkeypatch.setenv(upstream.ENV_GITHUB, stand_in.base_url)
    yield stand_in, files, sentinel
    stand_in.stop()
    upstream._manifest.cache_clear()


def test_a_file_is_fetched_once_checked_said_and_then_read_from_the_cache(made, capsys) -> None:
    stand_in, files, _ = made
    path = upstream.fetch("t/prompts.json")
    assert path.read_bytes() == files["t/prompts.json"]
    assert path == upstream.cache_dir() / "upstream" / OWNER / COMMIT / "prompts" / "p.json"
    said = capsys.readouterr().err
    assert said == f"fetching {OWNER}@0123456:prompts/p.json (0.00 MB, MIT) from {stand_in.base_url}\n"
    assert stand_in.sent == [f"/{OWNER}/{COMMIT}/prompts/p.json"]
    assert upstream.fetch("t/prompts.json") == path  # the second time: the cache, no request, nothing said
    assert len(stand_in.requests) == 1 and capsys.readouterr().err == ""


def test_bytes_that_are_not_the_pinned_ones_are_refused_and_nothing_is_kept(made) -> None:
    stand_in, files, _ = made
    stand_in.files[f"/{OWNER}/{COMMIT}/prompts/p.json"] = files["t/prompts.json"].replace(b"b]", b"c]")
    with pytest.raises(upstream.UpstreamError, match="not someone/project@0123456:prompts/p.json") as err:
        upstream.fetch("t/prompts.json")
    assert len(str(err.value).splitlines()) == 1 and "REACT_BENCH_GITHUB" in str(err.value)
    cache = upstream.cache_dir() / "upstream"
    assert [p for p in cache.rglob("*") if p.is_file()] == []  # no file, no .part left behind


def test_an_unreachable_host_or_a_missing_file_is_one_line(made, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in, _, _ = made
    del stand_in.files[f"/{OWNER}/{COMMIT}/prompts/p.json"]
    with pytest.raises(upstream.UpstreamError, match="answered 404") as err:
        upstream.fetch("t/prompts.json")
    assert len(str(err.value).splitlines()) == 1
    monkeypatch.setenv(upstream.ENV_GITHUB, "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(upstream.UpstreamError, match="cannot be fetched.*set REACT_BENCH_GITHUB") as err:
        upstream.fetch("t/demo.ipynb")
    assert len(str(err.value).splitlines()) == 1
    assert not [p for p in (upstream.cache_dir() / "upstream").rglob("*") if p.is_file()]


def test_a_notebooks_text_is_read_as_data_and_never_run(made) -> None:
    stand_in, _, sentinel = made
    assert upstream.text("t/instruction") == "Solve it.\nHere are some examples.\n"
    assert not sentinel.exists()  # the cell that writes it was parsed, not run
    assert stand_in.sent == [f"/{OWNER}/{COMMIT}/demo.ipynb"]
    manifest = json.loads(upstream.MANIFEST.read_text())
    manifest["texts"]["t/instruction"]["variable"] = "x"  # assigned, but not a string
    upstream.MANIFEST.write_text(json.dumps(manifest))
    upstream._manifest.cache_clear()
    with pytest.raises(upstream.UpstreamError, match="assigns no string to x"):
        upstream.text("t/instruction")


def test_a_prepared_folder_is_read_first_and_held_to_the_pin(made, tmp_path, monkeypatch) -> None:
    stand_in, files, _ = made
    prepared = tmp_path / "prepared"
    (prepared / "prompts").mkdir(parents=True)
    (prepared / "prompts" / "p.json").write_bytes(files["t/prompts.json"])
    (prepared / "prompts" / "instructions.json").write_text(
        json.dumps({"demo": "Solve it.\nHere are some examples.\n"})
    )
    monkeypatch.setenv("REACT_BENCH_DATA_DIR", str(prepared))
    assert upstream.fetch("t/prompts.json") == prepared / "prompts" / "p.json"
    assert upstream.text("t/instruction") == "Solve it.\nHere are some examples.\n"
    assert stand_in.requests == []  # nothing asked of the host
    (prepared / "prompts" / "p.json").write_bytes(b"{}")
    with pytest.raises(upstream.UpstreamError, match="prepared data folder's .*p.json is not"):
        upstream.fetch("t/prompts.json")
    (prepared / "prompts" / "instructions.json").write_text(json.dumps({"demo": "Solve it now."}))
    with pytest.raises(upstream.UpstreamError, match="not the pinned one"):
        upstream.text("t/instruction")


def test_the_stand_in_answers_as_githubs_raw_host_does() -> None:
    data = b"line one\nline two\n" * 50
    stand_in = RawStandIn(
        {f"/{OWNER}/{COMMIT}/a/b.txt": data, f"/{OWNER}/{COMMIT}/bin": b"\xff\x00"}, {OWNER: {"main": COMMIT}}
    ).start()
    try:
        url = f"{stand_in.base_url}/{OWNER}/{COMMIT}/a/b.txt"
        raw = httpx2.get(url, headers={"Accept-Encoding": "gzip"})
        assert raw.status_code == 200 and raw.content == data  # decoded by the client
        assert raw.headers["content-encoding"] == "gzip" and raw.headers["content-type"] == "text/plain; charset=utf-8"
        assert raw.headers["x-content-type-options"] == "nosniff" and raw.headers["cache-control"] == "max-age=300"
        plain = httpx2.get(url, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers and int(plain.headers["content-length"]) == len(data)
        assert plain.content == data
        part = httpx2.get(url, headers={"Range": "bytes=5-8"})
        assert (part.status_code, part.content, part.headers["content-range"]) == (
            206,
            b"one\n",
            f"bytes 5-8/{len(data)}",
        )
        assert httpx2.get(url, headers={"Range": f"bytes={len(data)}-"}).status_code == 416
        again = httpx2.get(url, headers={"If-None-Match": raw.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        head = httpx2.head(url)
        assert head.status_code == 200 and head.content == b""
        assert httpx2.get(f"{stand_in.base_url}/{OWNER}/main/a/b.txt").content == data  # a branch resolves
        for missing in (f"/{OWNER}/{COMMIT}/a/B.txt", f"/{OWNER}/0123456/a/b.txt", "/nobody/x/main/a", "/x"):
            gone = httpx2.get(stand_in.base_url + missing)
            assert (gone.status_code, gone.text) == (404, "404: Not Found"), missing
        assert (
            httpx2.get(f"{stand_in.base_url}/{OWNER}/{COMMIT}/bin").headers["content-type"]
            == "application/octet-stream"
        )
        assert httpx2.post(url).status_code == 405
    finally:
        stand_in.stop()


# --- the project's own manifest ---------------------------------------------------------------


def test_the_manifest_pins_every_file_by_commit_and_sha256() -> None:
    files, texts = upstream.files(), upstream.texts()
    assert {"react/prompts_naive.json", "react/hotpotqa.ipynb", "react/WebShop.ipynb", "lats/hotpot.py"} <= set(files)
    for name, file in files.items():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", file.repo), name
        assert re.fullmatch(r"[0-9a-f]{40}", file.commit) and re.fullmatch(r"[0-9a-f]{64}", file.sha256), name
        assert file.size > 0 and file.licence and file.what, name
    prepared = [f.prepared for f in files.values() if f.prepared]
    assert len(prepared) == len(set(prepared))
    assert all(t.file in files and re.fullmatch(r"[0-9a-f]{64}", t.sha256) for t in texts.values())
    react = files["react/prompts_naive.json"]
    assert react.label == "ysymyth/ReAct@6bdb3a1:prompts/prompts_naive.json"
    assert react.url_path == "/ysymyth/ReAct/6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9/prompts/prompts_naive.json"


def test_a_prepared_folders_copies_are_the_pinned_bytes() -> None:
    if DATA["kind"] != "prepared":
        pytest.skip("needs a prepared data folder (REACT_BENCH_DATA_DIR) to hold to the pins")
    checked = [name for name, f in upstream.files().items() if f.prepared and (DATA["folder"] / f.prepared).is_file()]
    assert checked, "the prepared folder holds none of the pinned files"
    for name in checked:
        assert upstream.local(name) == DATA["folder"] / upstream.pinned(name).prepared  # checked against the sha256
    texts = [n for n, t in upstream.texts().items() if t.prepared and (DATA["folder"] / t.prepared[0]).is_file()]
    for name in texts:
        upstream.text(name)  # raises where the prepared text is not the pinned one


# --- prompt=paper from a clone alone ----------------------------------------------------------


@pytest.fixture(scope="module")
def authors_files() -> dict[str, bytes]:
    """What a raw-host stand-in can serve of the authors' files here: the prepared folder's copies,
    and any pinned file this session can fetch (``REACT_BENCH_GITHUB``) or has cached."""
    served = from_prepared(DATA["folder"]) if DATA["kind"] == "prepared" else {}
    for name in ("react/prompts_naive.json", "react/fever.json", "react/hotpotqa.ipynb"):
        file = upstream.pinned(name)
        if file.url_path not in served:
            try:
                served[file.url_path] = upstream.fetch(name).read_bytes()
            except upstream.UpstreamError:
                pass
    return served


def hub_for(tmp_path: Path, data_dir: Path) -> HubStandIn:
    records = json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())[:6]
    claims = [json.loads(line) for line in (data_dir / "fever" / "paper_test_with_evidence.jsonl").open()][:8]
    claims = [{"id": c["id"], "label": c["label"], "claim": c["question"], "evidence": c["evidence"]} for c in claims]
    pages = [json.loads(line) for line in (data_dir / "fever" / "wiki_pages_evidence_subset.jsonl").open()]
    return HubStandIn(
        {
            "hotpotqa/hotpot_qa": write_hotpotqa_repo(records, tmp_path / "hub" / "hotpot_qa"),
            "fever/fever": write_fever_repo(claims, pages, tmp_path / "hub" / "fever"),
        }
    )


def _text(content: str | list[dict]) -> str:
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


CASES = [  # task, mode, the pinned file and key, the notebook's instruction (None: none), the label
    ("hotpotqa", "react", "react/prompts_naive.json", "webthink_simple6", "react/hotpotqa.ipynb", "Question"),
    ("hotpotqa", "act", "react/prompts_naive.json", "webact_simple6", "react/hotpotqa.ipynb", "Question"),
    ("fever", "react", "react/fever.json", "webthink_simple3", None, "Claim"),
    ("fever", "act", "react/fever.json", "webact_simple3", None, "Claim"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("task", "mode", "file", "key", "notebook", "label"), CASES)
def test_a_clone_alone_sends_the_notebooks_first_prompt_byte_for_byte(
    tmp_path, data_dir, authors_files, task, mode, file, key, notebook, label
) -> None:
    needed = [n for n in (file, notebook) if n and upstream.pinned(n).url_path not in authors_files]
    if needed:
        pytest.skip(
            f"needs {', '.join(upstream.pinned(n).label for n in needed)}: set REACT_BENCH_GITHUB to a host serving it"
        )
    raw = RawStandIn(authors_files).start()
    hub = hub_for(tmp_path, data_dir)
    try:
        with hub, MessagesServer() as server:
            clone = alone(tmp_path)
            env = fresh_env(tmp_path, hub.endpoint, REACT_BENCH_GITHUB=raw.base_url, TEST_CLAUDE_KEY="local-not-real")
            args = (
                f"task={task}",
                f"mode={mode}",
                "prompt=paper",
                "model=claude-haiku-4-5",  # takes prefill: the notebook's "Thought 1:" is sent as it is
                f"model.base_url={server.base_url}",
                "model.api_key_env=TEST_CLAUDE_KEY",
                "model.max_retries=0",
                "n=1",
                f"results_dir={tmp_path / 'results'}",
            )
            step = "Thought 1:" if mode == "react" else "Action 1:"
            server.enqueue(Reply.text(" Finish[x]" if mode == "act" else " I answer.\nAction 1: Finish[x]"))
            first = eval_in(clone, env, *args)
            assert first.returncode == 0, first.stderr[-3000:]
            assert len(raw.sent) == (2 if notebook else 1), raw.sent  # the exemplars and the notebook, once each
            assert f"fetching {upstream.pinned(file).label}" in first.stderr
            (request,) = server.requests
            *user, prefill = request.body["messages"]
            assert prefill["role"] == "assistant"
            sent = "".join(_text(m["content"]) for m in user) + _text(prefill["content"])
            exemplars = json.loads(authors_files[upstream.pinned(file).url_path])[key]
            instruction = upstream.text("react/hotpotqa_instruction") if notebook else ""
            run = json.loads(next((tmp_path / "results").rglob("run.json")).read_text())
            question = json.loads(next((tmp_path / "results").rglob("examples.jsonl")).read_text().splitlines()[0])
            # the notebook: prompt = instruction + examples; prompt += question + "\n"; llm(prompt + "Thought 1:")
            assert sent == instruction + exemplars + f"{label}: {question['question']}\n" + step
            assert run["prompts"][mode]["source"].startswith(f"paper: {upstream.pinned(file).label}#{key}")
            raw.requests.clear()
            second = eval_in(clone, env, *args)  # (its answer from the request cache)
            assert second.returncode == 0, second.stderr[-2000:]
            assert raw.requests == [] and "fetching" not in second.stderr  # a second run fetches nothing
            (tmp_path / "other").mkdir()
            offline = {"REACT_BENCH_GITHUB": "http://127.0.0.1:9", "TEST_CLAUDE_KEY": "x"}  # the discard port
            third = eval_in(clone, fresh_env(tmp_path / "other", hub.endpoint, **offline), *args)
            assert third.returncode == 2
            lines = third.stderr.strip().splitlines()
            assert (
                lines[-1].startswith("error: ")
                and "REACT_BENCH_GITHUB" in lines[-1]
                and "Traceback" not in third.stderr
            )
            assert len(server.requests) == 1  # the second run's answer came from the request cache; the third sent none
    finally:
        raw.stop()
