"""Tasks: the paper's sample, each local format, malformed files, missing examples, sources."""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from react_bench.errors import ConfigError
from react_bench.tasks import (
    PAPER500,
    DataFormatError,
    DataUnavailableError,
    Example,
    FeverTask,
    HotpotQATask,
    MissingExamplesError,
    TaskConfig,
    load_task,
    resolve_data_dir,
)
from react_bench.tasks import data as task_data
from react_bench.tasks import fever as fever_module

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return str(FIXTURES / name)


@pytest.fixture(autouse=True)
def _no_hub_and_no_exemplars(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The hub is off in tests; the prompts module's exemplar file must not change what we see."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(fever_module, "FEVER_EXEMPLAR_IDS_FILE", tmp_path_factory.mktemp("none") / "absent.json")


# --- the paper's sample ----------------------------------------------------------------------------


def test_paper500_is_the_original_sampling(paper_data: Path) -> None:
    idxs = list(range(7405))
    random.Random(233).shuffle(idxs)
    assert PAPER500 == tuple(idxs[:500])
    assert len(set(PAPER500)) == 500
    first_five = idxs[:5]
    dev = json.loads((paper_data / "hotpotqa/hotpot_dev_v1_simplified.json").read_text())
    examples = HotpotQATask().examples(TaskConfig(split="paper500", n=5, data_dir=str(paper_data)))
    assert [e.metadata["dev_index"] for e in examples] == first_five
    assert [e.question for e in examples] == [dev[i]["question"] for i in first_five]
    assert [e.gold for e in examples] == [dev[i]["answer"] for i in first_five]
    # The paper's first question (ysymyth/ReAct hotpotqa.ipynb runs idxs[:500] in this order).
    assert "Irene Jacob" in examples[0].question


def test_fever_paper500_uses_the_same_rows_of_paper_dev(paper_data: Path) -> None:
    lines = (paper_data / "fever/paper_dev.jsonl").read_text().splitlines()
    examples = FeverTask().examples(TaskConfig(split="paper500", data_dir=str(paper_data)))
    assert len(examples) == 500
    for example, index in zip(examples[:5], PAPER500[:5]):
        row = json.loads(lines[index])
        assert (example.id, example.question, example.gold) == (str(row["id"]), row["claim"], row["label"])


# --- each local format, on the shared data and on small fixtures --------------------------------


def test_hotpotqa_offline_split_is_the_685_file(prepared_dir: Path) -> None:
    task = HotpotQATask()
    examples = task.examples(TaskConfig())
    assert len(examples) == 685 and task.coverage is not None and task.coverage.found == 685
    assert {e.metadata["type"] for e in examples} == {"bridge", "comparison"}
    assert all(e.metadata["level"] and e.metadata["supporting_titles"] for e in examples)
    assert all(isinstance(e.metadata["dev_index"], int) for e in examples)
    assert not any(e.id.startswith("dev-") for e in examples)


def test_hotpotqa_all_and_borrowed_ids(prepared_dir: Path) -> None:
    task = HotpotQATask()
    everything = task.examples(TaskConfig(split="all"))
    assert len(everything) == 7405
    offline = {e.metadata["dev_index"]: e.id for e in task.examples(TaskConfig())}
    paper = task.examples(TaskConfig(split="paper500"))
    borrowed = [e for e in paper if not e.id.startswith("dev-")]
    assert len(borrowed) == 39  # the 685 file's share of the paper's 500
    assert all(offline[e.metadata["dev_index"]] == e.id for e in borrowed)
    assert all(e.id == f"dev-{e.metadata['dev_index']}" for e in paper if e not in borrowed)


def test_fever_offline_split_is_the_evidence_file(prepared_dir: Path) -> None:
    examples = FeverTask().examples(TaskConfig())
    assert len(examples) == 9999 and len({e.id for e in examples}) == 9999
    assert {e.gold for e in examples} == {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}
    assert all(e.metadata["label"] == e.gold for e in examples)
    verifiable = [e for e in examples if e.gold != "NOT ENOUGH INFO"]
    assert all(e.metadata["evidence_titles"] for e in verifiable)


def test_official_distractor_format() -> None:
    examples = HotpotQATask().examples(TaskConfig(split="all", data_file=fixture("hotpot_official_small.json")))
    assert [e.id for e in examples] == ["fx-001", "fx-002", "fx-003"]
    first = examples[0]
    assert (first.gold, first.metadata["type"], first.metadata["level"]) == ("the Wend", "bridge", "easy")
    # titles from supporting_facts, each once, in order of first mention
    assert first.metadata["supporting_titles"] == ["Alderby", "River Wend"]
    # a 3-record file without dev_index cannot be placed in the dev set: no paper500 rows
    with pytest.raises(MissingExamplesError):
        HotpotQATask().examples(TaskConfig(split="paper500", data_file=fixture("hotpot_official_small.json")))


def test_simplified_format() -> None:
    examples = HotpotQATask().examples(TaskConfig(split="all", data_file=fixture("hotpot_simplified_small.json")))
    assert [(e.id, e.metadata["dev_index"], e.metadata["type"]) for e in examples] == [
        ("dev-0", 0, "bridge"),
        ("dev-1", 1, "comparison"),
        ("dev-2", 2, "bridge"),
    ]
    assert examples[2].gold == "Ida Venn" and examples[0].metadata["level"] is None


def test_fever_paper_dev_format_with_a_blank_line() -> None:
    # datasets' JSON reader gives up on this valid file (blank line + mixed-type evidence).
    examples = FeverTask().examples(TaskConfig(split="all", data_file=fixture("fever_paper_dev_small.jsonl")))
    assert [(e.id, e.gold, e.metadata["dev_index"]) for e in examples] == [
        ("501", "SUPPORTS", 0),
        ("502", "NOT ENOUGH INFO", 1),
        ("503", "REFUTES", 2),
    ]
    assert examples[2].metadata["evidence_titles"] == ["Brackwater", "Alderby"]
    assert examples[1].metadata["evidence_titles"] == []


def test_fever_evidence_format() -> None:
    examples = FeverTask().examples(TaskConfig(split="all", data_file=fixture("fever_evidence_small.jsonl")))
    assert [(e.id, e.question, e.gold) for e in examples] == [
        ("601", "The Wend is a river.", "SUPPORTS"),
        ("602", "Brackwater was founded in 1905.", "REFUTES"),
    ]
    assert examples[0].metadata["dev_index"] is None


@pytest.mark.parametrize(
    ("task", "name", "line", "reason"),
    [
        ("fever", "bad_json_line3.jsonl", 3, "invalid JSON"),
        ("fever", "missing_label_line4.jsonl", 4, "'label'"),
        ("fever", "unknown_label_line2.jsonl", 2, "'TRUE'"),
        ("hotpotqa", "bad_array_line4.json", 4, "invalid JSON"),
        ("hotpotqa", "answer_not_text_line3.json", 3, "'answer' must be a string"),
        ("hotpotqa", "distractor_missing_id_line2.json", 2, "missing field '_id'"),
    ],
)
def test_malformed_files_are_reported_with_file_and_line(task: str, name: str, line: int, reason: str) -> None:
    with pytest.raises(DataFormatError) as caught:
        load_task(task).examples(TaskConfig(split="all", data_file=fixture(name)))
    assert caught.value.line == line
    assert f"{name}:{line}:" in str(caught.value) and reason in str(caught.value)


# --- selection: missing examples, coverage, n / offset / ids, exclusions ------------------------------


def test_missing_examples_stop_the_run_with_a_clear_error(prepared_dir: Path) -> None:
    config = TaskConfig(split="paper500", data_file="hotpotqa/hotpot_dev_distractor_685.json")
    with pytest.raises(MissingExamplesError) as caught:
        HotpotQATask().examples(config)
    message = str(caught.value)
    assert "39 of the 500 examples of split paper500" in message
    assert "on_missing=skip" in message and "dev-3687" in message
    assert len(caught.value.coverage.missing) == 461


def test_on_missing_skip_reports_the_coverage(caplog: pytest.LogCaptureFixture, prepared_dir: Path) -> None:
    task = HotpotQATask()
    config = TaskConfig(split="paper500", data_file="hotpotqa/hotpot_dev_distractor_685.json", on_missing="skip")
    examples = task.examples(config)
    assert len(examples) == 39 and task.coverage is not None
    assert (task.coverage.requested, task.coverage.found) == (500, 39)
    assert "39 of the 500 examples of split paper500" in caplog.text
    order = {index: rank for rank, index in enumerate(PAPER500)}
    ranks = [order[e.metadata["dev_index"]] for e in examples]
    assert ranks == sorted(ranks)  # still in the paper's order


def test_n_offset_and_ids() -> None:
    task = HotpotQATask()
    everything = task.examples(TaskConfig())
    assert task.examples(TaskConfig(n=3, offset=2)) == everything[2:5]
    wanted = (everything[7].id, everything[1].id)
    assert [e.id for e in task.examples(TaskConfig(ids=wanted))] == list(wanted)
    with pytest.raises(MissingExamplesError, match="no-such-id"):
        task.examples(TaskConfig(ids=(everything[0].id, "no-such-id")))
    assert [e.id for e in task.examples(TaskConfig(ids=(everything[0].id, "no-such-id"), on_missing="skip"))] == [
        everything[0].id
    ]
    assert task.examples(TaskConfig(n=0)) == []
    # dev-<row> names a dev-set row in any file, also where the example has a real _id
    row = everything[3].metadata["dev_index"]
    assert [e.id for e in task.examples(TaskConfig(ids=(f"dev-{row}",)))] == [everything[3].id]


def test_fever_exemplar_ids_are_left_out_of_every_split(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = fixture("fever_paper_dev_small.jsonl")
    ids_file = tmp_path / "fever_exemplar_ids.json"
    ids_file.write_text(json.dumps({"ids": [501]}))
    monkeypatch.setattr(fever_module, "FEVER_EXEMPLAR_IDS_FILE", ids_file)
    task = FeverTask()
    assert [e.id for e in task.examples(TaskConfig(split="all", data_file=path))] == ["502", "503"]
    assert task.coverage is not None and task.coverage.excluded == 1
    config = TaskConfig(split="all", data_file=path, exclude_ids=("503",), n=5)
    assert [e.id for e in task.examples(config)] == ["502"]
    with pytest.raises(ConfigError, match="exemplar"):
        task.examples(TaskConfig(split="all", data_file=path, ids=("501",)))
    ids_file.write_text(json.dumps(["502"]))  # a plain list works too
    assert [e.id for e in task.examples(TaskConfig(split="all", data_file=path))] == ["501", "503"]


# --- data folder and sources ---------------------------------------------------------------------


def _data_dir_with(tmp: Path, *names: tuple[str, str]) -> Path:
    for source, target in names:
        (tmp / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / source, tmp / target)
    return tmp


def test_data_dir_resolution_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    setting, env, cwd = (tmp_path / name for name in ("setting", "env", "cwd"))
    for folder in (setting, env, cwd / "data"):
        folder.mkdir(parents=True)
    monkeypatch.setattr(task_data, "REPO_ROOT", tmp_path / "nowhere")
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("REACT_BENCH_DATA_DIR", str(env))
    assert resolve_data_dir(str(setting)) == setting.resolve()
    assert resolve_data_dir() == env.resolve()
    monkeypatch.delenv("REACT_BENCH_DATA_DIR")
    assert resolve_data_dir() == (cwd / "data").resolve()
    shared = tmp_path / "shared" / "data"
    shared.mkdir(parents=True)
    (cwd / "data").rmdir()
    assert resolve_data_dir() == shared.resolve()  # ../shared/data from the working directory
    with pytest.raises(DataUnavailableError, match="data_dir=.*missing"):
        resolve_data_dir(str(tmp_path / "missing"))


def test_no_data_folder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REACT_BENCH_DATA_DIR", raising=False)
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))  # no build of an earlier test's
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # and none now, whatever hub the session can reach
    monkeypatch.setattr(task_data, "REPO_ROOT", tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataUnavailableError) as caught:
        HotpotQATask().examples(TaskConfig(split="paper500"))
    assert "REACT_BENCH_DATA_DIR" in str(caught.value) and "HF_HUB_OFFLINE" in str(caught.value)


