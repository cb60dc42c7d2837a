"""An example's record as OpenTelemetry GenAI spans: the one place spans are made, live or afterwards.

Pure Python (no OpenTelemetry import): ``example_spans`` reads what a run folder holds of one
example (its ``examples.jsonl`` line with the ``timeline``, its ``calls.jsonl`` line for content,
``run.json``'s header, ``batches.json``'s batch ids) and gives its spans. ``evaluate`` calls it as
each example is written (``trace.endpoint``), ``react-bench traces`` on a finished or received run
folder: the same code, so the same spans (their ids derive from the run, the example and the
span's place, their times from the record).

One trace per example (an attempt, with ``epochs``), after the GenAI semantic conventions (still
marked in development; ``docs/traces.md`` names the version followed):

- ``invoke_agent {mode}``: the episode (or the method's several), with the task, mode, runner,
  example id, outcome and score;
- ``{what} {index}`` (``trial 2``, ``search iteration 3``, ``candidate 1``): a method's stage, from
  its start to the next stage's or the example's end;
- ``chat {model}``: each model request, with provider, requested and reported model, usage
  (``gen_ai.usage.input_tokens`` counts all input, the prompt cache's reads and writes included;
  ``gen_ai.usage.cache_read.input_tokens`` / ``cache_creation.input_tokens`` its shares), stop
  reason, retries, where the response came from (``react_bench.response.source``: live, batch,
  the request cache) and a batch's id;
- ``execute_tool {tool}``: each action, with its arguments' and observation's size, and
  ``error.type`` where the tool failed.

A call or an action goes under the stage that had begun when it started. No question, thought,
observation or answer text is in a span unless ``content`` (``trace.content=true``): then the
conventions' opt-in attributes carry them (``gen_ai.input.messages`` and
``gen_ai.output.messages`` on the agent span, each response as ``gen_ai.output.messages`` on its
chat span, ``gen_ai.tool.call.arguments`` / ``.result`` on a tool's), URL credentials removed
(``redact.without_userinfo``). A span never holds a key: none is ever read here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from react_bench.record import ExampleRecord, RunHeader
from react_bench.redact import without_userinfo
from react_bench.types import Usage

Attribute = str | int | float | bool | list[str]
SpanKind = Literal["internal", "client"]

# the conventions' well-known provider names; the others are named as react-bench names them
PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "local": "llama_cpp"}
SCOPE = "react_bench"  # the instrumentation scope's name
INVALID = "invalid_action"  # the tool name of an action no tool took
_ERROR_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,80}")


@dataclass(frozen=True)
class Span:
    """One finished span. Ids as integers (a trace's 128 bits, a span's 64), times in Unix nanoseconds."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Attribute] = field(default_factory=dict)
    error: str | None = None  # the status's description where the span failed (its ``error.type``)

    def to_dict(self) -> dict[str, Any]:
        """A JSON line of ``react-bench traces --out``: ids in OTLP/JSON's hex."""
        return {
            "trace_id": f"{self.trace_id:032x}",
            "span_id": f"{self.span_id:016x}",
            "parent_id": None if self.parent_id is None else f"{self.parent_id:016x}",
            "name": self.name,
            "kind": self.kind,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "attributes": dict(self.attributes),
            "error": self.error,
        }


@dataclass(frozen=True)
class RunInfo:
    """What every span of a run says of it: from ``run.json`` (``RunHeader``)."""

    run_id: str
    task: str
    mode: str
    runner: str
    provider: str
    model: str

    @staticmethod
    def of(header: RunHeader) -> RunInfo:
        model = header.config.get("model") or {}
        provider = str(model.get("provider") or "")
        return RunInfo(
            header.run_id,
            header.task,
            header.mode,
            header.runner,
            PROVIDERS.get(provider, f"react_bench.{provider}" if provider else "react_bench"),
            str(model.get("name") or header.model_name or provider),
        )


def _id(bits: int, *parts: object) -> int:
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1  # 0 is OTLP's "no id"


def _ns(started: float, offset: float) -> int:
    return int(round((started + offset) * 1e9))


def _error_type(message: str) -> str:
    """A failure's type, low in cardinality as the conventions ask: the exception's name before its
    message ("ModelError: 529 overloaded" -> ModelError), else ``_OTHER``."""
    head = message.split(":", 1)[0].strip()
    return head if _ERROR_TYPE.fullmatch(head) else "_OTHER"


