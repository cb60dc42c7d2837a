"""Context remedies: each sends what it should, the stored history stays complete, replay holds."""

from __future__ import annotations

import json

import pytest

from react_bench.context import ContextConfig
from react_bench.envs.wiki.env import WikiEnv, wiki_format
from react_bench.loop import LoopConfig
from react_bench.methods.core import Solver, SolveSettings
from react_bench.models.base import NoServer, ThinkingConfig
from react_bench.types import ModelResponse, StopReason, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from tests.support import PROMPTS, compare_py, eval_py, records, run_dir_of

SEARCHES = ["Alpha Lake", "Beta River", "Gamma", "Alpha Lake"]


def text_script(final: str = "12 km") -> list[str]:
    steps = [f" look.\nAction {i}: Search[{e}]" for i, e in enumerate(SEARCHES, start=1)]
    return [*steps, f" done.\nAction {len(SEARCHES) + 1}: Finish[{final}]"]


def tool_script() -> list[ModelResponse]:
    def turn(i: int, entity: str) -> ModelResponse:
        blocks = (
            ThinkingBlock(f"think {i}", f"sig-{i}"),
            TextBlock("look"),
            ToolUseBlock(f"t{i}", "search", {"entity": entity}),
        )
        return ModelResponse(blocks, StopReason.TOOL_USE)

    turns = [turn(i, e) for i, e in enumerate(SEARCHES)]
    return [*turns, ModelResponse((TextBlock("Answer: 12 km"),), StopReason.END_TURN)]


def solver(model, wiki, runner: str, context: ContextConfig, **settings) -> Solver:
    thinking = ThinkingConfig("adaptive") if runner == "tool_use" else None
    solve = SolveSettings(
        mode="react", runner=runner, context=context, loop=LoopConfig(max_steps=7), thinking=thinking, **settings
    )  # type: ignore[arg-type]
    return Solver(solve, model, PROMPTS["Question"], lambda: WikiEnv(wiki), wiki_format())


def sent_text(request) -> str:
    if request.prompt is not None:
        return request.prompt
    return "\n".join(getattr(b, "text", "") or getattr(b, "content", "") for m in request.messages for b in m.content)


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_truncate_sends_stubs_for_old_observations_and_keeps_the_history(scripted, wiki, runner):
    script = text_script if runner == "text" else tool_script
    full_model, cut_model = scripted(script()), scripted(script())
    full = await solver(full_model, wiki, runner, ContextConfig()).solve("How long is the river?")
    cut = await solver(cut_model, wiki, runner, ContextConfig("truncate", keep_last=2)).solve("How long is the river?")
    last = sent_text(cut_model.requests[4])  # step 5 sees steps 1-4: 1 and 2 elided, 3 and 4 whole
    assert "[observation of step 1 elided:" in last and "[observation of step 2 elided:" in last
    assert "[observation of step 3 elided:" not in last and "Gamma is a village." in last
    assert "It lies at 300 m" in sent_text(full_model.requests[4])  # the full run resends step 1's page
    assert "It lies at 300 m" not in last.split("[observation of step 2")[0].split("Gamma is a village")[0]
    # the stored history is the full run's, byte for byte
    assert json.dumps(cut.episodes[0].history) == json.dumps(full.episodes[0].history)
    assert cut.prediction == full.prediction == "12 km"
    if runner == "tool_use":  # thinking blocks and their signatures go back unchanged
        sent = [b for m in cut_model.requests[4].messages for b in m.content if isinstance(b, ThinkingBlock)]
        assert [(b.thinking, b.signature) for b in sent[-4:]] == [(f"think {i}", f"sig-{i}") for i in range(4)]


class Summariser(NoServer):
    """A scripted model that answers every compaction request with a fixed summary."""

    def __init__(self, inner, summary: str):
        self.inner, self.summary, self.requests = inner, summary, []
        self.name, self.capabilities = inner.name, inner.capabilities

    def not_applied(self, request):
        return self.inner.not_applied(request)

    async def stream(self, request):
        from react_bench.models.collector import response_to_events

        self.requests.append(request)
        if "Summarise the steps below" in sent_text(request):
            for event in response_to_events(ModelResponse((TextBlock(self.summary),), StopReason.END_TURN)):
                yield event
            return
        async for event in self.inner.stream(request):
            yield event


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_compact_replaces_old_turns_with_one_counted_summary(scripted, wiki, runner):
    script = text_script() if runner == "text" else tool_script()
    summary = "SUMMARY: Alpha Lake is fed by the Beta River, which is 12 km long."
    model = Summariser(scripted(script), summary)
    context = ContextConfig("compact", threshold_tokens=40, keep_recent=1)
    outcome = await solver(model, wiki, runner, context).solve("How long is the river?")
    summary_requests = [r for r in model.requests if "Summarise the steps below" in sent_text(r)]
    assert len(summary_requests) >= 1
    after = model.requests[model.requests.index(summary_requests[0]) + 1]
    assert "(Summary of steps 1-" in sent_text(after) and summary in sent_text(after)
    assert "It lies at 300 m" not in sent_text(after)  # step 1's page is no longer sent
    assert outcome.stats.calls == len(model.requests)  # the summary calls are counted
    stored = len(outcome.episodes[0].history)
    assert stored == (2 * len(SEARCHES) + 2 if runner == "text" else 2 * len(SEARCHES) + 1)  # stored whole


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_subagent_research_returns_the_inner_conclusion(scripted, wiki, runner):
    if runner == "text":
        script = [
            " delegate.\nAction 1: Research[How long is the Beta River?]",
            " inner.\nAction 1: Search[Beta River]",
            " inner done.\nAction 2: Finish[12 km]",
            " so.\nAction 2: Finish[12 km]",
        ]
    else:
        script = [
            ModelResponse(
                (ToolUseBlock("r1", "research", {"question": "How long is the Beta River?"}),), StopReason.TOOL_USE
            ),
            ModelResponse((ToolUseBlock("i1", "search", {"entity": "Beta River"}),), StopReason.TOOL_USE),
            ModelResponse((TextBlock("Answer: 12 km"),), StopReason.END_TURN),
            ModelResponse((TextBlock("Answer: 12 km"),), StopReason.END_TURN),
        ]
    model = scripted(script)
    outcome = await solver(model, wiki, runner, ContextConfig("subagent", inner_max_steps=3)).solve("Q?")
    assert outcome.prediction == "12 km"
    outer, inner = outcome.episodes[0], outcome.episodes[1]
    assert inner.route == "subagent"
    observations = [a.observation for step in outer.steps() for a in step.actions]
    assert observations[0] == "Conclusion of the research on 'How long is the Beta River?': 12 km"
    assert outcome.stats.calls == 4  # the inner calls count
    assert runner == "tool_use" or outcome.usage.output_tokens > 0  # (scripted tool turns carry no usage)
    assert "Research[question]" in sent_text(model.requests[0]) or any(
        t.name == "research" for t in model.requests[0].tools
    )


