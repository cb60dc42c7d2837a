"""The whole harness against Claude's wire protocol: evaluate() -> AnthropicClient -> the real
SDK -> the local Messages API server, which enforces the API's rules (prefill, sampling,
thinking signatures, tool pairing). Settings the model refuses are recorded, not sent."""

from __future__ import annotations

import io
import json
import re

import pytest

from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.models.base import ThinkingConfig
from react_bench.models.capabilities import cost_usd
from react_bench.results import format_table
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, task_info
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from react_bench.types import TextBlock, ThinkingBlock, ToolUseBlock, Usage

KEY_ENV = "REACT_BENCH_TEST_CLAUDE_KEY"
FIRST_ID = "5a8b57f25542995d1e6f1371"  # "Were Scott Derrickson and Ed Wood of the same nationality?"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-real")
    with MessagesServer() as srv:
        yield srv
        srv.assert_complete()


def run_config(server, tmp_path, model: str, **solve) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", ids=(FIRST_ID,)),
        model=claude_model_config(server.base_url, KEY_ENV, model),
        solve=SolveSettings(**solve),
        results_dir=tmp_path,
        progress=False,
    )


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_text_runner_on_a_model_without_prefill_or_temperature(server, tmp_path, prepared_dir):
    server.enqueue(
        Reply.text(
            "Thought 1: I should check Scott Derrickson first.\nAction 1: Search[Scott Derrickson]\n"
            "Observation 1: invented"
        ),
        Reply.text("Thought 2: Both are American.\nAction 2: Finish[yes]"),
    )
    out = io.StringIO()
    result = await evaluate(run_config(server, tmp_path, "claude-opus-4-7", mode="react"), out=out)
    (record,) = lines(result.run_dir / "examples.jsonl")
    assert (record["prediction"], record["em"], record["steps"], record["bad_calls"]) == ("yes", 1.0, 2, 0)
    bodies = [r.body for r in server.requests]
    for step, body in enumerate(bodies, start=1):
        assert body["messages"][-1]["role"] == "user"  # no prefill on Opus 4.7
        assert "temperature" not in body and "top_p" not in body
        assert f"\nObservation {step}:" in body["stop_sequences"]
    blocks = bodies[1]["messages"][0]["content"]
    # one block per prompt part (exemplars, question, each step, the instruction to continue)
    assert len(blocks) == 4 and blocks[1]["text"].startswith("Question: ")
    assert blocks[3]["text"].endswith(
        "Begin your reply with `Thought 2:` and follow the format of the examples exactly."
    )  # noqa: E501
    second_prompt = "".join(b["text"] for b in blocks)
    assert (
        "Thought 1: I should check Scott Derrickson first.\nAction 1: Search[Scott Derrickson]\n"
        "Observation 1: Scott Derrickson" in second_prompt
    )
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["not_applied"] == ["temperature=0.0"]
    assert result.metrics["not_applied"] == ["temperature=0.0"]
    table = format_table(result.summary, task_info("hotpotqa"))
    assert re.search(r"^NOT APPLIED +temperature=0.0$", table, re.MULTILINE)
    assert "does not take temperature=0.0" in out.getvalue()
    # cost at the table's prices (far below the long-prompt tier, so the sum of the calls' usage prices the same)
    expected = cost_usd("claude-opus-4-7", Usage.from_dict(record["usage"]))
    assert expected is not None
    assert record["cost_usd"] == pytest.approx(expected) and expected > 0
    assert result.metrics["cost_usd"]["total"] == pytest.approx(expected)
    assert result.metrics["cost_usd"]["per_correct"] == pytest.approx(expected)  # the one example is right
    assert re.search(r"^spent \(USD\) +\d+\.\d{4} +calls that reached the API", table, re.M)
    assert re.search(r"^cost of the answers +\d+\.\d{4} +per example", table, re.M)


async def test_tool_use_runner_with_thinking_sent_back_verbatim(server, tmp_path, prepared_dir):
    server.enqueue(
        Reply(
            (
                ThinkingBlock("Search both people.", ""),
                TextBlock("Let me look."),
                ToolUseBlock("", "search", {"entity": "Scott Derrickson"}),
                ToolUseBlock("", "search", {"entity": "Ed Wood"}),
            )
        ),
        Reply((TextBlock("Both are American.\nAnswer: yes"),)),
    )
    settings = dict(mode="react", runner="tool_use", thinking=ThinkingConfig("adaptive"), loop=LoopConfig(max_steps=7))
    result = await evaluate(run_config(server, tmp_path, "claude-sonnet-4-6", **settings), out=io.StringIO())
    (record,) = lines(result.run_dir / "examples.jsonl")
    assert (record["prediction"], record["reason"], record["steps"]) == ("yes", "answered", 2)
    first, second = (r.body for r in server.requests)
    assert first["thinking"]["type"] == "adaptive" and "temperature" not in first
    assert [t["name"] for t in first["tools"]] == ["search", "lookup", "finish"]
    # the few-shot exemplars come first as native turns, the question closes their last message
    exemplar_calls = [b for m in first["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert len(exemplar_calls) > 6 and all(b["id"].startswith("toolu_example_") for b in exemplar_calls)
    assert first["messages"][-1]["content"][-1]["text"].startswith("Question: Were Scott Derrickson")
    sent_back = second["messages"][-2]["content"]
    assert sent_back[0]["type"] == "thinking" and sent_back[0]["signature"]  # accepted by the server's check
    results = second["messages"][-1]["content"]
    assert [b["type"] for b in results] == ["tool_result", "tool_result"]
    assert [b["tool_use_id"] for b in results] == [b["id"] for b in sent_back if b["type"] == "tool_use"]
    (cassette,) = lines(result.run_dir / "calls.jsonl")
    assert cassette["responses"][0][0]["type"] == "thinking"
    usage = record["usage"]
    # the exemplars make the prefix long enough to cache: the second turn reads the first's
    assert usage["cache_creation_input_tokens"] > 0 and usage["cache_read_input_tokens"] > 0
    marked = [b for m in second["messages"] for b in m["content"] if "cache_control" in b]
    assert marked[0]["type"] == "tool_result" and marked[-1] is results[-1]
