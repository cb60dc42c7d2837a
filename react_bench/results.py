"""Reading runs back: per-example records, metrics with confidence intervals, tables.

Intervals: a 0/1 score's mean (EM, label accuracy, success) gets Wilson's score interval,
which stays honest at small n (3 of 3 right: [43.9, 100]); a graded score (F1, WebShop's
reward) the percentile bootstrap (``metrics.score_ci``).

``load_examples(run_dir)`` gives the examples as a pandas DataFrame (one row per example,
the trajectory kept as a column of dicts) for notebooks; ``summarize`` computes the run's
metrics from ``examples.jsonl`` alone, so a resumed or crashed run is scored the same way
as one that ran in one go.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from react_bench.metrics import groundable, grounded, score_ci
from react_bench.record import ExampleRecord, RunHeader
from react_bench.tasks.base import TaskInfo
from react_bench.types import Usage


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    return list(iter_records(run_dir))


def iter_example_records(run_dir: Path) -> Iterator[ExampleRecord]:
    """The records of ``examples.jsonl`` one at a time (a run's file can be large), typed and
    upgraded from whatever version wrote them (``record.ExampleRecord.from_dict``): the one
    place a run's lines are read."""
    path = Path(run_dir) / "examples.jsonl"
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield ExampleRecord.from_dict(json.loads(line))


def iter_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The same records as dicts in the current layout (pandas, and readers by key)."""
    for record in iter_example_records(run_dir):
        yield record.to_dict()


_SUMMARY_FIELDS = ("id", "correct", "in_label_set", "usage", "reason", "route", "retries", "request_cache",
                   "replaced_chars", "bad_calls", "repairs", "cost_usd", "saved_usd", "steps", "reward", "wall_s",
                   "calls", "stop_reasons", "cache_write_failures")  # fmt: skip


def _scalars(record: ExampleRecord, info: TaskInfo) -> dict[str, Any]:
    """What ``summarize`` needs of a record: its scalar fields, scores and the groups of its
    metadata, plus the figures read from the trajectory (failure label, grounded, actions), so
    a run of any size is summarised holding one trajectory at a time."""
    line = record.to_dict()
    out = {k: line[k] for k in (*_SUMMARY_FIELDS, *info.metrics) if k in line}
    out["metadata"] = {k: record.metadata[k] for k in info.groups if k in record.metadata}
    out["_failure_label"] = failure_label(record)
    out["_groundable"] = info.grounded_answers and groundable(record.gold)
    out["_grounded"] = out["_groundable"] and grounded(record.prediction, observations(record))
    out["_actions"] = action_counts(record)
    return out


def load_examples(run_dir: str | Path):
    import pandas as pd

    return pd.DataFrame(read_records(Path(run_dir)))


def summarize(run_dir: Path, info: TaskInfo) -> dict[str, Any]:
    records = [_scalars(r, info) for r in iter_example_records(run_dir)]
    run = RunHeader.read(run_dir)
    metric_names = [m for m in info.metrics if records and m in records[0]]
    metrics: dict[str, Any] = {
        "run_id": run.run_id,
        "fingerprint": run.fingerprint,
        "model": run.model_name,
        "mode": run.mode,
        "runner": run.runner,
        "n": len(records),
        "n_planned": run.n_examples,
        "task": info.name,
        "primary_metric": info.primary_metric,
        "metrics": list(info.metrics),
        "not_applied": list(run.not_applied),
        "protocol": run.protocol,
        "endpoint": run.endpoint,
        "sdk": run.sdk,
    }
    for name in metric_names:
        values = [float(r[name]) for r in records]
        ci = score_ci(values, seed=0)  # Wilson's for 0/1 scores, the bootstrap for graded ones
        metrics[name] = {"mean": ci.mean, "ci95": [ci.low, ci.high], "ci_method": ci.method}
    usage = sum((Usage.from_dict(r["usage"]) for r in records), Usage())
    metrics["usage"] = usage.to_dict()
    metrics["calls"] = sum(int(r.get("calls") or 0) for r in records)
    metrics["left_out"] = list(run.left_out)  # unreadable data skipped on request
    metrics["reasons"] = dict(Counter(r["reason"] for r in records))
    metrics["routes"] = dict(Counter(r["route"] for r in records))
    # An error is an example a fault kept from answering (after the retries): scored as wrong in
    # every mean above, and counted here apart from wrong answers, so it can be rerun.
    metrics["errors"] = sum(1 for r in records if r["reason"] == "error")
    metrics["errored_ids"] = [r["id"] for r in records if r["reason"] == "error"]
    metrics["retries"] = sum(int(r.get("retries") or 0) for r in records)
    metrics["request_cache"] = {
        k: sum(int((r.get("request_cache") or {}).get(k) or 0) for r in records) for k in ("hits", "misses")
    }
    metrics["replaced_chars"] = sum(int(r.get("replaced_chars") or 0) for r in records)
    metrics["stop_reasons"] = dict(sum((Counter(r.get("stop_reasons") or {}) for r in records), Counter()))
    metrics["refused"] = sum(1 for r in records if r["reason"] == "refused")
    metrics["cache_write_failures"] = sum(int(r.get("cache_write_failures") or 0) for r in records)
    metrics["bad_calls"] = sum(int(r.get("bad_calls", 0)) for r in records)
    metrics["repairs"] = dict(sum((Counter(r.get("repairs") or {}) for r in records), Counter()))
    if records and "in_label_set" in records[0]:
        # FEVER answers outside SUPPORTS / REFUTES / NOT ENOUGH INFO (scored wrong, counted here)
        metrics["out_of_label_set"] = sum(1 for r in records if not r["in_label_set"])
    metrics["cost_usd"] = _cost(records, _superseded_spent(Path(run_dir)))
    labels = [r["_failure_label"] for r in records]
    metrics["failure_labels"] = {label: labels.count(label) for label in FAILURE_LABELS if label in labels}
    # Grounded: over the examples whose answer a page could say (not yes / no; None for tasks
    # whose answers are labels or rewards), the same denominator for every runner and mode.
    groundable_records = [r for r in records if r["_groundable"]]
    metrics["grounded_n"] = len(groundable_records)
    metrics["grounded"] = (
        sum(1 for r in groundable_records if r["_grounded"]) / len(groundable_records) if groundable_records else None
    )
    metrics["grounded_accuracy"] = (
        sum(1 for r in groundable_records if r["_grounded"] and r.get("correct")) / len(groundable_records)
        if groundable_records
        else None
    )
    # steps: model turns; actions: environment actions executed (the answer action included). The
    # text runner executes one action a turn; the tool-use runner may execute several at once.
    metrics["mean_steps"] = sum(r["steps"] for r in records) / len(records) if records else 0.0
    metrics["wall"] = _wall(records)
    counts: Counter[str] = Counter()
    for r in records:
        counts.update(r["_actions"])
    actions = counts["actions"]
    # of every action executed: the share the environment refused (WebShop's "Invalid action!",
    # ALFWorld's "Nothing happens.", Wikipedia's "Invalid action: ..."), and the thoughts written as actions
    metrics["mean_actions"] = actions / len(records) if records else 0.0
    metrics["actions"] = {"n": actions, "invalid_rate": counts["invalid"] / actions if actions else 0.0,
                          "think_share": counts["think"] / actions if actions else 0.0}  # fmt: skip
    metrics["by_group"] = _breakdown(records, info)
    return metrics


# One label per example, the first that applies, in this order (the paper's Table 2, automatically).
FAILURE_LABELS = (
    "error",  # a fault kept it from answering
    "correct",
    "repeated_action",  # the same action three times: a loop
    "search_failures_only",  # every search found nothing ("Could not find ...")
    "parse_failures",  # the model's format failed (re-asks) and the answer is wrong
    "step_limit",  # no answer within the step cap
    "wrong_answer",
)


def action_counts(record: ExampleRecord | Mapping[str, Any]) -> dict[str, int]:
    """Actions executed in a record's episodes, those that ended in an error, and thoughts."""
    executed = ExampleRecord.of(record).executed()
    return {"actions": len(executed), "invalid": sum(a.is_error for a in executed),
            "think": sum(a.name == "think" for a in executed)}  # fmt: skip


def observations(record: ExampleRecord | Mapping[str, Any]) -> list[str]:
    return [observation for _, _, observation in _executed(ExampleRecord.of(record))]


def _executed(record: ExampleRecord) -> list[tuple[str, str, str]]:
    """(action name, the action as called, observation) of every executed call, in order."""
    out = []
    for action in record.executed():
        if action.text is not None:  # the text runner: the action as executed, "search[Ed Wood]"
            name, called = action.name, action.text.strip()
        elif action.name == "text_action":  # runs recorded before the environment seam
            called = str(action.arguments.get("action", ""))
            name = called.split("[", 1)[0].strip().lower()
        else:
            name, called = action.name, json.dumps([action.name, dict(action.arguments)], sort_keys=True)
        out.append((name, called, action.observation or ""))
    return out


def failure_label(record: ExampleRecord | Mapping[str, Any]) -> str:
    """The example's label of ``FAILURE_LABELS`` (a record, or a line's dict as a notebook has it)."""
    r = ExampleRecord.of(record)
    if r.reason == "error":
        return "error"
    if r.correct:
        return "correct"
    executed = _executed(r)
    actions = [action for _, action, _ in executed]
    if any(actions.count(a) >= 3 for a in set(actions)):
        return "repeated_action"
    searches = [observation for name, _, observation in executed if name == "search"]
    if searches and all(o.startswith("Could not find") for o in searches):
        return "search_failures_only"
    if r.bad_calls > 0:
        return "parse_failures"
    if r.reason == "step_limit":
        return "step_limit"
    return "wrong_answer"


def _cost(records: list[dict[str, Any]], superseded: float | None = 0.0) -> dict[str, float | None]:
    """What the run cost, in USD; None (unknown) where any example's price is unknown, never a silent 0.

    - ``spent``: the calls that reached the API (this run's, the errored attempts that
      ``retry_errors`` replaced included): the money, equal to pricing the API's own log;
    - ``saved``: the calls served from the request cache, priced as they would have been;
    - ``total``, ``per_example``, ``per_correct``: the price of the answers' calls, spent or
      saved alike, so a cached rerun costs what the first run cost and runs compare fairly.
    """
    if not records:
        return {"spent": superseded or 0.0, "saved": 0.0, "total": None, "per_example": None, "per_correct": None}
    spent_each: list[float | None] = [r.get("cost_usd") for r in records]
    saved_each: list[float | None] = [r.get("saved_usd", 0.0) for r in records]  # older runs: none recorded
    spent_known = [c for c in spent_each if c is not None]
    saved_known = [c for c in saved_each if c is not None]
    spent_ok, saved_ok = len(spent_known) == len(records), len(saved_known) == len(records)
    spent = superseded + float(sum(spent_known)) if superseded is not None and spent_ok else None
    saved = float(sum(saved_known)) if saved_ok else None
    if not (spent_ok and saved_ok):
        return {"spent": spent, "saved": saved, "total": None, "per_example": None, "per_correct": None}
    total = float(sum(spent_known) + sum(saved_known))
    correct = sum(1 for r in records if r.get("correct"))
    return {"spent": spent, "saved": saved, "total": total, "per_example": total / len(records),
            "per_correct": total / correct if correct else None}  # fmt: skip


def _superseded_spent(run_dir: Path) -> float | None:
    from react_bench.rundir import SUPERSEDED

    path = run_dir / SUPERSEDED
    if not path.exists():
        return 0.0
    costs = [json.loads(line).get("cost_usd") for line in path.read_text(encoding="utf-8").splitlines() if line]
    return None if any(c is None for c in costs) else float(sum(costs))


def _wall(records: list[dict[str, Any]]) -> dict[str, float | None]:
    """Wall time per example (each example's own, from its start to its answer) and per model call
    (an example's time over its calls, environment included); None for runs made before it was kept."""
    timed = [r for r in records if r.get("wall_s") is not None]
    if not timed:
        return {"per_example_s": None, "per_call_s": None}
    total = sum(float(r["wall_s"]) for r in timed)
    calls = sum(int(r.get("calls") or 0) for r in timed)
    return {"per_example_s": total / len(timed), "per_call_s": total / calls if calls else None}


def cache_summary(metrics: dict[str, Any]) -> str:
    """``"15 of 15 calls served from the request cache"`` (the calls the cache saw)."""
    cache = metrics.get("request_cache") or {}
    hits, misses = int(cache.get("hits") or 0), int(cache.get("misses") or 0)
    return f"{hits} of {hits + misses} calls served from the request cache"


def billed_equivalent_input(usage: dict[str, int]) -> float:
    """Input tokens as they are billed, in units of an uncached token: uncached + 1.25 x cache
    writes + 0.1 x cache reads (Anthropic's prompt-cache multipliers)."""
    return usage["input_tokens"] + 1.25 * usage["cache_creation_input_tokens"] + 0.1 * usage["cache_read_input_tokens"]


def _breakdown(records: list[dict[str, Any]], info: TaskInfo) -> dict[str, dict[str, Any]]:
    metric = info.primary_metric
    groups: dict[str, dict[str, list[float]]] = {}
    for record in records:
        for key in info.groups:
            value = (record.get("metadata") or {}).get(key)
            if value is not None and metric in record:
                groups.setdefault(key, {}).setdefault(str(value), []).append(float(record[metric]))
    breakdown: dict[str, dict[str, Any]] = {}
    for key, values in groups.items():
        breakdown[key] = {}
        for value, scores in sorted(values.items()):
            ci = score_ci(scores, seed=0)
            breakdown[key][value] = {"n": len(scores), metric: ci.mean, "ci95": [ci.low, ci.high]}
    return breakdown


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def format_table(metrics: dict[str, Any], info: TaskInfo) -> str:
    """A short, aligned metrics table with the paper's figure beside ours."""
    rows = [("metric", "value", "95% CI")]
    for name in info.metrics:
        if name in metrics:
            m = metrics[name]
            rows.append((name, f"{100 * m['mean']:.1f}", f"[{100 * m['ci95'][0]:.1f}, {100 * m['ci95'][1]:.1f}]"))
    for key, values in (metrics.get("by_group") or {}).items():
        for value, m in values.items() if key in info.shown_groups else ():
            low, high = m["ci95"]
            rows.append((f"  {key} {value} (n={m['n']})", f"{100 * m[info.primary_metric]:.1f}",
                         f"[{100 * low:.1f}, {100 * high:.1f}]"))  # fmt: skip
    custom = metrics.get("protocol") == "custom"
    for source, figures in info.paper.items():
        if metrics["mode"] in figures:
            rows.append((f"paper ({source})", f"{figures[metrics['mode']]:.1f}",
                         "NOT LIKE FOR LIKE: this run is protocol=custom" if custom else ""))  # fmt: skip
    rows.append(("examples", f"{metrics['n']}/{metrics['n_planned']}", "scores are over all of them"))
    if metrics.get("errors"):
        rows.append(("ERRORS", str(metrics["errors"]), "examples a fault kept from answering, scored as wrong"))
    if metrics.get("retries"):
        rows.append(("retries", str(metrics["retries"]), "transient faults retried"))
    rows.append(("finish reasons", ", ".join(f"{k}={v}" for k, v in sorted(metrics["reasons"].items())), ""))
    if metrics.get("refused"):
        rows.append(("REFUSED", str(metrics["refused"]), "the model declined (stop reason refusal), scored as wrong"))
    if metrics.get("stop_reasons"):
        stops = ", ".join(f"{k}={v}" for k, v in sorted(metrics["stop_reasons"].items()))
        rows.append(("stop reasons", stops, "of every model call"))
    rows.append(("routes", ", ".join(f"{k}={v}" for k, v in sorted(metrics["routes"].items())), ""))
    rows.append(("mean steps", f"{metrics['mean_steps']:.2f}",
                 f"model turns; {metrics.get('mean_actions', 0.0):.2f} actions executed per example"))  # fmt: skip
    if metrics.get("grounded_accuracy") is not None:
        of = f"right and read in an observation, of {metrics['grounded_n']} answers a page can say"
        rows.append(("grounded accuracy", f"{100 * metrics['grounded_accuracy']:.1f}", of))
    wall = metrics.get("wall") or {}
    if wall.get("per_example_s") is not None:
        per_call = "" if wall.get("per_call_s") is None else f"{wall['per_call_s']:.2f} s per model call"
        rows.append(("wall time", f"{wall['per_example_s']:.2f} s per example", per_call))
    if metrics.get("left_out"):
        rows.append(("left out (unreadable)", str(len(metrics["left_out"])), f"the first: {metrics['left_out'][0]}"))
    rows.append(("bad calls (re-asks)", str(metrics["bad_calls"]), ""))
    acted = metrics.get("actions") or {}
    if acted.get("n"):
        rows.append(("invalid actions", f"{100 * acted['invalid_rate']:.1f}%", f"of {acted['n']} actions"))
        if acted["think_share"]:
            rows.append(("think actions", f"{100 * acted['think_share']:.1f}%", "thoughts written as actions"))
    if "out_of_label_set" in metrics:
        rows.append(("answers not a label", str(metrics["out_of_label_set"]), ""))
    usage = metrics["usage"]
    total_in = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    unknown = usage.get("unknown_calls") or 0
    calls = metrics.get("calls", unknown)
    said = f"usage unknown for {unknown} of {calls} calls (the server sent none)" if unknown else ""
    rows.append(("tokens in/out", f"{total_in}/{usage['output_tokens']}", said))
    if usage["cache_read_input_tokens"] or usage["cache_creation_input_tokens"]:
        cache = f"read {usage['cache_read_input_tokens']}, written {usage['cache_creation_input_tokens']}"
        rows.append(("  of which cache", cache, ""))
    if metrics.get("cache_write_failures"):
        rows.append(("cache writes failed", str(metrics["cache_write_failures"]),
                     "responses used, not stored: a rerun asks again"))  # fmt: skip
    served = metrics.get("request_cache") or {}
    if served.get("hits") or served.get("misses"):
        rows.append(("request cache", cache_summary(metrics), "a hit is not sent, not paid again"))
    cost = metrics.get("cost_usd") or {}
    if cost.get("spent") is None and cost.get("total") is None:
        rows.append(("cost (USD)", "unknown (no price for this model)", ""))
    else:
        rows.append(("spent (USD)", _usd(cost.get("spent")), "calls that reached the API"))
        if cost.get("saved"):
            rows.append(("saved (USD)", _usd(cost.get("saved")), "calls served from the request cache, at price"))
        if cost.get("total") is not None:
            per_correct = "n/a" if cost["per_correct"] is None else f"{cost['per_correct']:.4f}"
            rows.append(("cost of the answers", f"{cost['total']:.4f}",
                         f"per example {cost['per_example']:.4f}, per correct {per_correct}"))  # fmt: skip
    if metrics.get("endpoint") or metrics.get("sdk"):
        rows.append(("endpoint", str(metrics.get("endpoint") or "-"), str(metrics.get("sdk") or "")))
    if metrics["not_applied"]:
        rows.append(("NOT APPLIED", "; ".join(metrics["not_applied"]), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