def test_local_source_reads_the_split_file_under_the_data_dir(tmp_path: Path) -> None:
    data_dir = _data_dir_with(tmp_path, ("hotpot_simplified_small.json", "hotpotqa/hotpot_dev_v1_simplified.json"))
    examples = HotpotQATask().examples(TaskConfig(split="all", source="local", data_dir=str(data_dir)))
    assert [e.gold for e in examples] == ["the Wend", "yes", "Ida Venn"]
    with pytest.raises(DataUnavailableError, match="hotpot_dev_distractor_685.json"):
        HotpotQATask().examples(TaskConfig(split="offline", data_dir=str(data_dir)))


def _hub_stand_in(rows: list[dict], seen: list) -> object:
    import datasets

    def load_hub(spec: task_data.HubSpec) -> datasets.Dataset:
        seen.append(spec)
        return datasets.Dataset.from_list(rows)

    return load_hub


HOTPOT_HUB_ROWS = [
    {
        "id": "h1",
        "question": "Q one?",
        "answer": "one",
        "type": "bridge",
        "level": "hard",
        "supporting_facts": {"title": ["T1", "T2", "T1"], "sent_id": [0, 1, 2]},
        "context": {"title": ["T1"], "sentences": [["s."]]},
    },
    {
        "id": "h2",
        "question": "Q two?",
        "answer": "yes",
        "type": "comparison",
        "level": "easy",
        "supporting_facts": {"title": ["T3"], "sent_id": [0]},
        "context": {"title": ["T3"], "sentences": [["s."]]},
    },
]


