"""The grader's own checks (issue 67, ``grading/audit.py``, ``scripts/audit.py``): each finds the
defect planted for it, and the task's own grader and the rule tier pass them on the session's data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.grading.audit import (
    Item,
    audit,
    candidates_check,
    duplicates_check,
    grader_of,
    isolation_check,
    null_check,
    oracle_check,
    study_check,
)
from react_bench.metrics import normalize_answer
from react_bench.tasks import load_task
from tests.support import REPO

ITEMS = [
    Item("q1", "Who directed Ed Wood?", "Tim Burton", ("Ed Wood", "Tim Burton")),
    Item("q2", "Which city hosts the festival?", "Las Vegas", ("Burning Man", "Black Rock City")),
    Item("q3", "Were both born in Ohio?", "yes", ("Ann Smith", "Bo Jones")),
]
GRADE = grader_of(load_task("hotpotqa"))


def test_the_null_check_finds_a_grader_that_credits_unknown() -> None:
    assert null_check(ITEMS, GRADE)["ok"]
    lenient = lambda p, g: {"em": float(normalize_answer(p) in ("unknown", normalize_answer(g)))}  # noqa: E731
    found = null_check(ITEMS, lenient)
    assert not found["ok"] and found["scores"]["unknown"]["em"] == 100.0 and "q1 ('unknown': em)" in found["credited"]


def test_the_oracle_check_lists_a_gold_that_fails_its_own_grader() -> None:
    planted = [*ITEMS, Item("q4", "What is the symbol?", "?!")]  # punctuation only: F1 0 against itself
    found = oracle_check(planted, GRADE)
    assert not found["ok"] and [d["id"] for d in found["defective_golds"]] == ["q4"]
    assert found["scores"]["f1"] == 75.0 == found["expected"]
    assert oracle_check(ITEMS, GRADE)["ok"]


def test_the_candidates_check_finds_a_grader_that_credits_a_list() -> None:
    assert candidates_check(ITEMS, GRADE)["ok"]  # the rules' guard holds
    contains = lambda p, g: {"rules": float(normalize_answer(g) in normalize_answer(p))}  # noqa: E731
    found = candidates_check(ITEMS, contains)
    assert not found["ok"] and [d["id"] for d in found["credited"]] == ["q1", "q2"]  # not q3: a yes / no gold
    assert found["credited"][1]["answer"] == "Burning Man, Black Rock City, Las Vegas"


def test_isolation_finds_a_gold_in_the_prompt_and_duplicates_a_repeated_question() -> None:
    found = isolation_check(ITEMS, "Question: Which film?\nThought: It was Tim Burton, surely.\nAction: Finish[x]")
    assert [d["id"] for d in found["in_prompt"]] == ["q1"]  # never "yes": too short to mean anything
    assert isolation_check(ITEMS, "Question: nothing here")["ok"]
    twice = [*ITEMS, Item("q9", "who directed  Ed Wood", "Tim Burton")]
    assert duplicates_check(twice)["groups"] == [["q1", "q9"]] and duplicates_check(ITEMS)["ok"]


def test_the_study_check_names_label_error_candidates_and_what_every_run_passes() -> None:
    def run(*rows: tuple[str, str, str, bool]) -> list[dict]:
        return [{"id": i, "gold": g, "prediction": p, "correct": c} for i, g, p, c in rows]

    found = study_check(
        {
            "react": run(("a", "Stone Brewing", "Stone Brewing Co.", False), ("b", "Paris", "Paris", True)),
            "cot": run(("a", "Stone Brewing", "Stone", False), ("b", "Paris", "paris", True)),
        }
    )
    assert [d["id"] for d in found["label_error_candidates"]] == ["a"]
    assert found["label_error_candidates"][0]["answers"] == {"react": "Stone Brewing Co.", "cot": "Stone"}
    assert found["every_run_passes"] == ["b"]


def test_audit_py_on_the_task_holds_null_at_zero_and_oracle_at_a_hundred_less_its_defects(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "audit.py"), "task=hotpotqa", "n=30", f"out={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads((tmp_path / "audit.json").read_text())
    checks = report["checks"]
    assert report["n"] == 30 and set(checks) == {"null", "oracle", "candidates", "isolation", "duplicates"}
    assert all(v == 0 for scores in checks["null"]["scores"].values() for v in scores.values())
    defects = len(checks["oracle"]["defective_golds"])
    assert all(v == 100.0 * (30 - defects) / 30 for v in checks["oracle"]["scores"].values())
    assert checks["candidates"]["credited"] == [] and checks["candidates"]["tried"] > 0
    assert (tmp_path / "audit.md").read_text().startswith("# Grader audit: hotpotqa, 30 examples")
    assert done.returncode == (0 if report["ok"] else 1)


def test_audit_over_items_reports_every_check() -> None:
    report = audit(ITEMS, GRADE, "no gold here")
    assert report["ok"] and list(report["checks"]) == ["null", "oracle", "candidates", "isolation", "duplicates"]


def test_recorded_runs_are_read_once_each(tmp_path: Path) -> None:
    """Reflexion's log cut at its gold lines (a repeated halted episode counted once); FireAct's files by id."""
    from react_bench.grading.recorded import read_fireact, read_reflexion_first_trial

    episode = "Question: {q}\nThought 1: x\nAction 1: Finish[{a}]\nObservation 1: Answer is X\nCorrect answer: {g}\n\n"
    log = (
        "BEGIN TRIAL 1\n"
        + episode.format(q="Who?", a="Stone Brewing Co.", g="Stone Brewing")
        + "Question: Where?\nObservation 1: Question: a line inside a page\nCorrect answer: Paris\n\n"
        + "Question: Where?\nCorrect answer: Paris\n\n"  # the same halted episode, logged twice
        + "BEGIN TRIAL 2\n"
        + episode.format(q="Who?", a="Stone Brewing", g="Stone Brewing")
    )
    path = tmp_path / "log.txt"
    path.write_text(log)
    rows = list(read_reflexion_first_trial(path))
    assert [(r.gold, r.prediction) for r in rows] == [("Stone Brewing", "Stone Brewing Co."), ("Paris", "")]
    fireact = tmp_path / "f.json"
    fireact.write_text(json.dumps({"7": {"gt": "las vegas", "pred": "las vegas nevada", "em": "False"}}))
    assert [(r.id, r.gold, r.prediction) for r in read_fireact(fireact)] == [("7", "las vegas", "las vegas nevada")]


def test_the_rules_on_reflexions_recorded_run(tmp_path: Path) -> None:
    """Its first trial as the log says it (34 right of 100), read through the pinned file."""
    from react_bench import upstream
    from react_bench.grading.recorded import rules_on

    try:
        upstream.fetch("reflexion/react_100x5.txt")
    except upstream.UpstreamError:
        pytest.skip(f"needs {upstream.pinned('reflexion/react_100x5.txt').label}: set REACT_BENCH_GITHUB")
    found = rules_on("reflexion-davinci003")
    assert found["n"] == 100 and found["em"] == 34.0 and found["answered_misses"] == 56
    assert {"prediction": "Stone Brewing Co.", "gold": "Stone Brewing"} in [
        {k: a[k] for k in ("prediction", "gold")} for a in found["accepted_misses"]
    ]
    assert found["rules"] == 34.0 + len(found["accepted_misses"]) and found["rejected_hits"] == 0
