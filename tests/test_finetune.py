"""Fine-tuning data (the paper's Figure 3) from runs made against the Messages API stand-in: only
correct trajectories, every format loads with ``datasets``, no dev id in train, the manifest's
counts are the files'."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.studies.finetune import FORMATS, export_finetune
from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from tests.support_oracle import Oracle

KEY_ENV = "REACT_BENCH_TEST_FINETUNE_KEY"
TRAIN_FILE = "hotpotqa/hotpot_train_distractor_200.json"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def run_config(server: MessagesServer, tmp_path: Path, run_id: str, task: TaskConfig, mode: str) -> RunConfig:
    return RunConfig(
        task=task,
        model=claude_model_config(server.base_url, KEY_ENV),  # type: ignore[arg-type]
        solve=SolveSettings(mode=mode),  # type: ignore[arg-type]
        results_dir=tmp_path / "results",
        run_id=run_id,
        progress=False,
    )


async def test_the_correct_trajectories_in_every_format_split_by_id(tmp_path: Path, key: None, prepared_dir) -> None:
    dev_task = TaskConfig(name="hotpotqa", n=4)
    train_task = TaskConfig(name="hotpotqa", n=3, data_file=TRAIN_FILE, split="all")
    dev = load_task("hotpotqa").examples(dev_task)
    train = load_task("hotpotqa").examples(train_task)
    golds = {e.question.strip(): e.gold for e in [*dev, *train]}
    golds[dev[0].question.strip()] = "certainly not the gold"  # one wrong answer: not exported
    with MessagesServer(responder=Oracle(golds)) as server:
        runs = [
            await evaluate(run_config(server, tmp_path, "dev-react", dev_task, "react"), out=io.StringIO()),
            await evaluate(run_config(server, tmp_path, "train-react", train_task, "react"), out=io.StringIO()),
        ]
        out = tmp_path / "finetune"
        manifest = export_finetune([r.run_dir for r in runs], out)
        # the loop closed: a model fine-tuned on that data, evaluated on the dev questions beside the prompting run
        tuned = replace(
            run_config(server, tmp_path, "tuned", dev_task, "react"),
            model=claude_model_config(
                server.base_url, KEY_ENV, name="ft-react-8b", allow_unknown_model=True, finetuned_on=str(out)
            ),
        )
        await evaluate(tuned, out=io.StringIO())
    from react_bench.studies import load_runs, table1

    grid, _ = table1(load_runs([tmp_path / "results"]))
    react = grid[grid["mode"] == "react"].set_index("model")["finetuned"]
    assert react["ft-react-8b"] == "finetune" and react["claude-sonnet-4-6"] == ""
    from datasets import load_dataset, load_from_disk

    correct_dev = {
        json.loads(line)["id"]
        for line in (runs[0].run_dir / "examples.jsonl").read_text().splitlines()
        if json.loads(line)["correct"]
    }
    assert dev[0].id not in correct_dev and len(correct_dev) == 3
    for fmt in FORMATS:
        for split in ("train", "dev"):
            path = out / fmt / f"{split}.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            assert len(rows) == manifest["counts"][fmt][split]  # the manifest's counts are the files'
            if rows:
                assert len(load_dataset("json", data_files=str(path), split="train")) == len(rows)
        on_disk = load_from_disk(str(out / fmt / "dataset"))
        assert {s: len(on_disk[s]) for s in on_disk} == {s: n for s, n in manifest["counts"][fmt].items() if n}
        train_ids = set(on_disk["train"]["id"])
        assert train_ids == {e.id for e in train} and not train_ids & {e.id for e in dev}  # no dev id in train
        assert set(on_disk["dev"]["id"]) == correct_dev  # only correct trajectories
    paper = [json.loads(line) for line in (out / "paper" / "dev.jsonl").read_text().splitlines()]
    row = next(r for r in paper if r["id"] == dev[1].id)
    # the prompt is the zero-shot text runner's first request: the opening and the first step's label
    assert row["style"] == "react" and row["prompt"] == f"Question: {dev[1].question}\nThought 1:"
    assert row["target"].startswith(" ") and "\nAction 1: " in row["target"] and "\nObservation 1: " in row["target"]
    assert row["target"].rstrip().endswith(f"Finish[{dev[1].gold}]") and "Episode finished" not in row["target"]
    chat = json.loads((out / "chat" / "dev.jsonl").read_text().splitlines()[0])["messages"]
    assert chat[0]["role"] == "user" and [m["role"] for m in chat[1:4]] == ["assistant", "user", "assistant"]
    steps = [json.loads(line) for line in (out / "steps" / "dev.jsonl").read_text().splitlines()]
    second = next(s for s in steps if s["id"] == dev[1].id and s["step"] == 2)
    assert second["prompt"].startswith(row["prompt"]) and second["prompt"] + second["completion"] in (
        row["prompt"] + row["target"]
    )
    assert manifest["skipped"]["not correct"] == 1 and {s["split"] for s in manifest["sources"]} == {"train", "dev"}
    with pytest.raises(FileExistsError):
        export_finetune([runs[0].run_dir], out)  # never over an earlier export
    again = export_finetune([runs[0].run_dir, runs[0].run_dir], tmp_path / "twice")
    assert again["counts"]["paper"]["dev"] == 3 and again["skipped"]["duplicate"] >= 3  # identical rows once


async def test_a_finetuned_model_is_sent_its_training_prompt_byte_for_byte(tmp_path: Path, key: None) -> None:
    """Figure 3 like for like: a run of a model fine-tuned on the ``paper`` rows (``model.finetuned_on``)
    sends through the text runner, as its first request of a question, exactly that question's
    ``paper`` prompt (no instruction, no exemplars); ``shots=0`` does the same for any model, and
    ``shots=k`` keeps the instruction and the first k exemplars."""
    from react_bench.testing.openai_server import Chunks, OpenAIServer, model_config, oracle_chunks
    from react_bench.testing.walker import Walk

    dev_task = TaskConfig(name="hotpotqa", n=3)
    dev = load_task("hotpotqa").examples(dev_task)
    with MessagesServer(responder=Oracle({e.question.strip(): e.gold for e in dev})) as server:
        source = await evaluate(run_config(server, tmp_path, "dev-react", dev_task, "react"), out=io.StringIO())
    out = tmp_path / "ft"
    export_finetune([source.run_dir], out)
    paper = {r["id"]: r for r in map(json.loads, (out / "paper" / "dev.jsonl").read_text().splitlines())}
    assert len(paper) == 3
    walk = Walk(steps=2, answers={e.question.strip(): e.gold for e in dev})

    async def first_prompts(run_id: str, shots: int | None, **model: object) -> dict[str, str]:
        with OpenAIServer(lambda path, body: Chunks(tuple(oracle_chunks(walk, path, body)))) as openai:
            cfg = RunConfig(
                task=dev_task,
                model=model_config(openai.base_url, **model),  # type: ignore[arg-type]
                solve=SolveSettings(mode="react", shots=shots),
                results_dir=tmp_path / "results",
                run_id=run_id,
                progress=False,
                request_cache="off",
            )
            await evaluate(cfg, out=io.StringIO())
            prompts = [body["prompt"] for path, body in openai.requests if path.endswith("/completions")]
        return {e.id: next(p for p in prompts if f"Question: {e.question}" in p) for e in dev}

    tuned = await first_prompts("tuned", None, name="ft-react-8b", finetuned_on=str(out))
    assert tuned == {i: r["prompt"] for i, r in paper.items()}  # byte for byte, each question
    assert await first_prompts("zero-shot", 0) == tuned
    full = await first_prompts("all-shots", None)
    one = await first_prompts("one-shot", 1)
    prompt = load_task("hotpotqa").prompt("react", None, None, None)
    first = dev[0]
    assert full[first.id] == f"{prompt.instruction}{prompt.exemplars}Question: {first.question}\nThought 1:"
    starts = load_task("hotpotqa").text_format().exemplar_starts(prompt.exemplars)
    assert len(starts) > 1  # the project's exemplars are several episodes
    assert one[first.id] == f"{prompt.instruction}{prompt.exemplars[: starts[1]]}Question: {first.question}\nThought 1:"
