"""A clone anywhere runs: the offline data built from the hub on first use (``tasks.hubdata``).

Everything that downloads runs in a subprocess, as a user's run does: ``datasets`` and
``huggingface_hub`` read ``HF_ENDPOINT`` when they are imported. The hub is the stand-in of
``react_bench.testing.hub_server`` (real HTTP, the hub's routes, headers and error codes)
serving a slice of the offline data in the hub's own layouts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.tasks import data as task_data
from react_bench.tasks import hubdata
from react_bench.tasks.base import TaskConfig
from react_bench.tasks.fever import exemplar_ids
from react_bench.tasks.hotpotqa import HotpotQATask
from react_bench.testing.hub_server import HubStandIn, write_fever_repo, write_hotpotqa_repo
from tests.support import alone, eval_in, fresh_env

HOTPOT_N = 12
FEVER_N = 40


@pytest.fixture(scope="module")
def hotpot_records(data_dir: Path) -> list[dict]:
    return json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())[:HOTPOT_N]


@pytest.fixture(scope="module")
def fever_slice(data_dir: Path) -> tuple[list[dict], list[dict]]:
    """Claims (paper_dev's layout) and every page of the evidence subset, plus pages no claim names."""
    lines = (data_dir / "fever" / "paper_test_with_evidence.jsonl").read_text().splitlines()[:FEVER_N]
    claims = [json.loads(line) for line in lines]
    claims = [{"id": c["id"], "label": c["label"], "claim": c["question"], "evidence": c["evidence"]} for c in claims]
    pages = [json.loads(line) for line in (data_dir / "fever" / "wiki_pages_evidence_subset.jsonl").open()]
    return claims, pages


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory, hotpot_records, fever_slice) -> dict:
    root = tmp_path_factory.mktemp("hub")
    return {
        "hotpotqa/hotpot_qa": write_hotpotqa_repo(hotpot_records, root / "hotpot_qa"),
        "fever/fever": write_fever_repo(*fever_slice, root / "fever"),
    }


@pytest.fixture
def hub(repos: dict):
    with HubStandIn(repos) as stand_in:
        yield stand_in


def built(home: Path) -> Path:
    return home / ".cache" / "react-bench" / "data" / f"v{hubdata.BUILD_VERSION}"


def py_in(clone: Path, env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=clone, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_clone_alone_builds_its_data_from_the_hub_then_never_downloads_again(tmp_path, hub) -> None:
    pytest.importorskip("llama_cpp", reason="the local extra is not installed (make setup installs it)")
    clone, env = alone(tmp_path), fresh_env(tmp_path, hub.endpoint)
    assert not (clone.parent / "shared").exists() and not (clone / "data").exists()
    first = eval_in(clone, env, "task=hotpotqa", f"results_dir={tmp_path / 'results'}")  # make eval's command
    assert first.returncode == 0, first.stderr[-3000:]
    assert "building the offline data from the Hugging Face hub" in first.stderr
    assert "downloading 1 files" in first.stderr
    parquet = [p for p in hub.downloads() if "/cdn/" in p]
    assert len(parquet) == 1  # the split's one parquet file, through the hub's redirect to its content host
    run_dir = Path(next(line for line in first.stdout.splitlines() if line.startswith("results: ")).split()[1])
    examples = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]
    assert len(examples) == 5  # the local model's default n
    folder = built(Path(env["HOME"])) / "hotpotqa"
    source = json.loads((folder / "source.json").read_text())
    assert source["records"] == {"questions": HOTPOT_N, "pages": source["records"]["pages"]}
    assert source["revision"] == {
        "hub:hotpotqa/hotpot_qa/distractor[validation]": hub.shas[("hotpotqa/hotpot_qa", "main")]
    }
    run = json.loads((run_dir / "run.json").read_text())
    assert run["coverage"]["origin"] == source  # the run says which data it used
    assert run["coverage"]["source"] == str(folder / "hotpot_dev_distractor_v1.json")

    hub.requests.clear()
    second = eval_in(clone, env, "task=hotpotqa", f"results_dir={tmp_path / 'results'}")
    assert second.returncode == 0, second.stderr[-3000:]
    assert hub.requests == []  # built once: the second run does not even ask the hub
    assert "building" not in second.stderr