def test_a_truncate_run_replays_to_the_same_predictions(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(text_script("yes") * 3))
    common = ["mode=react", "context=truncate", "context.keep_last=1", "n=1", f"results_dir={tmp_path}"]
    recorded = eval_py(
        *common, "model=scripted", f"model.script={script}", "run_id=rec", "protocol=custom", cwd=tmp_path
    )
    assert recorded.returncode == 0, recorded.stderr
    run_dir = run_dir_of(recorded.stdout)
    replayed = eval_py(
        "model=replay", f"model.cassette={run_dir / 'calls.jsonl'}", f"results_dir={tmp_path / 'r'}", cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    a, b = records(run_dir), records(run_dir_of(replayed.stdout))
    assert [r["prediction"] for r in a] == [r["prediction"] for r in b] == ["yes"]
    assert (
        json.loads((run_dir_of(replayed.stdout) / "run.json").read_text())["config"]["solve"]["context"]["name"]
        == "truncate"
    )


def test_the_stub_names_step_action_and_size():
    from react_bench.context import truncate
    from react_bench.types import Message

    history = [
        Message.assistant("Thought 1: x\nAction 1: Search[Alpha]"),
        Message("user", (ToolResultBlock("step-1", "abc"),)),
        Message.assistant("Thought 2: y\nAction 2: Search[Beta]"),
        Message("user", (ToolResultBlock("step-2", "defg"),)),
    ]
    viewed = truncate(history, keep_last=1)
    assert viewed[1].content[0].content == "[observation of step 1 elided: Search[Alpha], 3 characters]"
    assert viewed[3] == history[3] and viewed[0] == history[0]


def test_compare_puts_runs_that_differ_only_in_context_side_by_side(tmp_path):

    script = tmp_path / "script.json"
    script.write_text(json.dumps(text_script("yes")))
    for context in ("full", "truncate"):
        done = eval_py(
            "mode=react",
            f"context={context}",
            "n=1",
            "model=scripted",
            f"model.script={script}",
            f"results_dir={tmp_path / 'runs'}",
            "protocol=custom",
            "show=none",
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
    out = tmp_path / "cmp"
    done = compare_py(tmp_path / "runs", out=out)
    assert done.returncode == 0, done.stderr
    rows = [line for line in (out / "context.md").read_text().splitlines() if line.startswith("| hotpotqa")]
    assert [row.split("|")[5].strip() for row in rows] == ["full", "truncate"]


async def test_window_keeps_the_last_characters_of_the_trajectory_as_the_webshop_notebook_did(scripted, wiki):
    """The text runner's prompt: exemplars whole, then the trajectory's last ``window - len(head)``
    characters (cut mid-text), the suffix included; the stored history stays complete."""
    full_model, window_model = scripted(text_script()), scripted(text_script())
    full = await solver(full_model, wiki, "text", ContextConfig()).solve("How long is the Beta River?")
    window = 160
    cut = await solver(window_model, wiki, "text", ContextConfig(name="window", window_chars=window)).solve(
        "How long is the Beta River?"
    )
    assert full.prediction == cut.prediction == "12 km"
    assert cut.episodes[0].history == full.episodes[0].history  # what is stored is never cut
    head = "<instruction react>\n<exemplars react>\n"
    for whole, sent in zip(full_model.requests, window_model.requests, strict=True):
        assert whole.prompt.startswith(head)
        expected = head + whole.prompt[len(head) :][-(window - len(head)) :]
        assert sent.prompt == expected and len(sent.prompt) <= window
    assert len(full_model.requests[-1].prompt) > window  # the last prompts were really cut


async def test_window_keeps_the_newest_whole_steps_for_the_tool_use_runner(scripted, wiki):
    model = scripted(tool_script())
    outcome = await solver(model, wiki, "tool_use", ContextConfig(name="window", window_chars=300)).solve("Q?")
    assert outcome.prediction == "12 km"
    last = model.requests[-1]
    results = [b for m in last.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert 1 <= len(results) < len(SEARCHES)  # old steps dropped whole: every result kept is paired with its call
    calls = {b.id for m in last.messages for b in m.content if isinstance(b, ToolUseBlock)}
    assert {r.tool_use_id for r in results} <= calls