def test_auto_falls_back_to_the_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list = []
    monkeypatch.setattr(task_data, "load_hub", _hub_stand_in(HOTPOT_HUB_ROWS, seen))
    examples = HotpotQATask().examples(TaskConfig(split="all", data_dir=str(tmp_path)))
    assert [(e.id, e.metadata["dev_index"], e.metadata["supporting_titles"]) for e in examples] == [
        ("h1", 0, ["T1", "T2"]),
        ("h2", 1, ["T3"]),
    ]
    assert seen == [task_data.HubSpec("hotpotqa/hotpot_qa", "distractor", "validation")]
    with pytest.raises(ConfigError, match="offline split"):
        HotpotQATask().examples(TaskConfig(split="offline", source="hub"))


def test_fever_hub_rows_fold_into_one_claim_each(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        {"id": 7, "label": "REFUTES", "claim": "C7.", "evidence_wiki_url": "P_a", "evidence_sentence_id": 1},
        {"id": 7, "label": "REFUTES", "claim": "C7.", "evidence_wiki_url": "P_b", "evidence_sentence_id": 2},
        {"id": 3, "label": "NOT ENOUGH INFO", "claim": "C3.", "evidence_wiki_url": "", "evidence_sentence_id": -1},
    ]
    seen: list = []
    monkeypatch.setattr(task_data, "load_hub", _hub_stand_in(rows, seen))
    examples = FeverTask().examples(TaskConfig(split="all", source="hub"))
    assert [(e.id, e.gold, e.metadata["evidence_titles"], e.metadata["dev_index"]) for e in examples] == [
        ("7", "REFUTES", ["P_a", "P_b"], 0),
        ("3", "NOT ENOUGH INFO", [], 1),
    ]
    assert seen[0].split == "paper_dev"


