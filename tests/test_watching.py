"""Watching runs: live trajectories on the console, the progress bar's figures, a quiet terminal."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from react_bench.evaluate import evaluate
from react_bench.events import AgentEvent, RunProgress, ToolExecutionFinished
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from tests.support import REPO
from tests.support_oracle import Oracle, gold_answers


async def test_show_trajectories_prints_each_step_before_the_example_is_written(tmp_path: Path, prepared_dir) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([" I should look up Gamma.\nAction 1: Search[Gamma]", " Done.\nAction 2: Finish[yes]"])
    )
    out = io.StringIO()
    seen: list[str] = []

    def check(example_id: str, event: AgentEvent) -> None:
        examples = next(tmp_path.rglob("examples.jsonl"), None)
        written = examples.read_text() if examples is not None else ""
        if isinstance(event, ToolExecutionFinished) and event.step == 1:
            printed = out.getvalue()
            order = [
                printed.find(s)
                for s in (
                    "=== 5a8b57f255",
                    "gold: 'yes'",
                    "--- step 1",
                    "Thought 1: I should look up Gamma.",
                    "search[Gamma] ... executing",
                    "Observation 1: ",
                )
            ]
            assert -1 not in order and order == sorted(order), printed
            assert example_id not in written  # shown live, before the example's line exists
            seen.append("observation")
        if isinstance(event, RunProgress):
            assert example_id in written  # the verdict line follows the written example
            seen.append("written")

    config = RunConfig(
        task=TaskConfig(name="hotpotqa", n=1),
        model={"provider": "scripted", "label": "scripted", "script": str(script)},
        solve=SolveSettings(mode="react"),
        results_dir=tmp_path,
        show="trajectories",
    )
    await evaluate(config, out=out, on_event=check)
    assert seen == ["observation", "written"]
    printed = out.getvalue()
    assert "=== answer 'yes'" in printed and ("RIGHT" in printed or "wrong" in printed)
    assert "score " in printed and "tokens " in printed and "cost unknown" in printed  # the bar's figures


def test_each_examples_lines_stay_together_when_examples_interleave() -> None:
    """Two examples in flight: the first streams live, the second's lines follow it whole, after
    the first's result (not its first step before the first's verdict)."""
    from react_bench.console import TrajectoryPrinter
    from react_bench.events import StepStarted, ToolCalled

    lines: list[str] = []
    printer = TrajectoryPrinter(lines.append, prefix_ids=False)
    printer.begin("a", "Question A?", "x")
    printer("a", StepStarted(step=1))
    printer.begin("b", "Question B?", "y")
    printer("b", StepStarted(step=1))
    printer("b", ToolCalled(step=1, call_id="1", name="search", arguments={"entity": "B"}))
    printer("a", ToolCalled(step=1, call_id="2", name="search", arguments={"entity": "A"}))
    printer("a", ToolExecutionFinished(step=1, call_id="2", name="search", observation="about A", is_error=False))
    assert not [line for line in lines if "B" in line]  # b waits while a streams
    printer("a", RunProgress(1, 2, "a", "x", True, "answered"))
    printer("b", RunProgress(2, 2, "b", "z", False, "answered"))
    a_end = lines.index("=== answer 'x': RIGHT  [1/2]")
    assert lines[: a_end + 1] == [
        "=== a: Question A?",
        "    gold: 'x'",
        "--- step 1",
        "Action 1: search[A] ... executing",
        "Observation 1: about A",
        "=== answer 'x': RIGHT  [1/2]",
    ]
    assert lines[a_end + 1 :] == [
        "=== b: Question B?",
        "    gold: 'y'",
        "--- step 1",
        "Action 1: search[B] ... executing",
        "=== answer 'z': wrong  [2/2]",
    ]


def test_with_concurrency_every_line_names_its_example(tmp_path: Path) -> None:
    from react_bench.console import TrajectoryPrinter
    from react_bench.events import AssistantTextDelta, StepStarted

    lines: list[str] = []
    printer = TrajectoryPrinter(lines.append, prefix_ids=True)
    printer("ex-a", StepStarted(1))
    printer("ex-b", StepStarted(1))
    printer("ex-a", AssistantTextDelta(1, "half a th"))
    printer("ex-b", AssistantTextDelta(1, "other\n"))
    printer("ex-a", AssistantTextDelta(1, "ought\n"))
    printer("ex-a", RunProgress(1, 2, "ex-a", "x", True, "answered"))  # ex-b's lines follow ex-a's, whole
    assert lines == [
        "[ex-a] --- step 1",
        "[ex-a] Thought 1: half a thought",
        "[ex-a] === answer 'x': RIGHT  [1/2]",
        "[ex-b] --- step 1",
        "[ex-b] Thought 1: other",
    ]


def test_the_console_has_no_http_or_dataset_chatter(tmp_path: Path) -> None:
    golds = gold_answers(2)
    env = {**os.environ, "REACT_BENCH_TEST_QUIET_KEY": "test-key-not-real", "HF_DATASETS_CACHE": str(tmp_path / "hf")}
    with MessagesServer(responder=Oracle(golds)) as server:
        result = subprocess.run(
            [
                sys.executable,
                "scripts/eval.py",
                "model=claude-sonnet-4-6",
                f"model.base_url={server.base_url}",
                "model.api_key_env=REACT_BENCH_TEST_QUIET_KEY",
                "n=2",
                f"results_dir={tmp_path}",
                "show=trajectories",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    console = result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    assert "search[" in console.lower() and "=== answer" in console  # the run did talk: trajectories shown
    assert "HTTP Request:" not in console
    assert "Generating train split" not in console and "Generating" not in console
    assert "Warning" not in result.stderr


def test_show_none_prints_only_the_results_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" yes"]))
    result = subprocess.run(
        [
            sys.executable,
            "scripts/eval.py",
            "mode=standard",
            "model=scripted",
            f"model.script={script}",
            "n=1",
            f"results_dir={tmp_path}",
            "show=none",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line.strip()] == [
        line for line in result.stdout.splitlines() if line.startswith("results: ")
    ]
    assert result.stderr == ""


async def _tool_use_run(tmp_path: Path) -> Path:
    """A 3-question tool-use run with thinking, parallel calls, an error result and an errored example."""
    from react_bench.models.base import ThinkingConfig
    from react_bench.testing.messages_server import Fault, Reply
    from react_bench.types import TextBlock, ThinkingBlock, ToolUseBlock

    script = [
        Reply(
            (
                ThinkingBlock("Two searches.", ""),
                TextBlock("Looking."),
                ToolUseBlock("", "search", {"entity": "Scott Derrickson"}),
                ToolUseBlock("", "teleport", {}),
            )
        ),
        Reply((TextBlock("Answer: <script>alert(1)</script> yes"),)),
        Reply((ToolUseBlock("", "finish", {"answer": "no"}),)),
        Fault(400, "invalid_request_error", "a non-retryable failure"),
    ]
    os.environ["REACT_BENCH_TEST_EXPORT_KEY"] = "test-key-not-real"
    with MessagesServer(script) as server:
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=3),
            model=claude_model_config(server.base_url, "REACT_BENCH_TEST_EXPORT_KEY"),
            solve=SolveSettings(mode="react", runner="tool_use", thinking=ThinkingConfig("adaptive")),
            results_dir=tmp_path,
            progress=False,
        )
        return (await evaluate(config, out=io.StringIO())).run_dir


async def test_export_to_inspect_reads_back_with_inspect_ais_reader(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    from react_bench.results import read_records
    from react_bench.studies.export import export_run

    run_dir = await _tool_use_run(tmp_path)
    records = read_records(run_dir)
    log = read_eval_log(str(export_run(run_dir, "inspect")))
    assert log.eval.model == "claude-sonnet-4-6" and log.results is not None
    by_id = {s.id: s for s in log.samples or []}
    assert sorted(by_id) == sorted(r["id"] for r in records)  # every example, once
    assert {score.name for score in log.results.scores} == {"em", "f1"}
    first, second, third = (by_id[r["id"]] for r in records)
    roles = [m.role for m in first.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant"]
    assistant = first.messages[1]
    assert [c.type for c in assistant.content] == ["reasoning", "text"]  # type: ignore[union-attr]
    assert [(c.function, c.arguments) for c in assistant.tool_calls or []] == [
        ("search", {"entity": "Scott Derrickson"}),
        ("teleport", {}),
    ]
    tool_results = first.messages[2:4]
    assert [m.error is not None for m in tool_results] == [False, True]  # type: ignore[union-attr]
    assert {m.tool_call_id for m in tool_results} == {c.id for c in assistant.tool_calls or []}  # type: ignore[union-attr]
    assert first.scores is not None and first.scores["em"].answer == records[0]["prediction"]
    assert first.model_usage["claude-sonnet-4-6"].input_tokens == records[0]["usage"]["input_tokens"]
    assert second.messages[-1].role == "tool" and second.metadata["reason"] == "answered"
    assert third.error is not None and "non-retryable" in third.error.message  # the errored example


async def test_export_to_csv_and_parquet(tmp_path: Path) -> None:
    import pandas as pd

    from react_bench.studies.export import export_run

    run_dir = await _tool_use_run(tmp_path)
    table = pd.read_csv(export_run(run_dir, "csv"))
    assert list(table["reason"]) == ["answered", "answered", "error"]
    assert "usage_input_tokens" in table.columns and "meta_level" in table.columns
    assert pd.read_parquet(export_run(run_dir, "parquet")).equals(pd.read_parquet(run_dir / "examples.parquet"))


async def test_show_summary_names_the_step_in_progress_before_the_example_is_written(tmp_path: Path) -> None:
    """A heartbeat under show=summary: a long first example is not minutes of silence."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" I look.\nAction 1: Search[Gamma]", " Done.\nAction 2: Finish[yes]"]))
    out = io.StringIO()
    seen: list[str] = []

    def check(example_id: str, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionFinished) and event.step == 2:
            seen.append(out.getvalue())

    config = RunConfig(
        task=TaskConfig(name="hotpotqa", n=1),
        model={"provider": "scripted", "script": str(script)},
        solve=SolveSettings(mode="react"),
        results_dir=tmp_path,
        show="summary",
    )
    await evaluate(config, out=out, on_event=check)
    assert seen and "step 1" in seen[0] and "step 2" in seen[0] and "0/1" in seen[0]  # shown before 1/1


