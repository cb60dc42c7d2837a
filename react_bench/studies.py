"""Studies over finished runs: the Table 1 grid, paired tests, accuracy at k, tokens per step.

Reads run folders only (``run.json`` and ``examples.jsonl`` through ``results``); nothing in the
run path imports this module. ``scripts/compare.py`` and the notebooks use these functions.

Decisions a next engineer needs:
- A *run* is a folder with a ``run.json``; ``find_runs`` accepts run folders or folders that
  hold runs at any depth.
- Table 1: one row per mode, one column per task (HotpotQA EM, FEVER accuracy), each cell
  ``mean [95% CI] (n)``, with the paper's PaLM-540B and GPT-3 figures beside. When several runs
  fill one cell, the newest is shown and the others are listed below the table. A cell is
  marked ``*`` for ``protocol=custom``, ``†`` when its example ids differ from the other
  runs of its task, ``‡`` when examples ended in an error (scored as wrong). Nothing is mixed.
- Paired comparisons (runs of one task over exactly the same example ids): the difference of
  the primary metric, its 95% paired bootstrap CI (``scipy.stats.bootstrap``, paired, 10,000
  resamples, seeded) and McNemar's exact p (``statsmodels``), from the per-example correctness.
- Accuracy at k (the paper's Figure 2): CoT-SC with the majority of the first k stored samples
  (empty answers abstain, ties to the earliest); ReAct->CoT-SC uses the ReAct answer where ReAct
  answered and the first-k majority where it backed off (exact); CoT-SC->ReAct backs off to the
  ReAct answer when the first-k majority has fewer than k/2 votes, where that answer is known
  (the run backed off at the full n); elsewhere the first-k majority stands (an approximation,
  said in the figure's caption).
- Tokens per step: the mean input tokens of the turn at each step (uncached, cache writes,
  cache reads stacked), from every episode's ``step_finished`` events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from react_bench.modes import MODES, majority_vote
from react_bench.results import read_records
from react_bench.tasks import TASKS, task_info


def find_runs(paths: Iterable[str | Path]) -> list[Path]:
    runs: set[Path] = set()
    for path in map(Path, paths):
        if (path / "run.json").is_file():
            runs.add(path.resolve())
        else:
            runs.update(p.parent.resolve() for p in path.rglob("run.json"))
    return sorted(runs)


def load_runs(paths: Iterable[str | Path]) -> Any:
    """One row per run (pandas): task, mode, runner, model, protocol, scores, cost, errors."""
    import pandas as pd

    rows = []
    for run_dir in find_runs(paths):
        run = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        metrics_path = run_dir / "metrics.json"
        metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.exists() else {}
        config = run["config"]
        task = config["task"]["name"]
        primary = task_info(task).primary_metric
        score = metrics.get(primary) or {}
        cost = (metrics.get("cost_usd") or {}).get("total")
        rows.append({
            "run_dir": str(run_dir), "run_id": run["run_id"], "started": run["started"], "task": task,
            "mode": config["solve"]["mode"], "runner": config["solve"]["runner"], "model": run["model_name"],
            "protocol": config["protocol"], "context": (config["solve"].get("context") or {}).get("name", "full"),
            "metric": primary, "mean": score.get("mean"), "ci_low": (score.get("ci95") or [None, None])[0],
            "ci_high": (score.get("ci95") or [None, None])[1], "n": metrics.get("n"),
            "n_planned": run["n_examples"], "errors": metrics.get("errors", 0), "cost_usd": cost,
            "cost_per_correct": (metrics.get("cost_usd") or {}).get("per_correct"),
            "tokens_in": sum((metrics.get("usage") or {}).get(k, 0) for k in
                             ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")),
            "grounded_accuracy": metrics.get("grounded_accuracy"), "ids": tuple(run["example_ids"]),
            "pair": tuple(config.get("prompt_pair") or ()) or None,
            "by_type": {k: v.get(primary) for k, v in ((metrics.get("by_group") or {}).get("task_type") or {}).items()},
        })  # fmt: skip
    return pd.DataFrame(rows)


def _cell(row: Any, ids_of_task: set[tuple[str, ...]]) -> str:
    marks = ("*" if row["protocol"] == "custom" else "") + ("†" if len(ids_of_task) > 1 else "")
    marks += "‡" if row["errors"] else ""
    return f"{100 * row['mean']:.1f} [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}] (n={row['n']}){marks}"


def table1(runs: Any, runner: str | None = None) -> tuple[Any, list[str]]:
    """The Table 1 grid (pandas) and notes on runs left out of it (older duplicates)."""
    import pandas as pd

    notes: list[str] = []
    if runner is not None:
        runs = runs[runs["runner"] == runner]
    rows = []
    present = set(runs["task"]) if len(runs) else set()
    infos = [TASKS[name].info for name in TASKS if name in present]
    for mode in MODES:
        row: dict[str, Any] = {"mode": mode}
        for info in infos:
            task, column = info.name, info.column
            cell = runs[(runs["mode"] == mode) & (runs["task"] == task)].sort_values("started")
            ids_of_task = set(runs[runs["task"] == task]["ids"])
            if len(cell):
                latest = cell.iloc[-1]
                row[column] = _cell(latest, ids_of_task)
                row[f"{column} cost (USD)"] = _money(latest["cost_usd"])
                row[f"{column} cost/correct"] = _money(latest["cost_per_correct"])
                notes += [f"{mode} {task}: also {r} (older, not shown)" for r in cell["run_dir"].iloc[:-1]]
            else:
                row[column] = row[f"{column} cost (USD)"] = row[f"{column} cost/correct"] = ""
            for source, figures in info.paper.items():
                row[f"{column} {source}"] = f"{figures[mode]:.1f}" if mode in figures else ""
        rows.append(row)
    return pd.DataFrame(rows), notes


def table3(runs: Any) -> Any:
    """ALFWorld per task type (the paper's Table 3): every run, then for each model, mode and runner
    the best and the mean over its runs that differ only in the exemplar pair (the six orderings),
    with the paper's rows below."""
    import pandas as pd

    from react_bench.tasks.alfworld import TABLE3, TABLE3_COLUMNS

    names = ("Pick", "Clean", "Heat", "Cool", "Look", "Pick 2")
    alf = runs[runs["task"] == "alfworld"] if len(runs) else runs
    if not len(alf):
        return pd.DataFrame()

    def row(label: str, by_type: dict[str, Any], overall: Any, n: Any) -> dict[str, Any]:
        cells = {
            name: "" if by_type.get(t) is None else f"{100 * by_type[t]:.0f}" for name, t in zip(names, TABLE3_COLUMNS)
        }
        return {"run": label, **cells, "All": "" if overall is None else f"{100 * overall:.1f}", "n": n}

    rows = []
    for (model, mode, runner), group in alf.groupby(["model", "mode", "runner"]):
        for r in group.itertuples():
            pair = "" if r.pair is None else " pair {}{}".format(*r.pair)
            rows.append(row(f"{model} {mode}/{runner}{pair}", r.by_type, r.mean, r.n))
        if group["pair"].notna().sum() > 1:
            best = group.loc[group["mean"].idxmax()]
            rows.append(row(f"{model} {mode}/{runner} best of {len(group)}", best["by_type"], best["mean"], best["n"]))
            mean_by_type = {
                t: sum((b or {}).get(t) or 0 for b in group["by_type"]) / len(group) for t in TABLE3_COLUMNS
            }
            rows.append(row(f"{model} {mode}/{runner} mean of {len(group)}", mean_by_type, group["mean"].mean(), ""))
    for label, figures in TABLE3.items():
        rows.append({"run": f"paper: {label}", **{n: str(v) for n, v in zip((*names, "All"), figures)}, "n": 134})
    return pd.DataFrame(rows)


def context_comparison(runs: Any) -> Any:
    """Runs that differ only in their ``context`` remedy, side by side: score, tokens, cost."""
    keys = ["task", "mode", "runner", "model"]
    groups = runs.groupby(keys).filter(lambda g: g["context"].nunique() > 1)
    columns = [*keys, "context", "mean", "n", "tokens_in", "cost_usd", "grounded_accuracy", "run_id"]
    return groups[columns].sort_values([*keys, "context"]) if len(groups) else groups


def _money(value: Any) -> str:
    return "unknown" if value is None or value != value else f"{value:.4f}"


def paired(runs: Any) -> list[dict[str, Any]]:
    """Every two runs of one task over exactly the same example ids: difference, CI, McNemar p."""
    import numpy as np
    from scipy.stats import bootstrap
    from statsmodels.stats.contingency_tables import mcnemar

    out = []
    rows = list(runs.itertuples())
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a.task != b.task or set(a.ids) != set(b.ids) or not a.n or a.n != b.n:
                continue
            ra, rb = _correct_by_id(Path(a.run_dir)), _correct_by_id(Path(b.run_dir))
            ids = sorted(set(ra) & set(rb))
            if not ids:
                continue
            xa, xb = np.array([ra[k] for k in ids], float), np.array([rb[k] for k in ids], float)
            diff = float(xa.mean() - xb.mean())
            if np.all(xa == xb):
                low = high = 0.0
            else:
                ci = bootstrap(
                    (xa, xb), _mean_difference, paired=True, n_resamples=10_000, confidence_level=0.95,
                    random_state=0, method="percentile",
                )  # fmt: skip
                low, high = float(ci.confidence_interval.low), float(ci.confidence_interval.high)
            table = [[int(((xa == 1) & (xb == 1)).sum()), int(((xa == 1) & (xb == 0)).sum())],
                     [int(((xa == 0) & (xb == 1)).sum()), int(((xa == 0) & (xb == 0)).sum())]]  # fmt: skip
            p = float(mcnemar(table, exact=True).pvalue)
            out.append({"task": a.task, "a": _label(a), "b": _label(b), "n": len(ids), "a_mean": float(xa.mean()),
                        "b_mean": float(xb.mean()), "difference": diff, "ci_low": low, "ci_high": high,
                        "a_only": table[0][1], "b_only": table[1][0], "mcnemar_p": p})  # fmt: skip
    return out


def _mean_difference(x: Any, y: Any, axis: int = -1) -> Any:
    return x.mean(axis=axis) - y.mean(axis=axis)


def _label(row: Any) -> str:
    return f"{row.mode}/{row.runner} ({row.model}, {row.run_id})"


def _correct_by_id(run_dir: Path) -> dict[str, float]:
    return {r["id"]: float(bool(r.get("correct"))) for r in read_records(run_dir)}


def k_curve(run_dir: Path, task_name: str, mode: str, max_k: int | None = None) -> list[float]:
    """Accuracy at k = 1..n from the stored CoT-SC samples (module docstring for the combinations)."""
    from react_bench.tasks import load_task

    task = load_task(task_name)
    records = read_records(run_dir)
    n = max((len(r.get("samples") or []) for r in records), default=0)
    ks = range(1, (max_k or n) + 1)
    curve = []
    for k in ks:
        right = 0.0
        for r in records:
            answer = _answer_at_k(r, mode, k)
            right += task.score(answer, r["gold"])[task.info.primary_metric]
        curve.append(right / len(records) if records else 0.0)
    return curve


def _answer_at_k(record: dict[str, Any], mode: str, k: int) -> str:
    samples = record.get("samples") or []
    vote = majority_vote(samples[:k]) if samples else None
    if mode == "react_cot_sc":
        return vote.answer if record["route"] == "react->cot_sc" and vote is not None else record["prediction"]
    if mode == "cot_sc_react" and vote is not None and vote.count < k / 2 and record["route"] == "cot_sc->react":
        return record["prediction"]
    return vote.answer if vote is not None else record["prediction"]


def tokens_per_step(run_dir: Path) -> list[dict[str, float]]:
    """Mean input tokens of the turn at each step: uncached, cache writes, cache reads."""
    sums: dict[int, list[float]] = {}
    for record in read_records(run_dir):
        for episode in record.get("trajectory") or []:
            for event in episode["events"]:
                if event["type"] == "step_finished":
                    u = event["usage"]
                    values = [u["input_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"], 1]
                    totals = sums.setdefault(event["step"], [0.0, 0.0, 0.0, 0.0])
                    sums[event["step"]] = [a + b for a, b in zip(totals, values, strict=True)]
    return [{"step": s, "uncached": t[0] / t[3], "written": t[1] / t[3], "read": t[2] / t[3]}
            for s, t in sorted(sums.items())]  # fmt: skip


def plot_k_curve(runs: Any, path: Path) -> None:
    """Accuracy at k of every CoT-SC-based run (the paper's Figure 2 shape)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for row in runs.itertuples():
        if row.mode in ("cot_sc", "react_cot_sc", "cot_sc_react"):
            curve = k_curve(Path(row.run_dir), row.task, row.mode)
            if curve:
                ax.plot(range(1, len(curve) + 1), [100 * v for v in curve], marker="o", label=f"{row.task} {row.mode}")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("CoT-SC samples k")
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy at k (CoT-SC->ReAct: ReAct answer where known)", fontsize=9)
    if ax.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_tokens(runs: Any, path: Path) -> None:
    """Input tokens per turn along the episodes of every agent run, cached parts stacked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents = [r for r in runs.itertuples() if r.mode in ("react", "act", "react_cot_sc", "cot_sc_react")]
    fig, axes = plt.subplots(1, max(1, len(agents)), figsize=(4 * max(1, len(agents)), 3.5), squeeze=False)
    for ax, row in zip(axes[0], agents, strict=False):
        steps = tokens_per_step(Path(row.run_dir))
        x = [s["step"] for s in steps]
        ax.bar(x, [s["uncached"] for s in steps], label="uncached")
        ax.bar(x, [s["written"] for s in steps], bottom=[s["uncached"] for s in steps], label="cache write")
        ax.bar(x, [s["read"] for s in steps], bottom=[s["uncached"] + s["written"] for s in steps], label="cache read")
        ax.set_title(f"{row.task} {row.mode}/{row.runner}", fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("input tokens per turn")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
