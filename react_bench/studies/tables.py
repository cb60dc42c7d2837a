"""The study's tables: Table 1 (ours beside the published figures), the runs to read with care,
Table 3 (ALFWorld per task type), Reflexion's learning curves, context remedies side by side.
The decisions behind each are in the package's docstring (``react_bench.studies``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from react_bench.methods.registry import find_method, methods
from react_bench.studies.runs import method_curves, money
from react_bench.tasks import TASKS, task_info

LEGEND = (
    "`*` protocol=custom (the paper's figure beside it is not like for like); `†` example ids differ from the "
    "task's other runs; `‡` examples ended in an error (scored as wrong); `§` the model did not take a "
    "protocol setting (listed below)"
)


def _cell(row: Any, ids_of_task: set[tuple[str, ...]]) -> str:
    if row.get("mean") is None or row["mean"] != row["mean"]:  # no finished example yet: nothing to score
        return f"no finished example (0 of {row.get('n_planned') or 0})"
    marks = ("*" if row["protocol"] == "custom" else "") + ("†" if len(ids_of_task) > 1 else "")
    marks += ("‡" if row["errors"] else "") + ("§" if row["not_applied"] else "")
    cell = f"{100 * row['mean']:.1f} [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}] (n={int(row['n'])}){marks}"
    if row.get("partial"):  # killed before its end: its finished examples, said
        cell += f"; partial: {row['partial']}"
    if row.get("pass_at_k"):  # several attempts per example: how possibly, how reliably (the largest k)
        k = max(row["pass_at_k"])
        cell += f"; pass@{k} {100 * row['pass_at_k'][k]:.1f}, pass^{k} {100 * row['pass_hat_k'][k]:.1f}"
    method = find_method(row["mode"]) if row.get("method_summary") is not None else None
    said = [method.cell_note(row["method_summary"])] if method is not None else []  # "after 5 trials"
    if row.get("oracle_feedback"):  # the gold answer steered it (Reflexion's retries, LATS's search)
        said.append("oracle feedback")
    if any(said):
        cell += "; " + ", ".join(s for s in said if s)
    if row.get("chosen_by_reward"):  # the environment's reward chose among candidates: oracle-like
        cell += "; answer chosen by the environment's reward"
    return cell


_JUDGED = {"judged": "judged", "rules": "rules (heuristic)"}


def _judged_cell(row: Any) -> str:
    """``62.0 [48.1, 74.2]; +3 misses accepted, -0 hits rejected`` (or why there is no figure yet)."""
    if row.get("judged_mean") is None or row["judged_mean"] != row["judged_mean"]:
        return f"{int(row.get('unjudged') or 0)} example(s) not judged yet"
    return (
        f"{100 * row['judged_mean']:.1f} [{100 * row['judged_low']:.1f}, {100 * row['judged_high']:.1f}]; "
        f"+{int(row.get('accepted_misses') or 0)} misses accepted, -{int(row.get('rejected_hits') or 0)} hits rejected"
    )


ROW_KEYS = ("mode", "runner", "model")  # a row of Table 1: what was asked, how, of whom


def table1(runs: Any, runner: str | None = None, *, every_run: bool = False) -> tuple[Any, list[str]]:
    """The Table 1 grid (pandas): a row per mode, runner and model (so a sweep over runners or
    models shows every one), a column per task, the paper's figures beside; modes no run
    covers keep a row with the paper's figures. A cell is the newest run of its mode, runner,
    model and task; each run not shown is named in the notes with the reason. ``every_run``:
    a row per run instead (its run id a column), nothing left out."""
    import pandas as pd

    notes: list[str] = []
    if runner is not None:
        left = runs[runs["runner"] != runner]
        notes += [
            f"{r.run_dir}: not shown (runner={r.runner}; the table is for runner={runner})" for r in left.itertuples()
        ]
        runs = runs[runs["runner"] == runner]
    rows = []
    present = set(runs["task"]) if len(runs) else set()
    infos = [TASKS[name].info for name in TASKS if name in present]
    for mode in methods():
        of_mode = runs[runs["mode"] == mode] if len(runs) else runs
        keys: list[tuple[Any, ...]] = sorted({(r.runner, r.model) for r in of_mode.itertuples()})
        if every_run:
            keys = [(r.runner, r.model, r.run_id) for r in of_mode.sort_values("started").itertuples()]
        for key in keys or [("", "")]:
            row: dict[str, Any] = {"mode": mode, "runner": key[0], "model": key[1]}
            same = of_mode[of_mode["model"] == key[1]]["finetuned_on"] if len(of_mode) else ()
            tuned = {f for f in same if isinstance(f, str) and f}
            row["finetuned"] = ", ".join(sorted(Path(f).name for f in tuned))  # on which data ("" prompted)
            if every_run:
                row["run"] = key[2] if len(key) > 2 else ""
            for info in infos:
                task, column = info.name, info.column
                match = (of_mode["task"] == task) & (of_mode["runner"] == key[0]) & (of_mode["model"] == key[1])
                if every_run and len(key) > 2:
                    match &= of_mode["run_id"] == key[2]
                cell = of_mode[match].sort_values("started") if len(of_mode) else of_mode
                ids_of_task = set(runs[runs["task"] == task]["ids"])
                if len(cell):
                    latest = cell.iloc[-1]
                    row[column] = _cell(latest, ids_of_task)
                    row[f"{column} cost (USD)"] = money(latest["cost_usd"])
                    none_right = latest["cost_usd"] is not None and latest["mean"] == 0
                    row[f"{column} cost/correct"] = (
                        "n/a (none right)" if none_right else money(latest["cost_per_correct"])
                    )
                    if latest.get("judged_metric"):  # judge=: the second reading beside the paper's metric
                        row[f"{column} {_JUDGED[latest['judged_metric']]}"] = _judged_cell(latest)
                    why = f"an older run of {mode}/{key[0]} {key[1]} on {task}; the newest fills the cell"
                    notes += [f"{r}: not shown ({why}; --every-run shows each)" for r in cell["run_dir"].iloc[:-1]]
                else:
                    row[column] = row[f"{column} cost (USD)"] = row[f"{column} cost/correct"] = ""
                for source, figures in info.paper.items():
                    row[f"{column} {source}"] = f"{figures[mode]:.1f}" if mode in figures else ""
                for other in methods().values():  # a method's own authors' figures (LATS's, Reflexion's), on its row
                    if other.published_by and task in other.published:
                        row.setdefault(f"{column} {other.published_by}", "")
                own = methods()[mode]
                if own.published_by and task in own.published:
                    shown = cell.iloc[-1] if len(cell) else None
                    row[f"{column} {own.published_by}"] = _with_conditions(own, task, shown)
            rows.append(row)
    every = list(dict.fromkeys(k for r in rows for k in r))  # a judged column only some runs have: blank elsewhere
    rows = [{k: r.get(k, "") for k in every} for r in rows]
    shown_modes = set(methods())
    notes += (
        [
            f"{r.run_dir}: not shown (mode {r.mode} has no row in Table 1)"
            for r in runs.itertuples()
            if r.mode not in shown_modes
        ]
        if len(runs)
        else []
    )
    return pd.DataFrame(rows), notes


def custom_notes(runs: Any) -> list[str]:
    """What a reader must know beside the table: runs off the paper's protocol (their paper
    figures are not a like-for-like comparison) and settings a model did not take."""
    out = []
    for r in runs.itertuples() if len(runs) else ():
        label = f"{r.task} {r.mode}/{r.runner} {r.model} ({r.run_id})"
        if r.protocol == "custom":
            out.append(f"{label}: protocol=custom, not the paper's protocol; the paper's figure is not like for like")
        if r.not_applied:
            out.append(f"{label}: not applied: {'; '.join(r.not_applied)}")
    return out


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
    for mode in sorted(set(alf["mode"])):  # a method's own authors' ALFWorld figure (no per-type split)
        method = find_method(mode)
        if method is not None and method.published_by and "alfworld" in method.published:
            rows.append({"run": f"{method.published_by}: {method.published['alfworld']}", "n": 134})
    return pd.DataFrame(rows)


def learning_curves(runs: Any) -> Any:
    """The learning curve of every run whose method has one (``Method.curve``: Reflexion's share
    right after trial t) with its 95% Wilson interval, what the method says beside each point (who
    judged, oracle feedback marked; the cost of a trial and of a success)."""
    import pandas as pd

    rows = []
    for r, curve in method_curves(runs):
        for t, score in enumerate(curve.points, start=1):
            rows.append(
                {
                    "run": f"{r.task} {r.mode}/{r.runner} {r.model} ({r.run_id})",
                    **{k: v for k, v in curve.columns.items() if not k.startswith("cost")},
                    curve.unit: t,
                    "right": f"{100 * score.mean:.1f}",
                    "95% CI": f"[{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]",
                    "n": r.n,
                    **{k: v for k, v in curve.columns.items() if k.startswith("cost")},
                    "paper": _published_by_method(r.task, r.mode) if t == len(curve.points) else "",
                }
            )
    return pd.DataFrame(rows)


def context_comparison(runs: Any) -> Any:
    """Runs that differ only in their ``context`` remedy, side by side: score, tokens, cost."""
    keys = ["task", "mode", "runner", "model"]
    groups = runs.groupby(keys).filter(lambda g: g["context"].nunique() > 1)
    columns = [*keys, "context", "mean", "n", "tokens_in", "cost_usd", "grounded_accuracy", "run_id"]
    return groups[columns].sort_values([*keys, "context"]) if len(groups) else groups


def _with_conditions(method: Any, task: str, run: Any) -> str:
    """A method's published figure on ``task``, and beside a run of it why the two are not like for
    like (``Method.unlike``: feedback, data, model)."""
    figure = str(method.published.get(task, ""))
    unlike = method.unlike(task, dict(run)) if figure and run is not None else []
    return f"{figure} [not like for like: {'; '.join(unlike)}]" if unlike else figure


def _published_by_method(task: str, mode: str, run: Any = None) -> str:
    method = find_method(mode)
    return _with_conditions(method, task, run) if method is not None else ""


def published(task: str, mode: str, run: Any = None) -> str:
    """The published figure of ``mode`` on ``task`` beside a run of it: its own authors' where the
    method has them (LATS's, Reflexion's: ``Method.published``, with why it is not like for like
    beside ``run``), else the ReAct paper's ("" where none was published)."""
    own = _published_by_method(task, mode, run)
    if own:
        return own
    said = [f"{source} {figures[mode]:.1f}" for source, figures in task_info(task).paper.items() if mode in figures]
    return "; ".join(said)