async def test_text_fragments_reach_a_sink_that_reads_them_and_are_never_made_for_one_that_does_not(
    tmp_path: Path,
) -> None:
    """A caller's on_event gets the model's text as it streams (AssistantTextDelta) by default;
    with deltas=False the same run's sink gets every step event and the progress, no fragment;
    show=trajectories prints the thoughts whatever the caller asked."""
    from react_bench.events import AssistantTextDelta, StepStarted

    script = tmp_path / "script.json"
    script.write_text(json.dumps([" Look up Gamma.\nAction 1: Search[Gamma]", " Done.\nAction 2: Finish[yes]"]))

    async def run(name: str, deltas: bool, show: str = "none") -> tuple[list[AgentEvent], str]:
        seen: list[AgentEvent] = []
        out = io.StringIO()
        config = RunConfig(
            task=TaskConfig(name="hotpotqa", n=1),
            model={"provider": "scripted", "label": "scripted", "script": str(script)},
            solve=SolveSettings(mode="react"),
            results_dir=tmp_path / name,
            show=show,  # type: ignore[arg-type]
        )
        await evaluate(config, out=out, on_event=lambda _, event: seen.append(event), deltas=deltas)
        return seen, out.getvalue()

    def fragments(events: list[AgentEvent]) -> str:
        return "".join(e.text for e in events if isinstance(e, AssistantTextDelta))

    streamed, _ = await run("default", True)
    assert "Look up Gamma." in fragments(streamed)
    quiet, _ = await run("quiet", False)
    assert fragments(quiet) == ""
    assert [type(e) for e in quiet if not isinstance(e, AssistantTextDelta)] == [
        type(e) for e in streamed if not isinstance(e, AssistantTextDelta)
    ]  # the same steps, calls, observations and progress
    assert sum(isinstance(e, StepStarted) for e in quiet) == 2
    shown, printed = await run("shown", False, show="trajectories")
    assert "Thought 1: Look up Gamma." in printed