def test_hub_unreachable_one_line_exit_2_and_nothing_written(tmp_path) -> None:
    clone = alone(tmp_path)
    for extra in ({}, {"HF_HUB_OFFLINE": "1"}):
        env = fresh_env(tmp_path, "http://127.0.0.1:9", **extra)  # the discard port: nothing listens
        result = eval_in(clone, env, "task=hotpotqa", f"results_dir={tmp_path / 'results'}")
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
        assert lines[0].startswith("error: hotpotqa: no data folder")
        assert "REACT_BENCH_DATA_DIR" in lines[0] and "45.7 MB" in lines[0]
        assert ("HF_HUB_OFFLINE" in lines[0]) == bool(extra)
        assert not built(Path(env["HOME"])).exists()
        assert not (tmp_path / "results").exists()


def test_a_killed_build_leaves_nothing_half_made_and_the_next_build_clears_it(tmp_path, hub) -> None:
    clone, env = alone(tmp_path), fresh_env(tmp_path, hub.endpoint)
    dying = """
import dataclasses, os, signal
from react_bench.tasks import hotpotqa, hubdata
def write(datasets, folder):
    (folder / hotpotqa.BUILT_FILE).write_text('[{"_id": "half')
    os.kill(os.getpid(), signal.SIGKILL)
hubdata.ensure_built(dataclasses.replace(hotpotqa.RECIPE, write=write))
"""
    killed = py_in(clone, env, dying)
    assert killed.returncode == -9
    root = built(Path(env["HOME"]))
    assert [p.name for p in root.iterdir() if not p.name.endswith(".lock")][0].startswith(".tmp-hotpotqa-")
    assert not (root / "hotpotqa").exists()  # no task folder: a run does not find half a build

    reader = """
from react_bench.tasks.base import TaskConfig
from react_bench.tasks.fever import exemplar_ids
from react_bench.tasks.hotpotqa import HotpotQATask
print(len(HotpotQATask().examples(TaskConfig(split="offline"))))
"""
    rebuilt = py_in(clone, env, reader)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.split() == [str(HOTPOT_N)]
    assert sorted(p.name for p in root.iterdir() if not p.name.endswith(".lock")) == ["hotpotqa"]


def test_fever_claims_and_their_evidence_pages_from_the_hubs_parquet_export(tmp_path, hub, fever_slice) -> None:
    clone, env = alone(tmp_path), fresh_env(tmp_path, hub.endpoint)
    code = """
import json
from react_bench.tasks.base import TaskConfig
from react_bench.tasks.fever import exemplar_ids
from react_bench.tasks.fever import FeverTask
task = FeverTask()
examples = task.examples(TaskConfig(split="offline"))
wiki = task.local_wiki(TaskConfig(split="offline"))
print(json.dumps({"ids": [e.id for e in examples], "titles": [e.metadata["evidence_titles"] for e in examples],
                  "dev": [e.metadata["dev_index"] for e in examples], "wiki": str(wiki)}))
"""
    result = py_in(clone, env, code)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    claims, pages = fever_slice
    rows = [(str(c["id"]), row) for row, c in enumerate(claims) if str(c["id"]) not in exemplar_ids()]
    assert out["ids"] == [id_ for id_, _ in rows]  # one example per claim, in the hub's order (exemplars left out)
    assert out["dev"] == [row for _, row in rows]
    named = {title for titles in out["titles"] for title in titles}
    kept_claims = [c for c in claims if str(c["id"]) not in exemplar_ids()]
    assert named == {item[2] for c in kept_claims for group in c["evidence"] for item in group if item[2]}
    expected = {item[2] for c in claims for group in c["evidence"] for item in group if item[2]}
    folder = built(Path(env["HOME"])) / "fever"
    kept = [json.loads(line)["id"] for line in (folder / "wiki_pages_evidence.jsonl").read_text().splitlines()]
    assert set(kept) == expected & {p["id"] for p in pages} and len(kept) < len(pages)  # only the named pages
    source = json.loads((folder / "source.json").read_text())
    export = hub.shas[("fever/fever", "refs/convert/parquet")]
    assert set(source["revision"].values()) == {export}  # read at the export's commit, not main's script
    assert source["records"]["claims"] == len(claims)
    # The hub's main branch holds a loading script: the build never asked for it.
    assert not any(path.endswith("/fever.py") and hub.shas[("fever/fever", "main")] in path for _, path in hub.requests)


