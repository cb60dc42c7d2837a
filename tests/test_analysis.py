"""The paper's error analysis (Table 2): automatic labels on a run of the Messages API stand-in
whose answers are built to hit each category; the annotation workflow driven as a user drives it
(labels, a stop, a resume), table2.md with the paper's column, a model judge's labels and the
agreement figure."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.results import iter_example_records
from react_bench.runconfig import RunConfig
from react_bench.studies.analysis import (
    ANNOTATIONS,
    LABELS,
    Annotation,
    Label,
    agreement,
    auto_label,
    judge_label,
    table2,
)
from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import Walk, WalkResponder
from tests.support import REPO, composed

KEY_ENV = "REACT_BENCH_TEST_ANALYSIS_KEY"
NOWHERE = "Qqxzv Wwqz"  # a search that finds nothing

# (question index in the offline data, the actions, the label the rules must give)
PLANS = {
    0: ([("search", "Scott Derrickson"), ("finish", "yes")], "true_positive"),
    1: ([("search", "Shirley Temple"), ("finish", "Ambassador Zork")], "reasoning_error"),  # the gold was read
    2: ([("search", NOWHERE), ("finish", "Animorphs")], "false_positive"),  # right, read nowhere
    3: ([("search", "Laleli Mosque"), ("finish", "Istanbul Tulip Palace")], "hallucination"),
    4: ([("search", "Adriana Trigiani"), ("finish", "New York City")], "label_ambiguity"),
    5: ([("search", NOWHERE), ("finish", "Sony Music")], "search_result_error"),
    6: ([("search", "Eenasul Fateh"), ("finish", "Eenasul Fateh")], "true_positive"),
    7: (
        [("search", "Androscoggin Bank Colisée")] * 3 + [("finish", "about four thousand")],
        "reasoning_error",
    ),  # a loop
}


@dataclass(frozen=True)
class Planned(Walk):
    """The walker's protocol, with each question's own actions."""

    actions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def action(self, question: str, step: int) -> tuple[str, str]:
        plan = self.actions[question.strip()]
        return plan[min(step, len(plan)) - 1]


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


async def _run(tmp_path: Path) -> Path:
    examples = load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=8))
    actions = {examples[i].question.strip(): plan for i, (plan, _) in PLANS.items()}
    with MessagesServer(responder=WalkResponder(Planned(actions=actions))) as server:
        cfg = RunConfig.from_mapping(
            composed(
                "model=claude-sonnet-4-6",
                f"model.base_url={server.base_url}",
                f"model.api_key_env={KEY_ENV}",
                "n=8",
                f"results_dir={tmp_path}",
                "run_id=react",
                "progress=false",
                "show=none",
            )
        )
        result = await evaluate(cfg, out=io.StringIO())
    return result.run_dir


async def test_automatic_labels_land_in_the_category_each_answer_was_built_for(
    tmp_path: Path, key: None, prepared_dir
) -> None:
    run_dir = await _run(tmp_path)
    records = list(iter_example_records(run_dir))
    examples = load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=8))
    wanted = {examples[i].id: label for i, (_, label) in PLANS.items()}
    got = {r.id: auto_label(r) for r in records}
    assert {i: label for i, (label, _) in got.items()} == wanted, {i: why for i, (_, why) in got.items()}


async def test_the_annotation_workflow_labels_resumes_and_writes_table2(
    tmp_path: Path, key: None, prepared_dir
) -> None:
    run_dir = await _run(tmp_path)
    auto = {r.id: auto_label(r)[0] for r in iter_example_records(run_dir)}
    first = Annotation(run_dir, n=3, seed=1)
    chosen = [r.id for r in first.chosen]
    assert len(chosen) == 6 and chosen == [r.id for r in Annotation(run_dir, n=3, seed=1).chosen]  # seeded
    shown: list[str] = []

    def annotator(stop_after: int):
        def ask(record, text):
            if len(shown) == stop_after:
                return None  # the annotator stops for the day
            shown.append(text)
            return auto[record.id], f"looked at {record.id}"

        return ask

    assert first.run(annotator(2)) == 2
    assert "question: " in shown[0] and "gold: " in shown[0] and "-> " in shown[0]  # every step, observed
    again = Annotation(run_dir, n=3, seed=1)  # a new session: the two labels are kept, four are left
    assert set(again.labels) == set(chosen[:2]) and [r.id for r in again.todo()] == chosen[2:]
    assert again.run(annotator(99)) == 4 and not again.todo()
    lines = (run_dir / ANNOTATIONS).read_text().splitlines()
    assert len(lines) == 6
    with pytest.raises(ValueError, match="one of"):
        again.record(chosen[0], "confused")
    humans = list(Annotation(run_dir, n=3, seed=1).labels.values())
    autos = [Label(i, auto[i], by="auto") for i in auto]
    text = table2(run_dir, humans, autos)
    assert "| success | true_positive |" in text and "| 94 |" in text and "| failure | hallucination |" in text
    assert "Agreement with the automatic labels: 100% of 6 examples" in text
    share, n = agreement(
        humans, [Label(humans[0].id, "hallucination" if humans[0].label != "hallucination" else "true_positive")]
    )
    assert (share, n) == (0.0, 1)


def test_a_model_judges_labels_are_recorded_as_the_judges(tmp_path: Path, key: None) -> None:
    import asyncio

    from react_bench.models import make_model

    run_dir = asyncio.run(_run(tmp_path))
    record = next(iter(iter_example_records(run_dir)))
    with MessagesServer(responder=lambda body: Reply.text("search_result_error")) as server:
        judge = make_model(claude_model_config(server.base_url, KEY_ENV))
        label = judge_label(record, judge)
    assert (label.label, label.by) == ("search_result_error", f"judge:{judge.name}") and label.label in LABELS


async def test_the_terminal_front_end_takes_keys_and_writes_table2(tmp_path: Path, key: None, prepared_dir) -> None:
    run_dir = await _run(tmp_path)
    keys = "1\nfirst\n4\n\nq\n"  # a label by its number, a note (or none), then quit
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "annotate.py"), str(run_dir), "--n", "2"],
        input=keys,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "2 labelled, 2 left" in done.stdout
    rest = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "annotate.py"), str(run_dir), "--n", "2"],
        input="2\n\n3\n\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rest.returncode == 0 and "4 labelled, 0 left" in rest.stdout
    assert (run_dir / "table2.md").is_file() and "paper, PaLM-540B ReAct" in (run_dir / "table2.md").read_text()
