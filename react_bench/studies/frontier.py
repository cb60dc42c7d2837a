"""Cost against accuracy (Kapoor et al., 2024): each run a point, the Pareto frontier marked, what
each step up along it costs per extra correct answer; the published figure beside each run."""

from __future__ import annotations

from typing import Any

from react_bench.metrics import detectable_unpaired
from react_bench.studies.runs import run_label
from react_bench.studies.tables import published


def frontier(runs: Any) -> Any:
    """What each method costs for what it buys (Kapoor et al., 2024, "AI Agents That Matter"):
    per task, every finished run as a point, its mean dollars per example (or, where any run of
    the task has no price, its tokens per example, input and output, for every run of the task
    alike) against its score with the 95% interval. A run is on the Pareto frontier when no run
    at most as costly scores as high (ties in cost: the better score). Along the frontier,
    ``per_extra_correct`` is what the next step up costs per answer it adds: the difference in
    cost per example over the difference in score (dollars, or tokens, per extra correct answer)."""
    import pandas as pd

    columns = ["task", "run", "run_id", "n", "measure", "per_example", "mean", "ci_low", "ci_high"]
    columns += ["on_frontier", "per_extra_correct", "step", "published"]
    done = runs[runs["mean"].notna() & (runs["n"].fillna(0) > 0)] if len(runs) else runs
    rows: list[dict[str, Any]] = []
    for task, group in done.groupby("task", sort=True) if len(done) else ():
        priced = group["cost_usd"].notna().all()
        measure = "USD" if priced else "tokens"
        points = []
        for r in group.itertuples():
            spent = float(r.cost_usd) if priced else float(r.tokens_in + r.tokens_out)
            points.append(
                {
                    "task": task,
                    "run": run_label(r)
                    + (" [oracle feedback]" if r.oracle_feedback else "")
                    + (" [answer chosen by the environment's reward]" if r.chosen_by_reward else ""),
                    "run_id": r.run_id,
                    "n": int(r.n),
                    "measure": measure,
                    "per_example": spent / int(r.n),
                    "mean": float(r.mean),
                    "ci_low": float(r.ci_low),
                    "ci_high": float(r.ci_high),
                    "on_frontier": False,
                    "per_extra_correct": None,
                    "step": "",  # along the frontier: whether the step up from the run before is detectable
                    "published": published(str(task), str(r.mode), r._asdict()),
                }
            )
        points.sort(key=lambda p: (p["per_example"], -p["mean"]))
        last: dict[str, Any] | None = None
        for p in points:
            if last is None or p["mean"] > last["mean"]:
                p["on_frontier"] = True
                if last is not None:
                    p["per_extra_correct"] = (p["per_example"] - last["per_example"]) / (p["mean"] - last["mean"])
                    # the step up could be noise: below what the two runs' n can detect, it is not ranked
                    least = detectable_unpaired(p["n"], p["mean"], last["n"], last["mean"])
                    step_seen = least is not None and p["mean"] - last["mean"] >= least
                    p["step"] = "distinguishable" if step_seen else "not distinguishable"
                last = p
        rows += points
    return pd.DataFrame(rows, columns=columns)


def frontier_markdown(points: Any) -> str:
    """frontier.md: per task, the runs from cheapest to dearest, the frontier marked."""
    lines = [
        "# Cost against accuracy: the Pareto frontier",
        "",
        "Each run is a point: its mean cost per example and its score (95% interval). A run on the "
        "frontier (`yes`) scores higher than every run that costs at most as much; `per extra correct` is "
        "what the step up to it from the frontier run before costs per correct answer it adds. Where a "
        "task has a run without a price (a local or scripted model), every run of it is measured in tokens "
        "(input and output) instead of dollars. `published` is the figure the method's own paper reports "
        "on the task (ReAct's, Reflexion's, LATS's; other models and settings: not like for like). A step "
        "up smaller than the two runs' n can detect at 80% power (a two-sided 5% test) is marked "
        "`step not distinguishable`: it may be noise.",
    ]
    if not len(points):
        return "\n".join([*lines, "", "No finished run to place."]) + "\n"
    for task, group in points.groupby("task", sort=True):
        measure = group["measure"].iloc[0]
        unit = "$" if measure == "USD" else "tokens"
        lines += ["", f"## {task} ({'dollars' if measure == 'USD' else 'tokens'} per example)", ""]
        lines += [
            f"| run | n | {unit} per example | score | 95% CI | frontier | {unit} per extra correct | published |"
        ]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for p in group.itertuples():
            cost = f"{p.per_example:.4f}" if measure == "USD" else f"{p.per_example:,.0f}"
            extra = (
                ""
                if p.per_extra_correct is None or p.per_extra_correct != p.per_extra_correct
                else (f"{p.per_extra_correct:.4f}" if measure == "USD" else f"{p.per_extra_correct:,.0f}")
            )
            if extra and p.step == "not distinguishable":
                extra += " (step not distinguishable)"
            lines.append(
                f"| {p.run} | {p.n} | {cost} | {100 * p.mean:.1f} | "
                f"[{100 * p.ci_low:.1f}, {100 * p.ci_high:.1f}] | {'yes' if p.on_frontier else ''} | {extra} | "
                f"{p.published} |"
            )
    return "\n".join(lines) + "\n"
