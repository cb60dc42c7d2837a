"""Runs as OpenTelemetry GenAI traces (react_bench/tracing): a HotpotQA ReAct run against the Messages
stand-in, with ``trace.endpoint`` at the test's own OTLP/HTTP receiver (the real SDK's exporter,
protobuf on the wire); the same spans rebuilt afterwards from the run folder; a collector that is
down; the spans of a method's stages; the queue's bound."""

from __future__ import annotations

import io
import json
import re
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.record import ExampleRecord, RunHeader
from react_bench.results import iter_example_records
from react_bench.runconfig import RunConfig, TraceSettings
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from react_bench.testing.otlp_receiver import OtlpReceiver
from react_bench.testing.sse import Reply
from react_bench.tracing.export import SpanQueue, traces_url
from react_bench.tracing.replay import main as traces_main
from react_bench.tracing.spans import INVALID, RunInfo, Span, example_spans
from tests.support import composed

KEY_ENV = "REACT_BENCH_TEST_TRACE_KEY"
SECRET = "trace-test-credential-4417"  # the key variable's value (no real key): never in a span
MODEL = "claude-sonnet-4-6"
_ASKED = re.compile(r"Begin your reply with `(Thought|Action) (\d+):")


def respond(body: dict[str, Any]) -> Reply:
    """Step 1 searches and, on the question's first words, sometimes forgets its action (the paper's
    re-ask follows); step 2 looks up; step 3 answers: a function of the request alone, so retried
    requests get the same answer."""
    text = "".join(b.get("text", "") for m in body["messages"] for b in m["content"] if isinstance(b, dict))
    asked = _ASKED.findall(text)
    kind, step = asked[-1] if asked else ("Thought", "1")
    question = text.rsplit("Question: ", 1)[-1].split("\n", 1)[0]
    if kind == "Action":
        return Reply.text("Search[Ed Wood]")
    if step == "1":
        if len(question) % 2:  # a thought without its action: a bad call, asked again
            return Reply.text("Thought 1: I need to search Ed Wood first.")
        return Reply.text("Thought 1: I need to search Ed Wood first.\nAction 1: Search[Ed Wood]")
    if step == "2":
        return Reply.text("Thought 2: Now his birthplace.\nAction 2: Lookup[born]")
    return Reply.text(f"Thought {step}: So the answer is Poughkeepsie.\nAction {step}: Finish[Poughkeepsie]")


def run_config(server: MessagesServer, tmp_path: Path, endpoint: str | None, content: bool = False) -> RunConfig:
    base = RunConfig.from_mapping(composed("task=hotpotqa", "mode=react", "n=3", "progress=false"))
    model = claude_model_config(server.base_url, KEY_ENV, MODEL, max_retries=6, retry_backoff_s=0.001)
    return replace(
        base,
        model=model,  # type: ignore[arg-type]
        results_dir=tmp_path / "results",
        trace=TraceSettings(endpoint, content),
    )


@pytest.fixture
def receiver():
    found = OtlpReceiver()
    found.start()
    yield found
    found.stop()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)


def by_kind(spans: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["attributes"].get("gen_ai.operation.name") == kind]


