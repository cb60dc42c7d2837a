"""The peer benchmark's inspect_ai side (``bench/peer_inspect.py``): inspect's ``react()`` on
react-bench's questions and wiki tools, through the real SDK against the Messages API server,
answered by the walk (search a supporting page, then ``submit`` the gold answer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.environment import Action
from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import MessagesServer
from tests.support_oracle import Oracle, gold_answers

pytest.importorskip("inspect_ai")

REPO = Path(__file__).resolve().parents[1]


async def test_inspect_react_answers_through_the_same_tools(tmp_path):
    golds = gold_answers(2)
    with MessagesServer(responder=Oracle(golds)) as server:
        done = subprocess.run(
            [sys.executable, "bench/peer_inspect.py", "--base-url", server.base_url, "--n", "2", "--concurrency", "2"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "ANTHROPIC_API_KEY": "local-test-key-not-real", "INSPECT_LOG_DIR": str(tmp_path)},
        )
        bodies = [r.body for r in server.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == {"status": "success", "samples": 2, "scored": 2, "accuracy": 1.0, "error": None}
    assert len(bodies) == 4  # two calls a question
    tools = {t["name"]: t for t in bodies[0]["tools"]}
    assert set(tools) == {"search", "lookup", "submit"}  # react-bench's wiki actions, inspect's answer tool
    assert tools["search"]["input_schema"]["required"] == ["entity"]
    # the second call carries exactly what react-bench's own wiki environment answers to that search
    second = next(b for b in bodies if len(b["messages"]) == 3)  # question, search, its result
    (use,) = [b for b in second["messages"][1]["content"] if b["type"] == "tool_use"]
    (result,) = [b for b in second["messages"][2]["content"] if b["type"] == "tool_result"]
    sent = result["content"] if isinstance(result["content"], str) else "".join(c["text"] for c in result["content"])
    task = load_task("hotpotqa")
    config = TaskConfig(name="hotpotqa", n=2)
    env = task.environment(config, task.env_config({}, "paper"))()
    assert sent == (await env.step(Action("search", use["input"]))).text
