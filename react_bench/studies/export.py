"""Exports of a run folder: inspect_ai's log format (for ``inspect view``), CSV and Parquet.

Reads the run only through ``results`` (run.json, examples.jsonl); nothing in the run path
imports this module. ``inspect-ai`` and ``pyarrow`` are the optional extra ``viewer``.

How a trajectory becomes inspect_ai messages (one ``EvalSample`` per example):
- the question is the first user message; each episode of the example (CoT-SC samples, the
  two parts of a backoff) starts with a user message naming its route, so nothing is merged;
- an assistant turn keeps its thinking (``ContentReasoning`` with the signature), its text,
  and its tool calls. The text runner's action becomes a call of the action its grammar read
  (``search``, ``click``, ``go_to``, ... or ``invalid``) with the action as executed as ``action``;
- each tool result is a ``ChatMessageTool`` paired by id, ``is_error`` as a ``ToolCallError``;
- scores: the task's metrics (``TaskInfo.metrics``) with the prediction and gold; usage per
  model with cache reads and writes; an example that ended in an error carries it as the
  sample's error. Reason, route, steps, retries, cost and the dataset's metadata are kept
  in the sample's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from react_bench.record import ExampleRecord, RunHeader, RunMetrics
from react_bench.record import Score as RunScore
from react_bench.results import failure_label, iter_example_records
from react_bench.rundir import refuse_links, safe_name
from react_bench.tasks import TaskInfo, task_info
from react_bench.types import Usage

FORMATS = ("inspect", "csv", "parquet")


def _info(run_dir: Path) -> TaskInfo:
    return task_info(RunHeader.read(run_dir).task)


def examples_table(run_dir: Path) -> Any:
    """The examples as a flat pandas DataFrame, read line by line, without their trajectories:
    scalar columns (the task's scores after ``correct``), the failure label, usage and metadata
    spread out. The list a notebook filters (``results.read_example`` reads one trajectory)."""
    import pandas as pd

    metrics = _info(run_dir).metrics
    rows = []
    for r in iter_example_records(run_dir):
        row: dict[str, Any] = {
            "id": r.id,
            "epoch": r.epoch,
            "question": r.question,
            "gold": r.gold,
            "prediction": r.prediction,
            "correct": r.correct,
            **{m: r.scores[m] for m in metrics if m in r.scores},
            "reward": r.reward,
            "steps": r.steps,
            "reason": r.reason,
            "label": failure_label(r),
            "route": r.route,
            "backoff": r.backoff,
            "error": r.error,
            "calls": r.calls,
            "bad_calls": r.bad_calls,
            "retries": r.retries,
            "cost_usd": r.cost_usd,
        }
        row.update({f"usage_{k}": v for k, v in r.usage.to_dict().items()})
        row.update({f"meta_{k}": v for k, v in r.metadata.items() if not isinstance(v, list | dict)})
        rows.append(row)
    return pd.DataFrame(rows)


def export_run(run_dir: Path, to: str, out: Path | None = None) -> Path:
    """Write the run as ``to`` at ``out`` (default: a file in the run folder, which may be one
    someone sent: a link in it is refused, and the file is named by the folder, never by the
    ``run_id`` its run.json says)."""
    run_dir = Path(run_dir)
    if out is None:
        refuse_links(run_dir)
    if to == "csv":
        path = out or run_dir / "examples.csv"
        examples_table(run_dir).to_csv(path, index=False)
        return path
    if to == "parquet":
        path = out or run_dir / "examples.parquet"
        examples_table(run_dir).to_parquet(path, index=False)
        return path
    if to == "inspect":
        from inspect_ai.log import write_eval_log

        log = to_inspect_log(run_dir)
        path = out or run_dir / "inspect" / f"{safe_name(run_dir.resolve().name)}.eval"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_eval_log(log, location=str(path), format="eval")
        return path
    raise ValueError(f"unknown export format {to!r}; one of {FORMATS}")


def to_inspect_log(run_dir: Path) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats

    run = RunHeader.read(run_dir)
    metrics = RunMetrics.read(run_dir)
    if metrics is None:
        raise FileNotFoundError(f"{run_dir / 'metrics.json'}: the run has not finished once; resume it first")
    config = run.config
    task, model = run.task, run.model_name
    info = task_info(task)
    samples = [_sample(record, model, info) for record in iter_example_records(run_dir)]  # one record at a time
    spec = EvalSpec(
        run_id=run.run_id,
        created=run.started,
        task=f"react_bench/{task}",
        task_args={
            "mode": run.mode,
            "runner": run.runner,
            "split": config["task"]["split"],
        },
        dataset=EvalDataset(name=task, samples=len(samples), sample_ids=[s.id for s in samples]),
        model=model,
        config=EvalConfig(),
        metadata={
            "fingerprint": run.fingerprint,
            "not_applied": list(run.not_applied),
            "protocol": run.protocol,
            "run_dir": str(run_dir),
        },
    )
    scores = [_score(name, metrics.scores[name]) for name in info.metrics if name in metrics.scores]
    return EvalLog(
        eval=spec,
        status="success" if len(samples) == run.n_examples else "started",
        results=EvalResults(total_samples=run.n_examples, completed_samples=len(samples), scores=scores),
        stats=EvalStats(started_at=run.started, completed_at=run.started, model_usage={model: _usage(metrics.usage)}),
        samples=samples,
    )


def _score(name: str, score: RunScore) -> Any:
    from inspect_ai.log import EvalMetric, EvalScore

    values = {"mean": score.mean, "ci95_low": score.ci95[0], "ci95_high": score.ci95[1]}
    return EvalScore(name=name, scorer=name, metrics={k: EvalMetric(name=k, value=v) for k, v in values.items()})


def _usage(usage: Usage) -> Any:
    from inspect_ai.model import ModelUsage

    return ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_input_tokens + usage.output_tokens,
        input_tokens_cache_write=usage.cache_creation_input_tokens,
        input_tokens_cache_read=usage.cache_read_input_tokens,
    )


def _sample(record: ExampleRecord, model: str, info: TaskInfo) -> Any:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    messages: list[Any] = []
    for k, episode in enumerate(record.trajectory, start=1):
        if len(record.trajectory) > 1:
            messages.append(ChatMessageUser(content=f"[episode {k}: {episode.route}]"))
        # what the model saw first (ALFWorld's room, WebShop's page); a run before it was kept: the question
        messages.append(ChatMessageUser(content=episode.first_observation or record.question))
        messages += _messages([dict(m) for m in episode.history], [dict(e) for e in episode.events])
    if not record.trajectory:
        messages.append(ChatMessageUser(content=record.question))
    scores = {
        m: Score(value=float(record.scores[m]), answer=record.prediction, explanation=f"gold: {record.gold}")
        for m in info.metrics
        if m in record.scores
    }
    error = None
    if record.reason == "error":
        error = EvalError(message=str(record.error), traceback="", traceback_ansi="")
    kept = {
        "reason": record.reason,
        "route": record.route,
        "steps": record.steps,
        "calls": record.calls,
        "bad_calls": record.bad_calls,
        "retries": record.retries,
        "cost_usd": record.cost_usd,
        "backoff": record.backoff,
        "samples": list(record.samples),
    }
    return EvalSample(
        id=record.id,
        epoch=1,
        input=record.question,
        target=record.gold,
        messages=messages,
        output=ModelOutput.from_content(model, record.prediction),
        scores=scores,
        metadata={**kept, **record.metadata},
        model_usage={model: _usage(record.usage)},
        error=error,
    )


def _messages(history: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ContentReasoning, ContentText
    from inspect_ai.tool import ToolCall, ToolCallError

    out: list[Any] = []
    names: dict[str, str] = {}
    text_calls = {e["call_id"]: e for e in events if e.get("type") == "tool_called" and e.get("text") is not None}
    for index, message in enumerate(history):
        blocks = message["content"]
        if message["role"] == "assistant":
            content: list[Any] = []
            calls = []
            for block in blocks:
                if block["type"] == "thinking":
                    content.append(ContentReasoning(reasoning=block["thinking"], signature=block["signature"] or None))
                elif block["type"] == "redacted_thinking":
                    content.append(ContentReasoning(reasoning=block["data"], redacted=True))
                elif block["type"] == "text" and block["text"]:
                    content.append(ContentText(text=block["text"]))
                elif block["type"] == "tool_use":
                    names[block["id"]] = block["name"]
                    calls.append(ToolCall(id=block["id"], function=block["name"], arguments=dict(block["input"])))
            if not calls and content and isinstance(content[-1], ContentText):
                following = history[index + 1]["content"] if index + 1 < len(history) else []
                calls = _text_action_calls(content[-1].text, following, text_calls, names)
            out.append(ChatMessageAssistant(content=content or "", tool_calls=calls or None))
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                function = names.get(block["tool_use_id"], "text_action")
                error = ToolCallError("unknown", block["content"]) if block.get("is_error") else None
                out.append(
                    ChatMessageTool(
                        content=block["content"], tool_call_id=block["tool_use_id"], function=function, error=error
                    )
                )
            elif block["type"] == "text":
                out.append(_user(block["text"]))
    return out


def _user(text: str) -> Any:
    from inspect_ai.model import ChatMessageUser

    return ChatMessageUser(content=text)


def _text_action_calls(
    text: str, following: list[dict[str, Any]], text_calls: dict[str, dict[str, Any]], names: dict[str, str]
) -> list[Any]:
    """The text runner's action as a tool call: the action its grammar read (the ``tool_called``
    event), paired with the result that follows by id. Runs recorded before the environment seam
    named no action in their events: the ``Action i: Name[arg]`` line is read instead."""
    from inspect_ai.tool import ToolCall

    out = []
    for block in following:
        if block.get("type") != "tool_result":
            continue
        call_id = block["tool_use_id"]
        event = text_calls.get(call_id)
        if event is not None:
            function, action = event["name"] or "invalid", str(event["text"]).strip()
        else:
            line = next((ln for ln in reversed(text.splitlines()) if ln.startswith("Action ")), "")
            action = line.partition(": ")[2]
            function = action.split("[", 1)[0].strip().lower() if "[" in action else "invalid"
        names[call_id] = function
        out.append(ToolCall(id=call_id, function=function, arguments={"action": action}))
    return out