def comparable(spans: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What two sendings of the same spans share: ids, names, kinds, times, attributes."""
    return sorted(
        (s["trace_id"], s["span_id"], s["parent_id"], s["name"], s["kind"], s["start_ns"], s["end_ns"],
         json.dumps(s["attributes"], sort_keys=True))
        for s in spans
    )  # fmt: skip


async def test_a_react_run_sends_each_example_as_one_trace_of_its_calls_and_actions(tmp_path, receiver, key):
    out = io.StringIO()
    # faults make the SDK retry some requests: a retried request is still one chat span, its retries said
    with MessagesServer(responder=respond, fault_rate=0.3, fault_seed=3) as server:
        result = await evaluate(run_config(server, tmp_path, receiver.url), out=out)
        requests = [r for r in server.requests if r.path.endswith("/v1/messages")]
    records = list(iter_example_records(result.run_dir))
    assert len(records) == 3 and all(r.timeline is not None for r in records)
    spans = receiver.spans
    agents = by_kind(spans, "invoke_agent")
    assert sorted(a["attributes"]["react_bench.example.id"] for a in agents) == sorted(r.id for r in records)
    assert len({a["trace_id"] for a in agents}) == 3  # one trace per example
    assert {a["name"] for a in agents} == {"invoke_agent react"}
    agent_of = {a["attributes"]["react_bench.example.id"]: a for a in agents}
    for record in records:
        agent = agent_of[record.id]["attributes"]
        assert agent["react_bench.task"] == "hotpotqa" and agent["react_bench.runner"] == "text"
        assert agent["react_bench.outcome"] == record.reason and agent["react_bench.correct"] == record.correct
        assert agent["react_bench.score.em"] == record.scores["em"]

    chats = by_kind(spans, "chat")
    calls = sum(r.calls for r in records)
    assert len(chats) == calls == len(requests) - sum(r.retries for r in records)
    assert sum(r.bad_calls for r in records) >= 1  # a step of two requests: two chat spans
    assert sum(c["attributes"]["gen_ai.usage.input_tokens"] for c in chats) == sum(
        r.usage.total_input_tokens for r in records
    )
    assert sum(c["attributes"]["gen_ai.usage.output_tokens"] for c in chats) == sum(
        r.usage.output_tokens for r in records
    )
    assert sum(c["attributes"]["react_bench.retries"] for c in chats) == sum(r.retries for r in records) > 0
    for chat in chats:
        attributes = chat["attributes"]
        assert chat["name"] == f"chat {MODEL}" and chat["kind"] == "client"
        assert attributes["gen_ai.provider.name"] == "anthropic" and attributes["gen_ai.request.model"] == MODEL
        assert attributes["gen_ai.response.model"] and attributes["gen_ai.response.finish_reasons"]
        assert attributes["react_bench.response.source"] == "live"

    tools = by_kind(spans, "execute_tool")
    executed = {r.id: r.executed() for r in records}
    assert len(tools) == sum(map(len, executed.values())) > 0
    ids = {s["span_id"]: s for s in spans}
    for tool in tools:
        agent = ids[tool["parent_id"]]  # inside its example's trace, under its agent span
        assert tool["trace_id"] == agent["trace_id"] and agent["name"] == "invoke_agent react"
        assert agent["start_ns"] <= tool["start_ns"] <= tool["end_ns"] <= agent["end_ns"]
        assert tool["name"] == f"execute_tool {tool['attributes']['gen_ai.tool.name']}"
    names = sorted(t["attributes"]["gen_ai.tool.name"] for t in tools)
    assert names == sorted(a.name or INVALID for actions in executed.values() for a in actions)

    # no text of the example leaves the machine, nor the key
    sent = json.dumps(spans)
    assert SECRET not in sent
    for record in records:
        assert record.question not in sent
        for action in record.executed():
            assert (action.observation or "")[:40] not in sent
    assert "I need to search Ed Wood" not in sent and "Poughkeepsie" not in sent
    said = out.getvalue()
    assert f"trace: {len(spans)} span(s) to {receiver.url}/v1/traces: {len(spans)} sent" in said
    assert json.loads((result.run_dir / "trace.json").read_text())["dropped"] == 0

    # afterwards, from the run folder: the same spans, timed as recorded
    assert traces_main([str(result.run_dir), "--out", str(tmp_path / "spans.jsonl")]) == 0
    rebuilt = [json.loads(line) for line in (tmp_path / "spans.jsonl").read_text().splitlines()]
    again = OtlpReceiver()
    again.start()
    try:
        assert traces_main([str(result.run_dir), "--endpoint", again.url]) == 0
    finally:
        again.stop()
    assert comparable(again.spans) == comparable(spans) == comparable(rebuilt)


async def test_with_trace_content_the_messages_are_in_the_spans(tmp_path, receiver, key):
    with MessagesServer(responder=respond) as server:
        result = await evaluate(run_config(server, tmp_path, receiver.url, content=True), out=io.StringIO())
    records = {r.id: r for r in iter_example_records(result.run_dir)}
    spans = receiver.spans
    for agent in by_kind(spans, "invoke_agent"):
        record = records[agent["attributes"]["react_bench.example.id"]]
        (asked,) = json.loads(agent["attributes"]["gen_ai.input.messages"])
        assert asked["role"] == "user" and asked["parts"][0]["content"] == record.question
        (answered,) = json.loads(agent["attributes"]["gen_ai.output.messages"])
        assert answered["parts"][0]["content"] == record.prediction == "Poughkeepsie"
    outputs = [json.loads(c["attributes"]["gen_ai.output.messages"]) for c in by_kind(spans, "chat")]
    assert any("I need to search Ed Wood" in o[0]["parts"][0]["content"] for o in outputs)
    observations = {a.observation for r in records.values() for a in r.executed()}
    results = {t["attributes"]["gen_ai.tool.call.result"] for t in by_kind(spans, "execute_tool")}
    assert results == observations
    assert SECRET not in json.dumps(spans)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_collector_that_is_down_changes_nothing_but_says_what_it_dropped(tmp_path, key):
    runs = {}
    for name, endpoint in (("untraced", None), ("down", f"http://127.0.0.1:{free_port()}")):
        out = io.StringIO()
        with MessagesServer(responder=respond) as server:
            cfg = run_config(server, tmp_path / name, endpoint)
            runs[name] = (await evaluate(cfg, out=out), out.getvalue())
    (untraced, said_untraced), (down, said) = runs["untraced"], runs["down"]
    assert untraced.metrics is not None and down.metrics is not None
    assert down.metrics["n"] == untraced.metrics["n"] == 3
    steady = lambda run: [  # noqa: E731
        {k: v for k, v in r.to_dict().items() if k not in ("wall_s", "timeline")}
        for r in iter_example_records(run.run_dir)
    ]
    assert steady(down) == steady(untraced)
    spans = sum(
        len(example_spans(RunInfo.of(RunHeader.read(down.run_dir)), r)) for r in iter_example_records(down.run_dir)
    )
    assert re.search(rf"trace: {spans} span\(s\) to .*: 0 sent, {spans} dropped \(", said), said
    kept = json.loads((down.run_dir / "trace.json").read_text())
    assert (kept["sent"], kept["dropped"]) == (0, spans)
    assert "trace:" not in said_untraced and not (untraced.run_dir / "trace.json").exists()


def test_a_full_queue_drops_and_counts_never_blocks():
    slow = OtlpReceiver(delay_s=30)  # a collector far slower than the run
    slow.start()
    try:
        queue = SpanQueue(slow.url + "/v1/traces", capacity=5)
        span = Span(1, 1, None, "invoke_agent react", "internal", 1, 2)
        queue.put([span, replace(span, span_id=2), replace(span, span_id=3)])
        queue.put([replace(span, span_id=k) for k in (4, 5, 6)])  # 6 > 5: dropped at once
        assert queue.sent.dropped == 3
        sent = queue.close(flush_s=0)
    finally:
        slow.stop()
    assert (sent.made, sent.sent, sent.dropped) == (6, 0, 6)


def test_a_refusing_collector_is_counted_as_dropped():
    refusing = OtlpReceiver(status=400)  # a non-retryable refusal
    refusing.start()
    try:
        queue = SpanQueue(refusing.url + "/v1/traces")
        queue.put([Span(1, 1, None, "invoke_agent react", "internal", 1, 2)])
        sent = queue.close()
    finally:
        refusing.stop()
    assert (sent.sent, sent.dropped) == (0, 1) and refusing.requests == 1


def test_the_endpoint_comes_from_the_setting_else_the_standard_variables(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert traces_url(None) is None
    assert traces_url("http://localhost:6006") == "http://localhost:6006/v1/traces"
    assert traces_url("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert traces_url(None) == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:9/traces")
    assert traces_url(None) == "http://other:9/traces"
    with pytest.raises(Exception, match="trace.endpoint"):
        TraceSettings.from_mapping({"endpoint": "localhost:6006"})


def record_with(timeline: dict[str, Any], **kw: Any) -> ExampleRecord:
    base = {"id": "q1", "question": "Who?", "gold": "x", "prediction": "x", "correct": True, "em": 1.0}
    return ExampleRecord.from_dict({**base, "reason": "answered", "route": "reflexion", "timeline": timeline, **kw})


INFO = RunInfo("run-1", "hotpotqa", "reflexion", "text", "anthropic", MODEL)


def test_a_methods_stages_hold_the_calls_and_actions_made_in_them():
    timeline = {
        "started": 1_700_000_000.0,
        "wall_s": 3.0,
        "calls": [
            {"t": [0.1, 0.5], "source": "live", "usage": {"input_tokens": 10, "output_tokens": 2}},
            {"t": [1.2, 1.6], "source": "cache", "usage": {"input_tokens": 7, "cache_read_input_tokens": 5}},
            {"t": [1.7, 1.8], "source": "batch", "id": "msg_1", "usage": {"input_tokens": 1}},
            {"t": [2.0, 2.1], "source": "failed", "error": "ModelError"},
        ],
        "tools": [{"id": "step-1", "name": "search", "step": 1, "t": [0.6, 0.7], "is_error": True}],
        "stages": [
            {"what": "trial", "index": 1, "total": 2, "t": 0.0},
            {"what": "trial", "index": 2, "total": 2, "t": 1.0},
        ],
    }
    spans = example_spans(INFO, record_with(timeline), batch_of={"msg_1": "msgbatch_9"})
    agent, first, second, *rest = spans
    assert (first.name, second.name) == ("trial 1", "trial 2")
    assert first.parent_id == second.parent_id == agent.span_id
    assert (first.start_ns, first.end_ns, second.end_ns) == (
        1_700_000_000_000_000_000,
        1_700_000_001_000_000_000,
        agent.end_ns,
    )
    chats = [s for s in rest if s.name.startswith("chat")]
    assert [c.parent_id for c in chats] == [first.span_id, second.span_id, second.span_id, second.span_id]
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 10
    assert chats[1].attributes["gen_ai.usage.input_tokens"] == 12  # the cache's share included, and said apart
    assert chats[1].attributes["gen_ai.usage.cache_read.input_tokens"] == 5
    assert chats[1].attributes["react_bench.request_cache.hit"] is True
    assert chats[2].attributes["react_bench.batch.id"] == "msgbatch_9"
    assert chats[3].error == "ModelError" and chats[3].attributes["error.type"] == "ModelError"
    (tool,) = [s for s in rest if s.name == "execute_tool search"]
    assert tool.parent_id == first.span_id and tool.attributes["error.type"] == "tool_error" and tool.error
    assert len({s.span_id for s in spans}) == len(spans) and {s.trace_id for s in spans} == {agent.trace_id}
    assert example_spans(INFO, record_with(timeline)) == example_spans(INFO, record_with(timeline))  # ids derive


def test_a_record_from_before_timelines_gives_its_agent_span_alone():
    old = Path(__file__).parent / "fixtures" / "runs_v2" / "synthwiki" / "scripted" / "reflexion-text" / "reflexion_v2"
    records = list(iter_example_records(old))
    spans = [s for r in records for s in example_spans(RunInfo.of(RunHeader.read(old)), r)]
    assert [s.name for s in spans] == ["invoke_agent reflexion"] * len(records)
    assert all(s.attributes["react_bench.timeline"] == "not recorded" for s in spans)


async def test_reflexions_trials_are_spans_that_hold_their_calls_and_actions(tmp_path, receiver, key):
    from react_bench.methods.core import SolveSettings
    from react_bench.methods.reflexion import ReflexionConfig
    from tests.support_oracle import gold_answers
    from tests.test_reflexion import Learner

    golds = gold_answers(1)
    with MessagesServer(responder=Learner(golds, needs=(1,))) as server:  # wrong, a reflection, then right
        base = run_config(server, tmp_path, receiver.url)
        solve = SolveSettings(mode="reflexion", options=ReflexionConfig(trials=3, evaluator="oracle"))
        cfg = replace(base, task=replace(base.task, n=1), solve=solve)
        result = await evaluate(cfg, out=io.StringIO())
    (record,) = iter_example_records(result.run_dir)
    spans = {s["span_id"]: s for s in receiver.spans}
    trials = sorted((s for s in spans.values() if s["name"].startswith("trial ")), key=lambda s: s["start_ns"])
    assert (
        [t["name"] for t in trials]
        == ["trial 1", "trial 2"]
        == [f"trial {t['trial']}" for t in record.method["trials"]]
    )
    (agent,) = by_kind(list(spans.values()), "invoke_agent")
    assert {t["parent_id"] for t in trials} == {agent["span_id"]} and agent["name"] == "invoke_agent reflexion"
    under = {t["span_id"]: [s for s in spans.values() if s["parent_id"] == t["span_id"]] for t in trials}
    first, second = (under[t["span_id"]] for t in trials)
    # trial 1: its act (a finish) and the reflection written after it; trial 2: its act
    assert [s["name"] for s in sorted(first, key=lambda s: s["start_ns"])] == [
        f"chat {MODEL}",
        "execute_tool finish",
        f"chat {MODEL}",
    ]
    assert [s["name"] for s in sorted(second, key=lambda s: s["start_ns"])] == [f"chat {MODEL}", "execute_tool finish"]
    assert trials[0]["end_ns"] == trials[1]["start_ns"] and trials[1]["end_ns"] == agent["end_ns"]


async def test_batch_rounds_show_as_the_calls_they_carried_with_the_batch_id(tmp_path, receiver, key):
    with MessagesServer(responder=respond) as server:
        server.batch_latency_s = 0.01
        cfg = replace(run_config(server, tmp_path, receiver.url), batch=True, batch_poll_s=0.01)
        result = await evaluate(cfg, out=io.StringIO())
    state = json.loads((result.run_dir / "batches.json").read_text())
    carried = {response: batch["id"] for batch in state["batches"] for response in batch["responses"]}
    chats = by_kind(receiver.spans, "chat")
    assert len(chats) == len(carried) == sum(r.calls for r in iter_example_records(result.run_dir))
    for chat in chats:
        attributes = chat["attributes"]
        assert attributes["react_bench.response.source"] == "batch"
        assert attributes["react_bench.batch.id"] == carried[attributes["gen_ai.response.id"]]
    assert len({c["attributes"]["react_bench.batch.id"] for c in chats}) > 1  # one batch a round


def test_nothing_of_opentelemetry_is_imported_by_a_run_that_traces_nothing():
    import subprocess
    import sys

    code = (
        "import sys; import react_bench.evaluate, react_bench.episode, react_bench.timeline; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert found.stdout.strip() == "[]"


def test_a_received_run_folder_with_damaged_lines_is_read_as_data(tmp_path, capsys):
    run = Path(__file__).parent / "fixtures" / "runs_v2" / "synthwiki" / "scripted" / "reflexion-text" / "reflexion_v2"
    folder = tmp_path / "received"
    folder.mkdir()
    (folder / "run.json").write_text((run / "run.json").read_text())
    good = (run / "examples.jsonl").read_text().splitlines()[0]
    bad_times = json.dumps({**json.loads(good), "timeline": {"calls": [{"t": ["soon", None]}], "started": "x"}})
    (folder / "examples.jsonl").write_text("\n".join([good, "not json", "[1, 2]", bad_times]) + "\n")
    out = tmp_path / "spans.jsonl"
    assert traces_main([str(folder), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "1 example(s), 1 span(s)" in said and "3 line(s) that are not records were skipped" in said
    assert [json.loads(line)["name"] for line in out.read_text().splitlines()] == ["invoke_agent reflexion"]
    assert traces_main([str(tmp_path / "nowhere"), "--out", str(out)]) == 2


def stage_tree(spans: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, list[str]]]:
    """The agent span, its stage spans in order, and the names of each stage's children."""
    (agent,) = by_kind(spans, "invoke_agent")
    stages = sorted(
        (s for s in spans if s["parent_id"] == agent["span_id"] and "gen_ai.operation.name" not in s["attributes"]),
        key=lambda s: s["start_ns"],
    )
    children = {
        s["span_id"]: [c["name"] for c in sorted(spans, key=lambda c: c["start_ns"]) if c["parent_id"] == s["span_id"]]
        for s in stages
    }
    return agent, stages, children


async def test_lats_iterations_and_best_of_ks_candidates_are_spans_of_their_own(tmp_path, receiver, key):
    from react_bench.methods.best_of_k import BestOfKConfig
    from react_bench.methods.core import SolveSettings
    from react_bench.methods.lats import LatsConfig
    from tests.support_oracle import gold_answers
    from tests.test_best_of_k import Sampler
    from tests.test_lats import Brancher

    golds = gold_answers(1)
    runs = {
        "lats": (Brancher(golds), SolveSettings(mode="lats", options=LatsConfig(n=2, iterations=3))),
        "best_of_k": (Sampler(golds), SolveSettings(mode="best_of_k", options=BestOfKConfig(k=3))),
    }
    for name, (responder, solve) in runs.items():
        receiver.spans.clear()
        with MessagesServer(responder=responder) as server:
            base = run_config(server, tmp_path / name, receiver.url)
            result = await evaluate(replace(base, task=replace(base.task, n=1), solve=solve), out=io.StringIO())
        (record,) = iter_example_records(result.run_dir)
        agent, stages, children = stage_tree(receiver.spans)
        assert agent["name"] == f"invoke_agent {name}"
        assert sum(len(c) for c in children.values()) == len(receiver.spans) - 1 - len(stages)  # all inside stages
        assert len(by_kind(receiver.spans, "chat")) == record.calls
        if name == "lats":
            iterations = record.method["tree"]["iterations"]
            assert [s["name"] for s in stages] == [f"search iteration {i}" for i in range(1, iterations + 1)]
            assert all(any(n.startswith("execute_tool ") for n in c) for c in children.values())
        else:
            assert [s["name"] for s in stages] == ["candidate 1", "candidate 2", "candidate 3", "selection 1"]
            *candidates, selection = stages
            for candidate in candidates:  # each a ReAct episode: its call, its finish
                assert children[candidate["span_id"]] == [f"chat {MODEL}", "execute_tool finish"]
            assert children[selection["span_id"]] == [f"chat {MODEL}"] * 3  # the value calls


def test_a_record_whose_spans_cannot_be_made_costs_its_trace_never_the_run(tmp_path, receiver):
    from react_bench.tracing.live import LiveTrace

    run = Path(__file__).parent / "fixtures" / "runs_v2" / "synthwiki" / "scripted" / "reflexion-text" / "reflexion_v2"
    (tmp_path / "run.json").write_text((run / "run.json").read_text())
    good = next(iter_example_records(run))
    tracer = LiveTrace(receiver.url + "/v1/traces", tmp_path, content=False)
    tracer.example(replace(good, timeline={"started": 0.0, "calls": [{"t": ["soon", None]}]}), {})
    tracer.example(good, {})
    sent = tracer.close()
    assert (sent.made, sent.sent, sent.untraced) == (1, 1, 1), sent
    assert "1 sent, 1 example(s) not traced (spans not made: ValueError)" in sent.line()
    assert json.loads((tmp_path / "trace.json").read_text())["untraced_examples"] == 1