def _messages(role: str, text: str, finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": without_userinfo(text)}]}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message], ensure_ascii=False)


def _output_parts(entry: Any) -> list[dict[str, Any]]:
    """A cassette entry (a completion's text, or a response's blocks) as the conventions' parts."""
    if isinstance(entry, str):
        return [{"type": "text", "content": without_userinfo(entry)}]
    parts: list[dict[str, Any]] = []
    for block in entry if isinstance(entry, list) else []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append({"type": "text", "content": without_userinfo(str(block.get("text") or ""))})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": without_userinfo(str(block.get("thinking") or ""))})
        elif kind == "tool_use":
            parts.append(
                {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
            )
    return parts


def _tool_texts(record: ExampleRecord) -> dict[tuple[str, int], tuple[str, str]]:
    """(call id, its occurrence) -> (arguments as JSON, observation), over the record's episodes in
    order: what a tool span carries with ``content``."""
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], tuple[str, str]] = {}
    for episode in record.trajectory:
        asked: dict[str, str] = {}
        for event in episode.events:
            call_id = str(event.get("call_id") or "")
            if event.get("type") == "tool_called":
                asked[call_id] = json.dumps(event.get("arguments") or {}, ensure_ascii=False, default=str)
            elif event.get("type") == "tool_execution_finished":
                k = seen.get(call_id, 0)
                seen[call_id] = k + 1
                out[(call_id, k)] = (asked.pop(call_id, "{}"), str(event.get("observation") or ""))
    return out