def test_hub_never_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    with pytest.raises(DataUnavailableError, match="HF_HUB_OFFLINE"):
        task_data.load_hub(task_data.HubSpec("hotpotqa/hotpot_qa", "distractor", "validation"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(DataUnavailableError, match="unreachable"):
        task_data.check_hub()
    assert time.monotonic() - started < 5


# --- config, scoring, fingerprint ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hotpotqa", "fever"])
def test_hydra_group_files_make_a_task_config(name: str) -> None:
    values = OmegaConf.to_container(OmegaConf.load(REPO / "configs" / "task" / f"{name}.yaml"))
    assert isinstance(values, dict) and values["name"] == name
    config = TaskConfig.from_mapping(values)
    assert (config.split, config.on_missing, config.source, config.ids) == ("offline", "error", "auto", None)
    assert load_task(values["name"]).info.name == name


def test_task_config_rejects_what_cannot_work() -> None:
    for bad in ({"split": "test"}, {"source": "web"}, {"on_missing": "ignore"}, {"n": -1}, {"offset": -2}, {"nn": 3}):
        with pytest.raises(ConfigError):
            TaskConfig.from_mapping(bad)
    assert TaskConfig.from_mapping({"ids": [5, "a"]}).ids == ("5", "a")
    assert TaskConfig.from_mapping({"ids": "x, y"}).ids == ("x", "y")
    with pytest.raises(ConfigError):
        load_task("squad")


def test_scores_and_primary_metrics() -> None:
    hotpot, fever = load_task("hotpotqa"), load_task("fever")
    assert hotpot.score("the Eiffel Tower", "Eiffel Tower") == {"em": 1.0, "f1": 1.0}
    assert hotpot.score("Tower", "Eiffel Tower") == pytest.approx({"em": 0.0, "f1": 2 / 3})
    assert fever.score("refutes.", "REFUTES") == {"accuracy": 1.0, "in_label_set": 1.0}
    assert fever.score("false", "REFUTES") == {"accuracy": 0.0, "in_label_set": 0.0}
    assert (hotpot.info.primary_metric, fever.info.primary_metric) == ("em", "accuracy")
    assert (hotpot.text_format().label, fever.text_format().label) == ("Question", "Claim")


def test_examples_are_frozen() -> None:
    example = Example("x", "q", "a", {"type": "bridge"})
    with pytest.raises(AttributeError):
        example.gold = "b"  # type: ignore[misc]
