"""SynthWiki: deterministic, answerable from its articles alone, not guessable, and every mode and
runner works on it (an oracle following the gold paths scores 100% through both runners)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from react_bench.envs.wiki import generate as synthwiki
from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.metrics import normalize_answer
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.types import ToolUseBlock
from tests.support import REPO

KEY_ENV = "REACT_BENCH_TEST_SYNTH_KEY"
SIZE = 200  # a small world for the tests (the default is 800)


@pytest.fixture(scope="module")
def world() -> synthwiki.World:
    return synthwiki.generate(seed=3, size=SIZE)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, world: synthwiki.World) -> Path:
    out = synthwiki.write_world(world, tmp_path_factory.mktemp("world"))
    synthwiki.ensure_wiki(out)
    return out


def test_the_generator_is_deterministic(tmp_path: Path, world: synthwiki.World) -> None:
    again = synthwiki.generate(seed=3, size=SIZE)
    assert again.pages() == world.pages() and again.questions == world.questions
    a = synthwiki.write_world(world, tmp_path / "a")
    b = synthwiki.write_world(again, tmp_path / "b")
    for name in ("pages.jsonl", "questions.jsonl", "meta.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    other = synthwiki.generate(seed=4, size=SIZE)
    assert other.pages() != world.pages()
    assert all(q["id"].startswith(f"sw{synthwiki.VERSION}-s3-n{SIZE}-") for q in world.questions)  # version, seed


def test_names_collide_with_no_real_title(world: synthwiki.World, data_file) -> None:
    real: set[str] = set()
    for row in json.loads(data_file("hotpotqa/hotpot_dev_distractor_685.json").read_text()):
        real.update(title.lower() for title, _ in row["context"])
    for line in data_file("fever/wiki_pages_evidence_subset.jsonl").read_text().splitlines():
        real.add(json.loads(line)["id"].replace("_", " ").lower())
    titles = {t.lower() for t in world.entities}
    assert len(real) > 5000 and titles.isdisjoint(real)
    assert len(titles) == len(world.entities)  # no two entities share a title, whatever the case


def test_every_question_is_answerable_from_its_gold_path(world: synthwiki.World, folder: Path) -> None:
    from react_bench.envs.wiki.local import LocalWiki

    wiki = LocalWiki(folder / "wiki.sqlite")
    for q in world.questions:
        steps = synthwiki.oracle_steps(q, wiki)
        seen = " ".join(o for _, _, o in steps if o is not None)
        assert all(not o.startswith("Could not find") for _, _, o in steps if o is not None), q
        match q["type"]:
            case "bridge2" | "bridge3":
                assert normalize_answer(q["answer"]) in normalize_answer(seen), q
            case "comparison_yes_no":
                cities = re.findall(r"was born in ([A-Z]\w+)\.", seen)
                assert len(cities) == 2 and (cities[0] == cities[1]) == (q["answer"] == "yes"), (q, cities)
            case "comparison_which":
                years = [int(y) for y in re.findall(r"founded in the year (\d+)", seen)]
                first, second = q["supporting_titles"]
                assert len(years) == 2 and q["answer"] == (first if years[0] < years[1] else second), q
            case "claim":
                fact = r"(?:was born in|founded by) ([A-Z][\w ]*?)\."
                claimed, true = re.search(fact, q["question"]), re.search(fact, seen)
                if q["answer"] == "NOT ENOUGH INFO":  # nothing in the world says it
                    assert claimed is None and "sibling" not in seen and "motto" not in seen, q
                else:  # the article states the fact; it agrees with the claim exactly when SUPPORTS
                    assert claimed and true and (claimed.group(1) == true.group(1)) == (q["answer"] == "SUPPORTS"), q
            case _:
                raise AssertionError(f"unknown question type {q['type']}")


def test_no_answer_is_guessable_from_the_question(world: synthwiki.World) -> None:
    kinds = Counter(q["type"] for q in world.questions)
    assert set(kinds) == {"bridge2", "bridge3", "comparison_yes_no", "comparison_which", "claim"}
    labels = Counter(q["answer"] for q in world.questions if q["type"] == "claim")
    assert max(labels.values()) - min(labels.values()) <= 2 and len(labels) == 3  # a third each
    for q in world.questions:
        if q["type"] in ("bridge2", "bridge3"):
            assert normalize_answer(q["answer"]) not in normalize_answer(q["question"]), q
    answers = Counter(q["answer"] for q in world.questions if q["type"] == "comparison_yes_no")
    assert abs(answers["yes"] - answers["no"]) <= 1  # balanced
    which = [q for q in world.questions if q["type"] == "comparison_which"]
    first = sum(q["answer"] == q["supporting_titles"][0] for q in which)
    assert abs(first - len(which) / 2) <= 1  # the answer is first or second half the time
    assert Counter(q["split"] for q in world.questions)["train"] >= 10


def _oracle(golds: dict[str, dict]):
    from tests.support_oracle import question_of, turns_after_question

    def respond(body: dict) -> Reply:
        q = golds[question_of(body)]
        actions = [*q["path"], f"Finish[{q['answer']}]"]
        if body.get("tools"):
            name, argument = actions[turns_after_question(body) // 2][:-1].split("[", 1)
            param = {"Search": "entity", "Lookup": "keyword", "Finish": "answer"}[name]
            return Reply((ToolUseBlock("", name.lower(), {param: argument}),))
        text = "".join(b["text"] for b in body["messages"][0]["content"])
        step = int(re.findall(r"Begin your reply with `Thought (\d+):", text)[-1])
        return Reply.text(f"Thought {step}: I follow the path.\nAction {step}: {actions[step - 1]}")

    return respond


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_an_oracle_on_the_gold_paths_scores_100_percent_and_is_grounded(runner, monkeypatch, tmp_path):
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))  # the world generated for this test
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    task = TaskConfig(name="synthwiki", n=30, seed=3, size=SIZE)
    from react_bench.tasks import load_task

    golds = {
        e.question.strip(): {"answer": e.gold, "path": e.metadata["path"]}
        for e in load_task("synthwiki").examples(task)
    }
    with MessagesServer(responder=_oracle(golds)) as server:
        config = RunConfig(
            task=task,
            model=claude_model_config(server.base_url, KEY_ENV),
            solve=SolveSettings(mode="react", runner=runner, loop=_loop(8)),
            results_dir=tmp_path / "runs",
            progress=False,
            protocol="custom",
        )
        result = await evaluate(config, out=io.StringIO())
    assert result.metrics["em"]["mean"] == 1.0 and result.metrics["n"] == 30
    records = [json.loads(line) for line in (result.run_dir / "examples.jsonl").read_text().splitlines()]
    yes_no = sum(1 for r in records if r["gold"] in ("yes", "no"))
    # every answer a page can say (a name, a number; not yes / no) was read in an observation, by
    # either runner: grounded accuracy is over those answers, the same denominator for both
    assert result.metrics["grounded_n"] == len(records) - yes_no > 0
    assert result.metrics["grounded_accuracy"] == 1.0 and result.metrics["grounded"] == 1.0
    # the text runner executes one action per model turn; the tool-use runner may run several
    steps, actions = result.metrics["mean_steps"], result.metrics["mean_actions"]
    assert actions == steps if runner == "text" else actions >= steps > 0


def _loop(steps: int):
    from react_bench.loop import LoopConfig

    return LoopConfig(max_steps=steps)


async def test_a_cot_answer_is_never_grounded(monkeypatch, tmp_path):
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    task = TaskConfig(name="synthwiki", n=5, seed=3, size=SIZE)
    from react_bench.tasks import load_task

    examples = load_task("synthwiki").examples(task)
    script = tmp_path / "cot.json"
    script.write_text(json.dumps([f"I recall it.\nAnswer: {e.gold}" for e in examples]))  # right, but recalled
    model = {"provider": "scripted", "script": str(script)}
    config = RunConfig(
        task=task, model=model, solve=SolveSettings(mode="cot"), results_dir=tmp_path / "r", progress=False
    )
    result = await evaluate(config, out=io.StringIO())
    assert result.metrics["em"]["mean"] == 1.0 and result.metrics["grounded_accuracy"] == 0.0


@pytest.mark.slow
def test_the_main_command_and_a_closed_book_baseline_with_the_local_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    env = {**os.environ, "REACT_BENCH_CACHE": str(tmp_path / "cache")}
    main = subprocess.run(
        [
            sys.executable,
            "scripts/eval.py",
            "task=synthwiki",
            "task.size=200",
            "task.seed=3",
            f"results_dir={tmp_path}",
            "progress=false",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert main.returncode == 0, main.stderr
    closed = subprocess.run(
        [
            sys.executable,
            "scripts/eval.py",
            "task=synthwiki",
            "task.size=200",
            "task.seed=3",
            "mode=standard",
            "n=30",
            f"results_dir={tmp_path}",
            "progress=false",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert closed.returncode == 0, closed.stderr
    run = next(tmp_path.rglob("standard-text/*/examples.jsonl"))
    records = [json.loads(line) for line in run.read_text().splitlines()]
    # chance: 1/2 on yes/no and which-of questions (two candidates), 0 on bridge answers (invented names, numbers)
    two_way = sum(1 for r in records if r["metadata"]["type"].startswith("comparison"))
    bridge_right = sum(r["em"] for r in records if r["metadata"]["type"].startswith("bridge"))
    assert bridge_right == 0
    assert sum(r["em"] for r in records) <= 0.5 * two_way + 0.2 * len(records)


@pytest.mark.parametrize("task", ["synthwiki", "synthwiki_claims"])
@pytest.mark.parametrize("mode", ["standard", "cot", "cot_sc", "act", "react", "react_cot_sc", "cot_sc_react"])
async def test_every_mode_runs_on_both_synthwiki_tasks(task, mode, monkeypatch, tmp_path):
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" x.\nAction 1: Finish[SUPPORTS]\nAnswer: SUPPORTS"] * 60))
    config = RunConfig(
        task=TaskConfig(name=task, n=2, seed=3, size=SIZE),
        model={"provider": "scripted", "script": str(script)},
        solve=SolveSettings(mode=mode, cot_sc_samples=3),
        results_dir=tmp_path / "r",
        progress=False,
        protocol="custom",
    )
    result = await evaluate(config, out=io.StringIO())
    assert result.metrics["n"] == 2 and result.metrics["errors"] == 0
    assert ("accuracy" if task == "synthwiki_claims" else "em") in result.metrics
