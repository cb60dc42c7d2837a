"""The Anthropic client end to end: the real SDK against the local Messages API server.

No mocked SDK objects: every call goes over HTTP on 127.0.0.1 and is validated by the
server with the rules the real API enforces (DESIGN 6b), so a 400 here is a 400 there.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import yaml

from react_bench.events import StreamEvent, TextDelta, ThinkingDelta, ToolInputDelta
from react_bench.models import make_model
from react_bench.models.anthropic import AnthropicClient, AnthropicConfig, sdk_model_ids, stream_events_from_payloads
from react_bench.models.base import (
    ConfigError,
    ModelClient,
    ModelError,
    ModelRequest,
    ThinkingConfig,
    ToolSpec,
    generate,
)
from react_bench.models.capabilities import capabilities_for, cost_usd, known_models, model_info
from react_bench.models.collector import collect
from react_bench.models.counting import counting_scope
from react_bench.models.retrying import RetryingModel
from react_bench.testing.messages_server import (
    Dropped,
    Fault,
    MessagesServer,
    RawStream,
    Reply,
    StreamError,
    Truncated,
)
from react_bench.testing.sse import CacheSimulator, build_message, encode_sse, parse_sse, stream_events
from react_bench.types import Message, StopReason, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, Usage

KEY_ENV = "REACT_BENCH_TEST_ANTHROPIC_KEY"
KEY = "local-test-key-never-logged-0123456789"  # not a real key, never a real key's shape
SEARCH = ToolSpec(
    "search", "Search Wikipedia for an entity.", {"type": "object", "properties": {"entity": {"type": "string"}}}
)
FIXTURE = Path(__file__).parent / "fixtures" / "anthropic_stream_tool_use.sse"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MessagesServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with MessagesServer(json_chunk=2) as srv:
        yield srv
        srv.assert_complete()


@pytest.fixture
async def make(server: MessagesServer) -> AsyncIterator[Callable[..., AnthropicClient]]:
    made: list[AnthropicClient] = []

    def factory(model: str = "claude-sonnet-5-5", **kwargs: object) -> AnthropicClient:
        config = AnthropicConfig(name=model, api_key_env=KEY_ENV, base_url=server.base_url, **kwargs)  # type: ignore[arg-type]
        made.append(AnthropicClient(config))
        return made[-1]

    yield factory
    for client in made:
        await client.aclose()


def ask(*messages: Message, **kwargs: object) -> ModelRequest:
    return ModelRequest(messages=messages or (Message.user("Who wrote Hamlet?"),), max_tokens=4096, **kwargs)  # type: ignore[arg-type]


async def run(client: AnthropicClient, request: ModelRequest) -> tuple[object, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = await generate(client, request, on_event=events.append)
    return response, events


async def test_streamed_text(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    server.enqueue(Reply.text("William Shakespeare wrote Hamlet around 1600."))
    client = make()
    assert isinstance(client, ModelClient) and client.name == "claude-sonnet-5-5"
    response, events = await run(client, ask())
    assert response.text == "William Shakespeare wrote Hamlet around 1600."
    assert response.stop_reason is StopReason.END_TURN
    assert sum(isinstance(e, TextDelta) for e in events) > 5  # it really streamed in fragments
    assert server.requests[0].body["stream"] is True


async def test_thinking_is_streamed_and_sent_back_verbatim(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(
        Reply((ThinkingBlock('I should search "Hamlet".', ""), ToolUseBlock("toolu_h", "search", {"entity": "Hamlet"})))
    )
    server.enqueue(Reply.text("Shakespeare."))
    client = make()
    request = ask(tools=(SEARCH,), thinking=ThinkingConfig("adaptive"))
    first, events = await run(client, request)
    thinking = first.content[0]
    assert (
        isinstance(thinking, ThinkingBlock) and thinking.thinking == 'I should search "Hamlet".' and thinking.signature
    )
    assert any(isinstance(e, ThinkingDelta) for e in events)
    assert server.requests[0].body["thinking"] == {"type": "adaptive", "display": "summarized"}

    history = (
        *request.messages,
        first.as_message(),
        Message.user(ToolResultBlock("toolu_h", "Hamlet is a tragedy by Shakespeare.")),
    )
    second = await generate(client, ask(*history, tools=(SEARCH,), thinking=ThinkingConfig("adaptive")))
    assert second.text == "Shakespeare."
    sent = server.requests[1].body["messages"][1]["content"][0]
    assert (sent["thinking"], sent["signature"]) == (thinking.thinking, thinking.signature)

    tampered = Message("assistant", (ThinkingBlock("I should guess.", thinking.signature), *first.content[1:]))
    with pytest.raises(ModelError, match="Invalid `signature` in `thinking` block") as error:
        await generate(client, ask(request.messages[0], tampered, history[-1], tools=(SEARCH,)))
    assert error.value.status == 400 and not error.value.retryable


async def test_tool_use_with_fragmented_input(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    arguments = {"entity": 'Café "Le Procope" \\ Paris', "n": 2}
    server.enqueue(Reply((TextBlock("Searching."), ToolUseBlock("", "search", arguments))))
    response, events = await run(make(), ask(tools=(SEARCH,)))
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.tool_uses[0].input == arguments and response.tool_uses[0].id.startswith("toolu_")
    assert sum(isinstance(e, ToolInputDelta) for e in events) >= 20
    assert server.requests[0].body["tools"][0]["input_schema"] == SEARCH.input_schema


async def test_usage_with_cache_tokens_and_breakpoints(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.responder = lambda _: Reply((ToolUseBlock("", "search", {"entity": "Hamlet"}),))
    client = make()
    # above Sonnet 5.5's 2,048-token minimum, so the API (and the server) cache it
    system = "Answer the question with the search, lookup and finish tools, thinking before each call. " * 150
    first = await generate(client, ask(system=system, tools=(SEARCH,)))
    history = (
        Message.user("Who wrote Hamlet?"),
        first.as_message(),
        Message.user(ToolResultBlock(first.tool_uses[0].id, "obs")),
    )
    second = await generate(client, ask(*history, system=system, tools=(SEARCH,)))
    server.responder = None

    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens > 0 and second.usage.output_tokens > 0
    body = server.requests[1].body
    marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [b["type"] for b in marked] == ["tool_use", "tool_result"]  # before the newest turn; the newest turn
    assert cost_usd("claude-sonnet-5-5", second.usage) is not None


async def test_prompt_caching_can_be_turned_off(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    server.enqueue(Reply.text("ok"))
    response = await generate(make(prompt_caching=False), ask(system="Be brief.", tools=(SEARCH,)))
    assert "cache_control" not in json.dumps(server.requests[0].body)
    assert response.usage.cache_creation_input_tokens == response.usage.cache_read_input_tokens == 0


async def test_protocol_violation_is_a_clear_400(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    unanswered = Message.assistant(ToolUseBlock("toolu_1", "search", {"entity": "Hamlet"}))
    with pytest.raises(ModelError) as error:
        await generate(make(), ask(Message.user("q"), unanswered, Message.user("Continue.")))
    assert error.value.status == 400 and not error.value.retryable
    assert "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1" in str(error.value)
    assert len(server.requests) == 1  # a 400 is not retried


def retrying(client: AnthropicClient, waits: list[float], max_retries: int = 4) -> RetryingModel:
    async def record(seconds: float) -> None:
        waits.append(seconds)

    return RetryingModel(client, max_retries=max_retries, backoff_s=0.001, sleep=record)


async def test_faults_and_cut_streams_are_retried_honouring_retry_after(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(
        Fault.overloaded(retry_after_ms=5),
        Fault.rate_limited(0.25),
        Truncated(Reply.text("Partial text that must never be used."), after_events=5),
        Dropped(Reply.text("Another partial answer, dropped."), after_events=4),
        StreamError(Reply.text("An error event inside the stream."), after_events=3),
        Reply.text("Recovered."),
    )
    waits: list[float] = []
    with counting_scope() as counts:
        response = await generate(retrying(make(), waits, max_retries=5), ask())
    assert response.text == "Recovered."  # nothing of the partial streams leaked in
    assert [r.status for r in server.requests] == [529, 429, 200, 200, 200, 200]
    assert {r.headers["x-stainless-retry-count"] for r in server.requests} == {"0"}  # the SDK does not retry
    assert waits[:2] == [0.005, 0.25]  # the server's retry-after-ms and retry-after
    assert all(0 < w <= 0.001 * 2**k for k, w in enumerate(waits) if k >= 2)  # jittered exponential backoff
    assert counts.retries == 5


async def test_retries_run_out_into_a_retryable_model_error(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(*[Fault.overloaded(retry_after_ms=1)] * 3)
    with pytest.raises(ModelError, match="529 overloaded_error.*after 3 attempts") as error:
        await generate(retrying(make(), [], max_retries=2), ask())
    assert error.value.status == 529 and error.value.retryable


async def test_a_400_is_never_retried(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    server.enqueue(Fault(400, "invalid_request_error", "bad request"))
    with pytest.raises(ModelError, match="400"):
        await generate(retrying(make(), []), ask())
    assert len(server.requests) == 1


async def test_unknown_stream_events_blocks_and_deltas_are_ignored(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    body = {"model": "claude-sonnet-5-5", "messages": []}
    events = stream_events(build_message(Reply.text("Hello there friend"), body, number=1, cache=CacheSimulator(0)))
    novel = [
        ("future_event", {"type": "future_event", "data": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 5, "content_block": {"type": "hologram"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 5, "delta": {"type": "hologram_delta"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 5}),
    ]
    raw = b"".join(encode_sse(n, p) for n, p in [*events[:2], *novel, *events[2:]])
    server.enqueue(RawStream(raw))
    response = await generate(make(), ask())
    assert (response.text, response.stop_reason) == ("Hello there friend", StopReason.END_TURN)


async def test_failures_mid_stream(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    client = make()
    server.enqueue(Dropped(Reply.text("A long answer that never arrives whole."), after_events=5))
    with pytest.raises(ModelError, match="connection") as dropped:
        await generate(client, ask())
    assert dropped.value.retryable and dropped.value.status is None
    server.enqueue(StreamError(Reply.text("Another long answer."), after_events=4))
    with pytest.raises(ModelError, match="overloaded_error") as overloaded:
        await generate(client, ask())
    assert overloaded.value.status == 529 and overloaded.value.retryable


def test_missing_key_is_reported_before_any_request(server: MessagesServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_UNSET_CLAUDE_KEY", raising=False)
    with pytest.raises(ConfigError, match="MY_UNSET_CLAUDE_KEY"):
        AnthropicClient(
            AnthropicConfig("claude-sonnet-5-5", api_key_env="MY_UNSET_CLAUDE_KEY", base_url=server.base_url)
        )
    assert server.requests == []


async def test_key_value_never_appears_in_records_or_errors(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(Fault(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(ModelError, match="401 authentication_error") as error:
        await generate(make(), ask())
    headers = server.requests[0].headers
    assert "<redacted>" in (headers.get("x-api-key"), headers.get("authorization"))
    assert KEY not in str(error.value) and KEY not in json.dumps(headers)


async def test_sampling_dropped_and_recorded_for_models_without_it(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(Reply.text("Paris."), Reply.text("Paris."))
    opus = make("claude-opus-4-7")
    request = ask(temperature=0.0, top_p=0.9)
    assert opus.plan(request).not_applied == ("temperature=0.0", "top_p=0.9")
    await generate(opus, request)
    assert opus.not_applied(request) == ("temperature=0.0", "top_p=0.9")
    sent = server.requests[0].body
    assert "temperature" not in sent and "top_p" not in sent
    # had it been sent, the server (like the API) would have refused the request
    status, error = post_raw(server, {**sent, "temperature": 0.0})
    assert status == 400 and error["error"]["message"] == "`temperature` is deprecated for this model."

    sonnet = make("claude-sonnet-4-6")  # still takes sampling parameters: through extra_body
    await generate(sonnet, request)
    assert (server.requests[-1].body["temperature"], server.requests[-1].body["top_p"]) == (0.0, 0.9)
    assert sonnet.not_applied(request) == ()


def post_raw(server: MessagesServer, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        server.base_url + "/v1/messages",
        json.dumps(body).encode(),
        {"content-type": "application/json", "x-api-key": "k"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_other_rejected_settings_are_left_out_and_named(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.responder = lambda _: Reply((ToolUseBlock("", "search", {"entity": "x"}),))
    opus47, budgeted = make("claude-opus-4-7"), ask(thinking=ThinkingConfig("enabled", budget_tokens=2048))
    await generate(opus47, budgeted)
    assert opus47.not_applied(budgeted) == ("thinking=enabled",) and "thinking" not in server.requests[-1].body
    opus55, forced = make("claude-opus-5-5"), ask(tools=(SEARCH,), tool_choice="any")
    await generate(opus55, forced)
    assert opus55.not_applied(forced) == ("tool_choice=any (this model rejects forced tool use)",)
    assert server.requests[-1].body.get("tool_choice") != {"type": "any"}
    sonnet46, hot = make("claude-sonnet-4-6"), ask(temperature=0.0, thinking=ThinkingConfig("adaptive"))
    await generate(sonnet46, hot)
    assert (
        sonnet46.not_applied(hot) == ("temperature=0.0 (thinking is on)",)
        and "temperature" not in server.requests[-1].body
    )
    server.responder = None


async def test_whitespace_stop_is_cut_client_side(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    server.enqueue(
        Reply((TextBlock(" I need to search Hamlet.\nAction 1: Search[Hamlet]"), ToolUseBlock("", "search", {})))
    )
    client, stopped = make("claude-haiku-4-5"), ask(stop=("\nObservation 1:", "\n"))
    response = await generate(client, stopped)
    assert server.requests[0].body["stop_sequences"] == ["\nObservation 1:"]  # the API rejects "\n"
    assert response.content == (TextBlock(" I need to search Hamlet."),)
    assert (response.stop_reason, response.stop_sequence) == (StopReason.STOP_SEQUENCE, "\n")
    assert response.usage.output_tokens > 0 and client.not_applied(stopped) == ()


async def test_prefill_rules(server: MessagesServer, make: Callable[..., AnthropicClient]) -> None:
    with pytest.raises(ConfigError, match="does not support assistant message prefill"):
        await generate(make("claude-sonnet-4-6"), ask(Message.user("q"), Message.assistant("Thought 1:")))
    assert server.requests == []
    server.enqueue(Reply.text("I should search."))
    haiku, prefilled = make("claude-haiku-4-5"), ask(Message.user("q"), Message.assistant("Thought 1: "))
    await generate(haiku, prefilled)
    assert server.requests[0].body["messages"][-1]["content"][0]["text"] == "Thought 1:"
    assert haiku.not_applied(prefilled) == ("prefill trailing whitespace (stripped)",)


async def test_recorded_stream_through_the_client_then_sent_back(
    server: MessagesServer, make: Callable[..., AnthropicClient]
) -> None:
    server.enqueue(RawStream(FIXTURE.read_bytes()), Reply.text("It is in Paris."))
    client = make("claude-sonnet-4-6")
    response = await generate(client, ask(tools=(SEARCH,)))
    assert response == collect(stream_events_from_payloads(parse_sse(FIXTURE.read_text(encoding="utf-8"))))
    tool = response.tool_uses[0]
    history = (
        Message.user("Who wrote Hamlet?"),
        response.as_message(),
        Message.user(ToolResultBlock(tool.id, "Paris")),
    )
    assert (await generate(client, ask(*history, tools=(SEARCH,)))).text == "It is in Paris."


async def test_base_url_from_the_environment(server: MessagesServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    client = AnthropicClient(AnthropicConfig("claude-haiku-5-5", api_key_env=KEY_ENV))
    server.enqueue(Reply.text("via env"))
    try:
        assert (await generate(client, ask())).text == "via env"
    finally:
        await client.aclose()


def test_unknown_model_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    with pytest.raises(ConfigError, match="unknown Claude model id 'claude-9'.*claude-sonnet-5-5"):
        AnthropicClient(AnthropicConfig("claude-9", api_key_env=KEY_ENV))
    caps = AnthropicClient(AnthropicConfig("claude-9", api_key_env=KEY_ENV, allow_unknown_model=True)).capabilities
    assert not caps.prefill and not caps.sampling and caps.price_input is None


def test_capability_table_covers_the_sdk_and_the_design_rules() -> None:
    assert set(sdk_model_ids()) <= set(known_models())
    no_prefill = {"claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-7", "claude-opus-5-5", "claude-haiku-5-5"}
    no_sampling = {
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-opus-5",
        "claude-opus-5-5",
        "claude-sonnet-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    }
    assert all(not capabilities_for(m).prefill for m in no_prefill)
    assert all(
        capabilities_for(m).prefill for m in ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-3-7-sonnet-20250219")
    )
    assert all(not capabilities_for(m).sampling for m in no_sampling)
    assert capabilities_for("claude-opus-4-6").sampling and capabilities_for("claude-sonnet-4-6").sampling
    assert capabilities_for("claude-sonnet-4-6").thinking_modes == {"adaptive", "enabled"}
    assert all(capabilities_for(m).thinking_modes == {"adaptive"} for m in no_sampling)
    assert capabilities_for("claude-haiku-4-5-20251001") == capabilities_for("claude-haiku-4-5")
    assert model_info("claude-sonnet-4-5").end_of_life == "2026-11-30"
    assert not capabilities_for("claude-sonnet-5-5").raw_completion


def test_cost_uses_the_table_prices_and_tiers() -> None:
    usage = Usage(
        input_tokens=2_000, output_tokens=500, cache_creation_input_tokens=10_000, cache_read_input_tokens=40_000
    )
    caps = capabilities_for("claude-sonnet-4-6")
    expected = (
        2_000 * caps.price_input
        + 500 * caps.price_output
        + 10_000 * caps.price_cache_write
        + 40_000 * caps.price_cache_read
    ) / 1e6  # type: ignore[operator]
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx(expected)
    haiku = model_info("claude-haiku-5-5")
    assert haiku.long_prompt is not None
    threshold, long_prices = haiku.long_prompt
    short = Usage(input_tokens=threshold - 10_000)
    long = Usage(input_tokens=20_000, cache_read_input_tokens=threshold - 10_000)  # the prompt counts cached tokens too
    assert cost_usd("claude-haiku-5-5", short) == pytest.approx(short.input_tokens * haiku.prices.input / 1e6)  # type: ignore[operator]
    long_cost = (20_000 * long_prices.input + long.cache_read_input_tokens * long_prices.cache_read) / 1e6  # type: ignore[operator]
    assert cost_usd("claude-haiku-5-5", long) == pytest.approx(long_cost)
    assert cost_usd("claude-mythos-5", usage) is None and cost_usd("not-a-model", usage) is None


CONFIGS = sorted((Path(__file__).parents[1] / "configs" / "model").glob("claude-*.yaml"))


def test_a_config_per_current_model() -> None:
    assert {p.stem for p in CONFIGS} >= {
        "claude-opus-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-sonnet-4-6",
    }


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
async def test_model_configs_build_clients(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert values["provider"] == "anthropic" and values["name"] == path.stem
    assert values["base_url"] is None and values["prompt_caching"] is True
    monkeypatch.setenv(values["api_key_env"], KEY)
    model = make_model(values)  # flat keys: the retry layer's and exactly the dataclass fields
    assert isinstance(model, RetryingModel) and isinstance(model.inner, AnthropicClient)
    assert (model.max_retries, model.backoff_s) == (values["max_retries"], values["retry_backoff_s"])
    try:
        assert model.capabilities == capabilities_for(path.stem)
    finally:
        await model.inner.aclose()
