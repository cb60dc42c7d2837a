"""Prompt-cache breakpoints over whole episodes, through the real SDK against the Messages API
server (which applies Anthropic's cache rules: the model's minimum cacheable length, reads at
block boundaries): a cache write costs 1.25x, so one that no later request reads makes caching
dearer than no caching. At the step cap under give_up no request follows the last step's, so
that step's turn is not written; with wrap_up the wrap-up call reads it and writes nothing."""

from __future__ import annotations

import io

import pytest

from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.results import billed_equivalent_input
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from react_bench.testing.sse import CacheSimulator
from react_bench.testing.walker import Walk, WalkResponder

KEY_ENV = "REACT_BENCH_TEST_CACHING_KEY"
MODEL = "claude-opus-4-1"  # a 1,024-token minimum, and prefill: the text runner's own form


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-real")


async def run(tmp_path, runner: str, caching: bool = True, shots: int | None = None, on_limit: str = "give_up"):
    """A 7-step episode that never answers (the walk would finish at step 99)."""
    with MessagesServer(responder=WalkResponder(Walk(steps=99))) as server:
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=1),
            model=claude_model_config(server.base_url, KEY_ENV, MODEL, prompt_caching=caching),
            solve=SolveSettings(runner=runner, shots=shots, loop=LoopConfig(on_limit=on_limit)),  # type: ignore[arg-type]
            results_dir=tmp_path / f"{runner}-{caching}-{shots}-{on_limit}",
            request_cache="off",
            progress=False,
        )
        result = await evaluate(cfg, out=io.StringIO())
        bodies = [r.body for r in server.requests]
    return result, bodies


def newest_mark(body: dict) -> tuple[int, int]:
    """(message, block) of the last breakpoint in the messages."""
    marks = [(i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"]) if "cache_control" in b]
    return max(marks, default=(-1, -1))


def usages(bodies: list[dict]) -> list[dict]:
    """Each request's usage as the server billed it: its cache simulator, replayed in order."""
    cache = CacheSimulator()
    return [cache.usage(body).to_dict() for body in bodies]


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_last_step_at_the_cap_writes_nothing(tmp_path, runner):
    result, bodies = await run(tmp_path, runner)
    assert result.metrics["mean_steps"] == 7 and len(bodies) == 7
    used = usages(bodies)
    assert used[-1]["cache_creation_input_tokens"] == 0  # nothing written that no request would read
    # ... and all that the step before had cached is read
    assert (
        used[-1]["cache_read_input_tokens"]
        == used[-2]["cache_read_input_tokens"] + used[-2]["cache_creation_input_tokens"]
    )
    assert all(u["cache_creation_input_tokens"] > 0 for u in used[1:-1])  # every other step writes its turn
    # up to step 6 each request marks its own end; step 7 marks where step 6 did, not its own end
    newest = [newest_mark(b) for b in bodies]
    assert newest[-1] == newest[-2] and newest[-2] > newest[-3]
    assert sum(len(m["content"]) for m in bodies[-1]["messages"]) > sum(
        len(m["content"]) for m in bodies[-2]["messages"]
    )


async def test_a_text_wrap_up_reads_the_last_step(tmp_path):
    result, bodies = await run(tmp_path, "text", on_limit="wrap_up")
    assert len(bodies) == 8  # 7 steps, then the wrap-up call
    used = usages(bodies)
    assert used[6]["cache_creation_input_tokens"] > 0  # step 7's turn is written: the wrap-up reads it
    assert (
        used[7]["cache_read_input_tokens"]
        == used[6]["cache_read_input_tokens"] + used[6]["cache_creation_input_tokens"]
    )
    assert used[7]["cache_creation_input_tokens"] == 0


async def test_a_tool_use_wrap_up_changes_tool_choice_so_the_last_step_is_not_written(tmp_path):
    """tool_choice none drops the cached messages (as the API documents): step 7's turn would
    be written for nothing."""
    result, bodies = await run(tmp_path, "tool_use", on_limit="wrap_up")
    assert len(bodies) == 8 and bodies[-1]["tool_choice"] == {"type": "none"}
    used = usages(bodies)
    assert used[6]["cache_creation_input_tokens"] == 0 and used[6]["cache_read_input_tokens"] > 0
    # the wrap-up reads only the tools and system (its messages are under another tool_choice)
    head = usages([{**bodies[-1], "messages": []}])[0]["input_tokens"]
    assert used[7]["cache_read_input_tokens"] <= head


async def test_zero_shot_caching_is_never_dearer_than_none(tmp_path):
    """Zero-shot, a 7-step episode's prompt reaches the minimum only at its end: whatever is
    cacheable is read, and nothing is written for nothing."""
    on, _ = await run(tmp_path, "tool_use", caching=True, shots=0)
    off, _ = await run(tmp_path, "tool_use", caching=False, shots=0)
    assert billed_equivalent_input(on.metrics["usage"]) <= billed_equivalent_input(off.metrics["usage"])