def example_spans(
    info: RunInfo,
    record: ExampleRecord,
    cassette: Mapping[str, Any] | None = None,
    batch_of: Mapping[str, str] | None = None,
    *,
    content: bool = False,
) -> list[Span]:
    """The example's trace (see the module docstring): the agent span first, then its stages,
    calls and tools in the order the record holds them."""
    timeline = record.timeline or {}
    key = (info.run_id, record.id, record.epoch)
    trace_id = _id(128, "trace", *key)
    started = float(timeline.get("started") or 0.0)
    wall = float(timeline.get("wall_s") or record.wall_s or 0.0)
    agent_id = _id(64, "agent", *key)
    end = _ns(started, wall)
    common: dict[str, Attribute] = {"gen_ai.provider.name": info.provider, "gen_ai.request.model": info.model}
    agent: dict[str, Attribute] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": info.mode,
        **common,
        "openinference.span.kind": "AGENT",
        "react_bench.run.id": info.run_id,
        "react_bench.task": info.task,
        "react_bench.mode": info.mode,
        "react_bench.runner": info.runner,
        "react_bench.example.id": record.id,
        "react_bench.example.epoch": record.epoch,
        "react_bench.outcome": record.reason,
        "react_bench.correct": record.correct,
        "react_bench.steps": record.steps,
        "gen_ai.usage.input_tokens": record.usage.total_input_tokens,
        "gen_ai.usage.output_tokens": record.usage.output_tokens,
        **{f"react_bench.score.{k}": float(v) for k, v in record.scores.items() if _number(v)},
    }
    if record.reward is not None:
        agent["react_bench.reward"] = float(record.reward)
    if not timeline:
        agent["react_bench.timeline"] = "not recorded"  # a record from before timelines: the agent span alone
    if record.reason == "error":
        agent["error.type"] = _error_type(record.error or "")
    if content:
        agent["gen_ai.input.messages"] = _messages("user", record.first_observation or record.question)
        agent["gen_ai.output.messages"] = _messages("assistant", record.prediction, record.reason)
    spans = [
        Span(
            trace_id,
            agent_id,
            None,
            f"invoke_agent {info.mode}",
            "internal",
            _ns(started, 0.0),
            end,
            agent,
            _error_type(record.error or "") if record.reason == "error" else None,
        )
    ]

    stages = list(timeline.get("stages") or ())
    stage_ids: list[tuple[float, int]] = []
    for i, stage in enumerate(stages):
        start = float(stage.get("t") or 0.0)
        stop = float(stages[i + 1].get("t") or wall) if i + 1 < len(stages) else wall
        span_id = _id(64, "stage", i, *key)
        stage_ids.append((start, span_id))
        what = str(stage.get("what") or "stage")
        spans.append(
            Span(
                trace_id,
                span_id,
                agent_id,
                f"{what} {stage.get('index')}",
                "internal",
                _ns(started, start),
                _ns(started, stop),
                {
                    "react_bench.method.stage": what,
                    "react_bench.method.index": int(stage.get("index") or 0),
                    "react_bench.method.total": int(stage.get("total") or 0),
                    "openinference.span.kind": "CHAIN",
                },
            )
        )

    def parent(start: float) -> int:
        """The stage that had begun when a part started (the agent where none had)."""
        chosen = agent_id
        for begun, span_id in stage_ids:
            if begun <= start:
                chosen = span_id
        return chosen

    entries = _cassette_entries(cassette)
    stops = list((cassette or {}).get("stop_reasons") or ())
    for k, call in enumerate(timeline.get("calls") or ()):
        if not isinstance(call, Mapping) or not call.get("t"):
            continue  # a call made before this example's timeline (a trial taken from the log)
        t0, t1 = (float(x) for x in call["t"])
        usage = Usage.from_dict(call.get("usage"))
        attributes: dict[str, Attribute] = {
            "gen_ai.operation.name": "chat",
            **common,
            "openinference.span.kind": "LLM",
            "gen_ai.usage.input_tokens": usage.total_input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
            "react_bench.retries": int(call.get("retries") or 0),
            "react_bench.response.source": str(call.get("source") or "live"),
            "react_bench.request_cache.hit": call.get("source") == "cache",
        }
        if call.get("model"):
            attributes["gen_ai.response.model"] = str(call["model"])
        if call.get("id"):
            attributes["gen_ai.response.id"] = str(call["id"])
            batch = (batch_of or {}).get(str(call["id"])) if call.get("source") == "batch" else None
            if batch:
                attributes["react_bench.batch.id"] = batch
        finish = call.get("stop") or (stops[k] if k < len(stops) else None)
        if finish:
            attributes["gen_ai.response.finish_reasons"] = [str(finish)]
        failure = call.get("error")
        if failure:
            attributes["error.type"] = _error_type(str(failure))
        if content and k < len(entries) and not failure:
            attributes["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": _output_parts(entries[k]), "finish_reason": str(finish or "")}],
                ensure_ascii=False,
                default=str,
            )
        spans.append(
            Span(
                trace_id,
                _id(64, "call", k, *key),
                parent(t0),
                f"chat {info.model}",
                "client",
                _ns(started, t0),
                _ns(started, t1),
                attributes,
                _error_type(str(failure)) if failure else None,
            )
        )

    texts = _tool_texts(record) if content else {}
    occurrences: dict[str, int] = {}
    for k, tool in enumerate(timeline.get("tools") or ()):
        t0, t1 = (float(x) for x in tool.get("t") or (0.0, 0.0))
        # an action the environment could not read (the text runner's "Invalid action") has no tool name
        name, call_id = str(tool.get("name") or INVALID), str(tool.get("id") or "")
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": call_id,
            "openinference.span.kind": "TOOL",
            "react_bench.step": int(tool.get("step") or 0),
            "react_bench.tool.arguments_chars": int(tool.get("arguments_chars") or 0),
            "react_bench.tool.observation_chars": int(tool.get("observation_chars") or 0),
        }
        failed = bool(tool.get("is_error"))
        if failed:
            attributes["error.type"] = "tool_error"
        n = occurrences.get(call_id, 0)
        occurrences[call_id] = n + 1
        if content and (call_id, n) in texts:
            arguments, observation = texts[(call_id, n)]
            attributes["gen_ai.tool.call.arguments"] = without_userinfo(arguments)
            attributes["gen_ai.tool.call.result"] = without_userinfo(observation)
        spans.append(
            Span(
                trace_id,
                _id(64, "tool", k, *key),
                parent(t0),
                f"execute_tool {name}",
                "internal",
                _ns(started, t0),
                _ns(started, t1),
                attributes,
                "tool_error" if failed else None,
            )
        )
    return spans


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _cassette_entries(line: Mapping[str, Any] | None) -> list[Any]:
    if not line:
        return []
    entries = line.get("completions", line.get("responses"))
    return list(entries) if isinstance(entries, list) else []


def batch_ids(state: Mapping[str, Any]) -> dict[str, str]:
    """Response id -> the id of the batch that carried it, from a run's ``batches.json``."""
    out: dict[str, str] = {}
    for batch in state.get("batches") or ():
        if isinstance(batch, Mapping):
            for response in batch.get("responses") or ():
                out[str(response)] = str(batch.get("id") or "")
    return out


def count_spans(spans: Iterable[Span]) -> dict[str, int]:
    """How many spans of each operation (``invoke_agent``, ``chat``, ``execute_tool``, stages)."""
    out: dict[str, int] = {}
    for span in spans:
        kind = str(span.attributes.get("gen_ai.operation.name") or "stage")
        out[kind] = out.get(kind, 0) + 1
    return out
