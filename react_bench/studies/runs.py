"""A study's runs: the run folders found under the paths given, one row each (pandas), and the
labels every table and plot of the study names a run by."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from react_bench.methods.registry import find_method
from react_bench.record import Cost, RunHeader, RunMetrics
from react_bench.studies.scan import scan_runs
from react_bench.tasks import task_info


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    runs: set[Path] = set()
    for path in map(Path, paths):
        if (path / "run.json").is_file():
            runs.add(path.resolve())
        else:
            runs.update(p.parent.resolve() for p in path.rglob("run.json"))
    return sorted(runs)


def load_runs(paths: Iterable[str | Path], report_dir: Path | None = None, run_ids: Iterable[str] | None = None) -> Any:
    """One row per run (pandas): task, mode, runner, model, protocol, scores, cost, errors. Each run's
    records are read once (``scan.scan_runs``; ``report_dir``: the same pass writes the report's
    pages of that study folder); its figures are its records' (a killed run: what it finished),
    metrics.json's where that covers the same records. ``run_ids``: only the runs of those ids."""
    import pandas as pd

    rows = []
    dirs = find_runs(paths)
    if run_ids is not None:
        wanted = set(run_ids)
        dirs = [d for d in dirs if RunHeader.read(d).run_id in wanted]
    scans = scan_runs(dirs, report_dir)
    for run_dir in dirs:
        run = RunHeader.read(run_dir)
        m = RunMetrics.read(run_dir)
        if m is None or m.n != scans[run_dir].records:  # not written yet, or a resumed run killed again
            m = scans[run_dir].metrics
        config = run.config
        task = run.task
        primary = task_info(task).primary_metric
        score = m.scores.get(primary) if m is not None else None
        cost = m.cost if m is not None else Cost(spent=None, saved=None)
        groups = m.by_group.get("task_type", {}) if m is not None else {}
        rows.append(
            {
                "run_dir": str(run_dir),
                "run_id": run.run_id,
                "started": run.started,
                "task": task,
                "mode": run.mode,
                "runner": run.runner,
                "model": run.model_name,
                "protocol": run.protocol,
                "context": (config["solve"].get("context") or {}).get("name", "full"),
                "metric": primary,
                "mean": score and score.mean,
                "ci_low": score and score.ci95[0],
                "ci_high": score and score.ci95[1],
                "n": m and m.n,
                "n_planned": run.n_examples,
                # a run killed before its end: its finished examples, of how many ("22 of 30"); "" when whole
                "partial": f"{m.n if m else 0} of {run.n_examples * run.epochs}"
                if (m.n if m else 0) < run.n_examples * run.epochs
                else "",
                "errors": m.errors if m else 0,
                "cost_usd": cost.total,
                "cost_per_correct": cost.per_correct,
                "tokens_in": m.usage.total_input_tokens if m else 0,
                "tokens_out": m.usage.output_tokens if m else 0,
                "grounded_accuracy": m and m.grounded_accuracy,
                "ids": run.example_ids,
                "not_applied": run.not_applied,
                "spent_usd": cost.spent,
                "saved_usd": cost.saved,
                "cache_hits": m.cache_hits if m else 0,
                "calls": m.cache_calls if m else 0,
                "endpoint": run.endpoint,
                "wall_s_per_example": m and m.wall_per_example_s,
                "wall_s_per_call": m and m.wall_per_call_s,
                "failure_labels": dict(m.failure_labels) if m else {},
                "pair": tuple(config.get("prompt_pair") or ()) or None,
                "finetuned_on": (config.get("model") or {}).get("finetuned_on"),
                "by_type": {k: g.mean for k, g in groups.items()},
                "epochs": m.epochs if m else 1,
                "pass_at_k": {k: v.mean for k, v in m.pass_at.items()} if m else {},
                "pass_hat_k": {k: v.mean for k, v in m.pass_hat.items()} if m else {},
                "method_summary": m.method if m else None,  # what the method adds (RunMetrics.method)
                "oracle_feedback": bool(m and m.oracle_feedback),
                # the environment's reward, scored against the hidden goal, chose an answer (oracle-like)
                "chosen_by_reward": bool(m and m.chosen_by_reward),
                "env": config.get("env") or {},  # the environment's settings (a shop's url, ...)
                "split": (config.get("task") or {}).get("split"),
                # judge= (grading.judge): the second reading's score ("judged", or "rules": a heuristic)
                **_judged_columns(m),
            }
        )
    return pd.DataFrame(rows)


def _judged_columns(m: RunMetrics | None) -> dict[str, Any]:
    block = (m.judge if m is not None else None) or {}
    name = block.get("metric")
    score = m.scores.get(name) if m is not None and name else None
    return {
        "judged_metric": name,
        "judged_mean": score and score.mean,
        "judged_low": score and score.ci95[0],
        "judged_high": score and score.ci95[1],
        "accepted_misses": block.get("accepted_misses"),
        "rejected_hits": block.get("rejected_hits"),
        "unjudged": block.get("unjudged"),
    }


def run_label(row: Any) -> str:
    return f"{row.mode}/{row.runner} ({row.model}, {row.run_id})"


def run_title(row: Any) -> str:
    return f"{row.task} {row.mode}/{row.runner}\n{row.model} ({row.run_id})"


def method_curves(runs: Any) -> list[tuple[Any, Any]]:
    """Each run of a method with a learning curve (``Method.curve``), with it."""
    found = []
    for r in runs.itertuples() if len(runs) else ():
        method = find_method(r.mode) if getattr(r, "method_summary", None) is not None else None
        curve = method.curve(r.method_summary) if method is not None else None
        if curve is not None:
            found.append((r, curve))
    return found


def money(value: Any) -> str:
    return "unknown" if value is None or value != value else f"{value:.4f}"


def md_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]