def test_a_prepared_folder_is_found_first_and_source_local_never_builds(tmp_path, monkeypatch, hub, data_dir):
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("REACT_BENCH_DATA_DIR", str(data_dir))
    examples = HotpotQATask().examples(TaskConfig(split="offline", n=3))
    assert len(examples) == 3
    assert hub.requests == [] and not (tmp_path / "cache" / "data").exists()

    monkeypatch.delenv("REACT_BENCH_DATA_DIR")
    monkeypatch.setattr(task_data, "_DEFAULT_DIRS", ())
    with pytest.raises(task_data.DataUnavailableError, match="no data folder"):
        HotpotQATask().examples(TaskConfig(split="offline", source="local"))
    assert hub.requests == [] and not (tmp_path / "cache" / "data").exists()


def test_the_stand_in_answers_as_the_hub_does(tmp_path, hub) -> None:
    """Errors and headers the client keys on: huggingface_hub's own exceptions, LFS redirects, ranges."""
    import httpx2
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    api = HfApi(endpoint=hub.endpoint)
    with pytest.raises(RepositoryNotFoundError):
        api.dataset_info("nobody/nothing")
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("hotpotqa/hotpot_qa", revision="v9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            "hotpotqa/hotpot_qa", "nope.json", repo_type="dataset", endpoint=hub.endpoint, cache_dir=tmp_path
        )
    info = api.dataset_info("fever/fever", revision="refs/convert/parquet")
    assert info.sha == hub.shas[("fever/fever", "refs/convert/parquet")] != hub.shas[("fever/fever", "main")]
    url = f"{hub.endpoint}/datasets/hotpotqa/hotpot_qa/resolve/main/distractor/validation-00000-of-00001.parquet"
    head = httpx2.head(url)
    assert head.status_code == 302 and head.headers["location"].startswith(hub.content_host)
    assert head.headers["x-repo-commit"] == hub.shas[("hotpotqa/hotpot_qa", "main")]
    size = int(head.headers["x-linked-size"])
    part = httpx2.get(head.headers["location"], headers={"Range": "bytes=4-11"})
    assert part.status_code == 206 and len(part.content) == 8
    assert part.headers["content-range"] == f"bytes 4-11/{size}"


def test_no_data_dir_means_no_prepared_folder_not_even_a_default(tmp_path, monkeypatch) -> None:
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REACT_BENCH_DATA_DIR", "none")
    assert task_data.find_data_dir(None) is None  # ./data is there, and not used
    assert task_data.find_data_dir(str(tmp_path / "data")) == (tmp_path / "data").resolve()  # data_dir= still is
    monkeypatch.delenv("REACT_BENCH_DATA_DIR")
    assert task_data.find_data_dir(None) == (tmp_path / "data").resolve()


def test_the_hub_ci_serves_from_a_prepared_folder_builds_both_tasks_data(data_dir, tmp_path, monkeypatch) -> None:
    """CI's main pass (.ci/run): the hub stand-in over a data folder's copies (the session's: prepared, or
    generated on a clone alone), and a task's first build from it as a user's clone makes it (bounded
    downloads, then datasets over the local files)."""
    from react_bench.tasks import fever, hotpotqa
    from react_bench.testing.hub_server import repos_from_prepared

    repos = repos_from_prepared(data_dir, tmp_path / "hub")
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    with HubStandIn(repos) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        hot = hotpotqa.RECIPE.build()
        fev = fever.RECIPE.build()
        sent = hub.downloads()
    copied = json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())
    built = json.loads((hot / hotpotqa.RECIPE.files["wiki"]).read_text())
    assert [r["_id"] for r in built] == [r["_id"] for r in copied]
    assert [r["context"] for r in built] == [r["context"] for r in copied]
    claims = (fev / fever.RECIPE.files["offline"]).read_text().splitlines()
    assert len(claims) == len((data_dir / "fever" / "paper_test_with_evidence.jsonl").read_text().splitlines())
    assert (fev / fever.RECIPE.files["wiki"]).stat().st_size > 0
    resolved = sorted(p.rsplit("/", 1)[1] for p in sent if "/resolve/" in p)  # (each redirected once to the CDN)
    assert resolved == ["0000.parquet", "0000.parquet", "validation-00000-of-00001.parquet"]  # one file a split
