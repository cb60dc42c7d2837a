"""The OpenAI-compatible client against a real ``python -m llama_cpp.server`` with SmolLM2-135M
on 127.0.0.1 (started here, stopped after); the chunk mapping on chunks recorded from that
server and in OpenAI's own shape; message conversion; the client-side stop scanner."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from openai.types.chat import ChatCompletionChunk

from react_bench.errors import ConfigError
from react_bench.events import StreamEvent, TextDelta
from react_bench.models.base import ModelRequest
from react_bench.models.collector import collect
from react_bench.models.openai_compat import OpenAICompatClient, OpenAIConfig, StreamMapper, to_openai_messages
from react_bench.models.stopping import StopScanner
from react_bench.types import Message, ModelResponse, StopReason, TextBlock, ToolResultBlock, ToolUseBlock

PROMPT = "Question: What is the capital of France?\nThought 1:"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    missing = [
        m for m in ("llama_cpp", "fastapi", "sse_starlette", "starlette_context") if not importlib.util.find_spec(m)
    ]
    if missing:
        pytest.skip(f"llama-cpp-python[server] is not installed ({missing}): .ci/install_llama_cpp.sh .venv/bin/pip")
    from react_bench.models.local_files import smollm2_path

    try:
        gguf = smollm2_path()
    except ConfigError as exc:
        pytest.skip(str(exc))
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--verbose",
        "False",
    ]
    # A file, not a pipe: uvicorn's request log would fill a pipe and block the server.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield _wait_until_up(f"http://127.0.0.1:{port}/v1", process, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(base_url: str, process: subprocess.Popen[bytes], log: IO[bytes]) -> str:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"llama_cpp.server exited: {log.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"{base_url}/models", timeout=1).close()
            return base_url
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def client(base_url: str, max_stop_sequences: int = 4) -> OpenAICompatClient:
    config = OpenAIConfig(name="smollm2", base_url=base_url, key_env=None, max_stop_sequences=max_stop_sequences)
    return OpenAICompatClient(config)


async def _run(model: OpenAICompatClient, request: ModelRequest) -> tuple[list[StreamEvent], ModelResponse]:
    events = [event async for event in model.stream(request)]
    return events, collect(events)


def text_of(response: ModelResponse) -> str:
    block = response.content[0]
    assert isinstance(block, TextBlock)
    return block.text


async def test_completion_streams_and_honours_stops_on_the_server_and_client_side(server: str) -> None:
    greedy = ModelRequest(prompt=PROMPT, max_tokens=60, temperature=0.0)
    events, free = await _run(client(server), greedy)
    text = text_of(free)
    assert "\nThought 2:" in text, "the prompt no longer makes the model write a second thought"
    assert sum(isinstance(e, TextDelta) for e in events) > 3  # streamed, not one piece
    expected = (TextBlock(text.split("\nThought 2:")[0]),)

    stopped = ModelRequest(prompt=PROMPT, max_tokens=60, temperature=0.0, stop=("\nThought 2:",))
    _, server_side = await _run(client(server), stopped)
    assert server_side.content == expected
    # No stops sent: the client cuts the stream itself and knows which stop hit.
    _, client_side = await _run(client(server, max_stop_sequences=0), stopped)
    assert client_side.content == expected
    assert client_side.stop_reason == StopReason.STOP_SEQUENCE
    assert client_side.stop_sequence == "\nThought 2:"


async def test_chat_streams_text_through_the_servers_template(server: str) -> None:
    request = ModelRequest(
        system="Answer in one sentence.", messages=(Message.user("What is 2+2?"),), max_tokens=40, temperature=0.0
    )
    events, reply = await _run(client(server), request)
    assert reply.stop_reason in (StopReason.END_TURN, StopReason.MAX_TOKENS)
    assert text_of(reply).strip()
    assert sum(isinstance(e, TextDelta) for e in events) > 3


async def test_samples_get_their_own_seed(server: str) -> None:
    def sample(k: int) -> ModelRequest:
        return ModelRequest(prompt=PROMPT, max_tokens=20, temperature=1.0, sample_index=k)

    texts = [(await _run(client(server), sample(k)))[1].content for k in (0, 1, 0)]
    assert texts[0] == texts[2] != texts[1]


def test_a_missing_key_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REACT_BENCH_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="REACT_BENCH_TEST_KEY"):
        OpenAICompatClient(OpenAIConfig(name="m", key_env="REACT_BENCH_TEST_KEY"))


# Recorded from `python -m llama_cpp.server` (forced tool_choice): id and name on every fragment.
def _llama_server_tool_chunks() -> list[ChatCompletionChunk]:
    head = {"id": "chatcmpl-1", "created": 1, "model": "m", "object": "chat.completion.chunk"}
    call_id = "call__0_search_chatcmpl-1"
    pieces = ["{", ' "', "en", "ti", "ty", '"', " ", ":", ' "', "Paris", ",", " France", '"', " }", ""]
    chunks = [{**head, "choices": [{"delta": {"role": "assistant"}, "index": 0}]}]
    for piece in pieces:
        fn = {"arguments": piece, "name": "search"}
        delta = {"function_call": fn, "tool_calls": [{"index": 0, "id": call_id, "function": fn, "type": "function"}]}
        chunks.append({**head, "choices": [{"delta": delta, "index": 0}]})
    chunks.append({**head, "choices": [{"delta": {}, "index": 0, "finish_reason": "tool_calls"}]})
    return [ChatCompletionChunk.model_validate(c) for c in chunks]


# OpenAI's shape: text first, then two calls; id and name only on each call's first fragment; usage last.
def _openai_tool_chunks() -> list[ChatCompletionChunk]:
    head = {"id": "chatcmpl-2", "created": 1, "model": "gpt", "object": "chat.completion.chunk"}

    def call(index: int, args: str, id_: str | None = None, name: str | None = None) -> dict[str, object]:
        fn = {"arguments": args} | ({"name": name} if name else {})
        return {"index": index, "function": fn} | ({"id": id_, "type": "function"} if id_ else {})

    deltas = [
        {"role": "assistant", "content": "I will search"},
        {"content": " both."},
        {"tool_calls": [call(0, "", "call_a", "search")]},
        {"tool_calls": [call(0, '{"entity": "Ar')]},
        {"tool_calls": [call(1, '{"entity"', "call_b", "search")]},
        {"tool_calls": [call(0, 'thur"}')]},
        {"tool_calls": [call(1, ': "First"}')]},
    ]
    chunks = [{**head, "choices": [{"delta": d, "index": 0}]} for d in deltas]
    chunks.append({**head, "choices": [{"delta": {}, "index": 0, "finish_reason": "tool_calls"}]})
    usage = {
        "prompt_tokens": 50,
        "completion_tokens": 20,
        "total_tokens": 70,
        "prompt_tokens_details": {"cached_tokens": 32},
    }
    chunks.append({**head, "choices": [], "usage": usage})
    return [ChatCompletionChunk.model_validate(c) for c in chunks]


def _map(chunks: list[ChatCompletionChunk]) -> ModelResponse:
    mapper = StreamMapper()
    events = [e for chunk in chunks for e in mapper.feed(chunk)] + mapper.finish()
    return collect(events)


def test_tool_call_fragments_become_tool_use_blocks() -> None:
    reply = _map(_llama_server_tool_chunks())
    call = ToolUseBlock("call__0_search_chatcmpl-1", "search", {"entity": "Paris, France"})
    assert reply.content == (call,)
    assert reply.stop_reason == StopReason.TOOL_USE

    reply = _map(_openai_tool_chunks())
    assert reply.content == (
        TextBlock("I will search both."),
        ToolUseBlock("call_a", "search", {"entity": "Arthur"}),
        ToolUseBlock("call_b", "search", {"entity": "First"}),
    )
    usage = reply.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens, usage.output_tokens) == (18, 32, 20)


def test_tool_results_follow_the_call_as_tool_messages() -> None:
    request = ModelRequest(
        system="Be brief.",
        messages=(
            Message.user("Compare them."),
            Message.assistant(
                "Searching.", ToolUseBlock("a", "search", {"entity": "X"}), ToolUseBlock("b", "search", {"entity": "Y"})
            ),
            Message.user(
                ToolResultBlock("b", "Y is ..."), ToolResultBlock("a", "no page", is_error=True), TextBlock("Go on.")
            ),
        ),
    )
    roles = [(m["role"], m.get("tool_call_id")) for m in to_openai_messages(request)]
    assert roles == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "b"),
        ("tool", "a"),
        ("user", None),
    ]
    messages = to_openai_messages(request)
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["a", "b"]
    assert messages[4]["content"] == "ERROR: no page"


@pytest.mark.parametrize("split", [1, 2, 3, 5, 8])
def test_stop_scanner_cuts_a_stop_split_across_pieces(split: int) -> None:
    text = "Thought: look it up\nAction 1: Search[X]\nObservation 1: X is a y."
    scanner = StopScanner(["\nObservation 1:", "\nQuestion:"])
    pieces = [text[i : i + split] for i in range(0, len(text), split)]
    emitted = "".join(scanner.feed(p) for p in pieces)
    assert emitted == "Thought: look it up\nAction 1: Search[X]"
    assert scanner.hit == "\nObservation 1:" and scanner.rest.startswith(" X is")


def test_stop_scanner_releases_a_held_prefix_that_was_not_a_stop() -> None:
    scanner = StopScanner(["\nObservation"])
    assert scanner.feed("a\nObs") == "a"
    assert scanner.feed("erved") == "\nObserved"
    assert scanner.feed("\n") == ""
    assert scanner.flush() == "\n" and scanner.hit is None


async def test_the_client_declares_its_server_and_closes_its_connection_pool() -> None:
    """``endpoint``, ``sdk`` and ``aclose`` are declared on ``ModelClient``: a run records the first
    two and closes the client at its end (the OpenAI client had no ``aclose``: its pool stayed open)."""
    from react_bench.models.base import ModelClient, endpoint_host
    from react_bench.models.cache import CachedModel
    from react_bench.models.scripted import ScriptedModel

    client = OpenAICompatClient(OpenAIConfig(name="m", base_url="http://127.0.0.1:9/v1/", key_env=None))
    layered = CachedModel(client, directory=Path(tempfile.mkdtemp()))
    assert isinstance(client, ModelClient) and isinstance(layered, ModelClient)
    assert (endpoint_host(layered), layered.sdk) == ("127.0.0.1:9", client.sdk) and client.sdk.startswith("openai ")
    await layered.aclose()
    assert client._client.is_closed()
    in_process = ScriptedModel([])
    assert isinstance(in_process, ModelClient) and (in_process.endpoint, in_process.sdk) == (None, None)
    await in_process.aclose()
