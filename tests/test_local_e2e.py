"""The main job with the real embedded model: 2 HotpotQA questions, text runner, ReAct.

This is the offline default path end to end (llama.cpp in process, offline wiki, offline
data), checked on what it writes; then the run is replayed from its cassette.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import eval_py, records, run_dir_of

pytest.importorskip("llama_cpp", reason="the local extra is not installed (make setup installs it)")
pytestmark = pytest.mark.slow


def test_two_questions_end_to_end_with_the_local_model(tmp_path):
    common = ["task=hotpotqa", "mode=react", "runner=text", "n=2", f"results_dir={tmp_path}"]
    result = eval_py(*common, "model=local", "run_id=local")
    assert result.returncode == 0, result.stderr
    assert "tiny embedded model" in result.stdout and "paper (PaLM-540B)" in result.stdout
    run_dir = run_dir_of(result.stdout)
    assert run_dir == tmp_path / "hotpotqa" / "smollm2-135m" / "react-text" / "local"
    examples = records(run_dir)
    assert len(examples) == 2 and len({e["id"] for e in examples}) == 2
    cassette = [json.loads(line) for line in (run_dir / "calls.jsonl").read_text().splitlines()]
    assert [c["id"] for c in cassette] == [e["id"] for e in examples]
    for example, calls in zip(examples, cassette):
        assert example["reason"] in ("answered", "step_limit")
        assert 1 <= example["steps"] <= 7
        assert example["usage"]["output_tokens"] > 0
        assert example["calls"] == len(calls["completions"]) == example["steps"] + example["bad_calls"]
        history = example["trajectory"][0]["history"]
        assert [m["role"] for m in history] == ["assistant", "user"] * example["steps"]
        called = [e for e in example["trajectory"][0]["events"] if e["type"] == "tool_called"]
        for step, (turn, call) in enumerate(zip(history[0::2], called), start=1):
            text = turn["content"][0]["text"]
            assert text.startswith(f"Thought {step}: ") and f"\nAction {step}: " in text
            action = text.split(f"\nAction {step}: ", 1)[1]
            # The action executed is the one written, first letter lower-cased (the paper's rule).
            assert call["text"] == action[:1].lower() + action[1:]
        finished = [e for e in example["trajectory"][0]["events"] if e["type"] == "episode_finished"]
        assert finished[0]["answer"] == example["prediction"]
        if example["reason"] == "answered":
            last_action = history[-2]["content"][0]["text"].rsplit("Action", 1)[1]
            assert re.search(r"\d+: [Ff]inish\[", last_action)
        else:
            assert example["prediction"] == ""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n"] == 2 and 0.0 <= metrics["em"]["mean"] <= 1.0
    run = json.loads((run_dir / "run.json").read_text())
    assert run["model_capabilities"]["raw_completion"] is True and run["not_applied"] == []

    replay = eval_py(*common, "model=replay", f"model.cassette={run_dir / 'calls.jsonl'}", "run_id=replay")
    assert replay.returncode == 0, replay.stderr
    replayed = records(run_dir_of(replay.stdout))
    assert [(r["id"], r["prediction"], r["steps"]) for r in replayed] == [
        (r["id"], r["prediction"], r["steps"]) for r in examples
    ]
