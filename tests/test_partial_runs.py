"""A study holding runs killed before their end (issue 60's two faults): a run's figures come from
its records where metrics.json is not written yet, marked partial; a run with no finished example
is said, never a traceback or a ``nan``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.testing.walker import question_of
from tests.support import compare_py
from tests.support_oracle import gold_answers

KEY_ENV = "REACT_BENCH_TEST_PARTIAL_KEY"


async def test_killed_runs_show_their_finished_examples_and_no_nan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    golds = gold_answers(6)
    wrong = sorted(golds)[0]
    dirs = {}
    for run_id, mode in (("killed", "standard"), ("none_done", "cot")):
        with MessagesServer(
            responder=lambda body: (
                Reply.text(
                    " a wrong answer" if question_of(body).strip() == wrong else f" {golds[question_of(body).strip()]}"
                )
                if "Thought" not in json.dumps(body)[-200:]
                else Reply.text(f" I recall it.\nAnswer: {golds[question_of(body).strip()]}")
            )
        ) as server:
            cfg = RunConfig(
                task=TaskConfig(name="hotpotqa", n=6),
                model=claude_model_config(server.base_url, KEY_ENV, "claude-sonnet-4-6"),  # type: ignore[arg-type]
                solve=SolveSettings(mode=mode),
                results_dir=tmp_path / "runs",
                run_id=run_id,
                progress=False,
            )
            dirs[run_id] = (await evaluate(cfg, out=io.StringIO())).run_dir
    # killed: 4 of its 6 examples written, no metrics.json yet; the other: nothing finished
    killed, none_done = dirs["killed"], dirs["none_done"]
    lines = (killed / "examples.jsonl").read_text().splitlines()[:4]
    (killed / "examples.jsonl").write_text("".join(f"{line}\n" for line in lines))
    (none_done / "examples.jsonl").write_text("")
    for d in (killed, none_done):
        (d / "metrics.json").unlink()
    share = sum(json.loads(line)["correct"] for line in lines) / 4
    out = tmp_path / "study"
    compared = compare_py(killed, none_done, out=out)
    assert compared.returncode == 0, compared.stderr
    table = (out / "table1.md").read_text()
    assert "nan" not in table
    assert f"{100 * share:.1f} [" in table and "(n=4)" in table and "partial: 4 of 6" in table
    assert "no finished example (0 of 6)" in table
    only_none = compare_py(none_done, out=tmp_path / "study2")  # a study of killed runs only
    assert only_none.returncode == 0, only_none.stderr
    assert "no finished example (0 of 6)" in (tmp_path / "study2" / "table1.md").read_text()
