"""Studies over finished runs: the Table 1 grid, paired tests, accuracy at k, tokens per step.

Reads run folders only (``run.json`` and ``examples.jsonl`` through ``results``); nothing in the
run path imports this module. ``scripts/compare.py`` and the notebooks use these functions.

Decisions a next engineer needs:
- A *run* is a folder with a ``run.json``; ``find_runs`` accepts run folders or folders that
  hold runs at any depth.
- Table 1: one row per mode, runner and model (a sweep over runners or models shows each),
  one column per task (HotpotQA EM, FEVER accuracy, ...), each cell ``mean [95% CI] (n)``
  (Wilson's interval for a proportion), with the paper's PaLM-540B and GPT-3 figures beside.
  When several runs fill one cell, the newest is shown and every other one is named below the
  table with the reason (``every_run=True``: a row per run). A cell is marked ``*`` for
  ``protocol=custom`` (the paper's figure beside it is not like for like), ``†`` when its
  example ids differ from the other runs of its task, ``‡`` when examples ended in an error
  (scored as wrong), ``§`` when the model did not take a protocol setting. Nothing is mixed.
- Paired comparisons (runs of one task over exactly the same example ids): the difference of
  the primary metric, its 95% paired bootstrap CI (``scipy.stats.bootstrap``, paired, 10,000
  resamples, seeded) and McNemar's exact p (``statsmodels``), from the per-example correctness,
  with Holm's adjustment over all the pairs of the study beside the raw p (many pairs, many
  chances of a small p).
- Per-question diff of two runs over the same ids (``question_diff``): the questions whose
  correctness changed, both answers, the gold, both trajectories' locations.
- Accuracy at k (the paper's Figure 2): CoT-SC with the majority of the first k stored samples
  (empty answers abstain, ties to the earliest); ReAct->CoT-SC uses the ReAct answer where ReAct
  answered and the first-k majority where it backed off (exact); CoT-SC->ReAct backs off to the
  ReAct answer when the first-k majority has fewer than k/2 votes, where that answer is known
  (the run backed off at the full n); elsewhere the first-k majority stands (an approximation,
  said in the figure's caption).
- Reflexion (``mode=reflexion``): its Table 1 cell says after how many trials and whether the gold
  label drove the retries (oracle feedback); Reflexion's published figures are its paper column
  (Table 1 ``... Reflexion paper``; Table 3's last row); ``learning_curves`` and
  ``plot_learning_curves`` give the share right after each trial, with the cost of a trial and of a
  success (``learning_curve.md`` / ``.png`` of a study).
- Tokens per step: the mean input tokens of the turn at each step (uncached, cache writes,
  cache reads stacked), from every episode's ``step_finished`` events.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from react_bench.lats import LATS_PAPER
from react_bench.modes import MODES, majority_vote
from react_bench.record import Cost, ExampleRecord, RunHeader, RunMetrics
from react_bench.reflexion import REFLEXION_PAPER
from react_bench.results import iter_example_records, read_records
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
        run = RunHeader.read(run_dir)
        m = RunMetrics.read(run_dir)  # None: a run that has not finished once
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
                "reflexion": m.reflexion if m else None,  # mode=reflexion: record.TrialCurve
                "oracle_feedback": bool(m and m.oracle_feedback),
            }
        )
    return pd.DataFrame(rows)


def _cell(row: Any, ids_of_task: set[tuple[str, ...]]) -> str:
    marks = ("*" if row["protocol"] == "custom" else "") + ("†" if len(ids_of_task) > 1 else "")
    marks += ("‡" if row["errors"] else "") + ("§" if row["not_applied"] else "")
    cell = f"{100 * row['mean']:.1f} [{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}] (n={row['n']}){marks}"
    if row.get("pass_at_k"):  # several attempts per example: how possibly, how reliably (the largest k)
        k = max(row["pass_at_k"])
        cell += f"; pass@{k} {100 * row['pass_at_k'][k]:.1f}, pass^{k} {100 * row['pass_hat_k'][k]:.1f}"
    if row.get("reflexion") is not None:  # Reflexion: after how many trials, and who judged them
        cell += f"; after {row['reflexion'].trials} trials"
        if row["oracle_feedback"]:
            cell += ", oracle feedback"
    elif row.get("oracle_feedback"):  # LATS: the gold answer ended the search
        cell += "; oracle feedback"
    return cell


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
    for mode in MODES:
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
                    row[f"{column} cost (USD)"] = _money(latest["cost_usd"])
                    none_right = latest["cost_usd"] is not None and latest["mean"] == 0
                    row[f"{column} cost/correct"] = (
                        "n/a (none right)" if none_right else _money(latest["cost_per_correct"])
                    )
                    why = f"an older run of {mode}/{key[0]} {key[1]} on {task}; the newest fills the cell"
                    notes += [f"{r}: not shown ({why}; --every-run shows each)" for r in cell["run_dir"].iloc[:-1]]
                else:
                    row[column] = row[f"{column} cost (USD)"] = row[f"{column} cost/correct"] = ""
                for source, figures in info.paper.items():
                    row[f"{column} {source}"] = f"{figures[mode]:.1f}" if mode in figures else ""
                if task in REFLEXION_PAPER:  # Reflexion's own published figures, on its row
                    row[f"{column} Reflexion paper"] = REFLEXION_PAPER[task] if mode == "reflexion" else ""
                if task in LATS_PAPER:  # and LATS's, on its
                    row[f"{column} LATS paper"] = LATS_PAPER[task] if mode == "lats" else ""
            rows.append(row)
    shown_modes = set(MODES)
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
    if (alf["mode"] == "reflexion").any():  # Reflexion's ALFWorld figure (no per-type split published)
        rows.append({"run": "Reflexion paper: ReAct + Reflexion, 12 trials", "All": "97.0", "n": 134})
    return pd.DataFrame(rows)


def learning_curves(runs: Any) -> Any:
    """Reflexion's learning curve of every Reflexion run (pandas): the share right after trial t
    with its 95% Wilson interval, who judged (oracle feedback marked), the cost of a trial and of a
    success."""
    import pandas as pd

    rows = []
    for r in runs.itertuples() if len(runs) else ():
        curve = r.reflexion
        if curve is None:
            continue
        for t, score in enumerate(curve.curve, start=1):
            rows.append(
                {
                    "run": f"{r.task} {r.mode}/{r.runner} {r.model} ({r.run_id})",
                    "evaluator": curve.evaluator + (" (oracle feedback)" if curve.oracle_feedback else ""),
                    "trial": t,
                    "right": f"{100 * score.mean:.1f}",
                    "95% CI": f"[{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]",
                    "n": r.n,
                    "cost/trial": _money(curve.cost_per_trial),
                    "cost/success": _money(curve.cost_per_success),
                    "paper": REFLEXION_PAPER.get(r.task, "") if t == len(curve.curve) else "",
                }
            )
    return pd.DataFrame(rows)


def plot_learning_curves(runs: Any, path: Path) -> None:
    """The share right after each trial of every Reflexion run, with its 95% Wilson band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in runs.itertuples() if len(runs) else ():
        curve = r.reflexion
        if curve is None or not curve.curve:
            continue
        trials = range(1, len(curve.curve) + 1)
        said = " (oracle feedback)" if curve.oracle_feedback else ""
        (line,) = ax.plot(
            trials, [100 * c.mean for c in curve.curve], marker="o", ms=3, label=f"{_run_title(r)}{said} (n={r.n})"
        )
        low, high = [100 * c.ci95[0] for c in curve.curve], [100 * c.ci95[1] for c in curve.curve]
        ax.fill_between(trials, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    _save_percent_plot(
        fig,
        ax,
        path,
        ("trial", "right after the trial (%), 95% Wilson band"),
        "Reflexion: learning curve",
        "no Reflexion run in this study",
    )


def _save_percent_plot(fig: Any, ax: Any, path: Path, labels: tuple[str, str], title: str, empty: str) -> None:
    """A 0-100% plot of lines over integer steps finished and written (``empty``: said when it has
    no line): the CoT-SC k-curve's and Reflexion's learning curve's."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 100)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title, fontsize=9)
    if ax.lines:
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
                    (xa, xb),
                    _mean_difference,
                    paired=True,
                    n_resamples=10_000,
                    confidence_level=0.95,
                    random_state=0,
                    method="percentile",
                )
                low, high = float(ci.confidence_interval.low), float(ci.confidence_interval.high)
            table = [
                [int(((xa == 1) & (xb == 1)).sum()), int(((xa == 1) & (xb == 0)).sum())],
                [int(((xa == 0) & (xb == 1)).sum()), int(((xa == 0) & (xb == 0)).sum())],
            ]
            p = float(mcnemar(table, exact=True).pvalue)
            out.append(
                {
                    "task": a.task,
                    "a": _label(a),
                    "b": _label(b),
                    "n": len(ids),
                    "a_mean": float(xa.mean()),
                    "b_mean": float(xb.mean()),
                    "difference": diff,
                    "ci_low": low,
                    "ci_high": high,
                    "a_only": table[0][1],
                    "b_only": table[1][0],
                    "mcnemar_p": p,
                }
            )
    if out:
        from statsmodels.stats.multitest import multipletests

        adjusted = multipletests([r["mcnemar_p"] for r in out], method="holm")[1]
        for r, q in zip(out, adjusted, strict=True):
            r["holm_p"] = float(q)
    return out


def question_diff(a_dir: Path, b_dir: Path) -> list[dict[str, Any]]:
    """The examples two runs over the same ids got differently (right in one, wrong in the other),
    with both answers, the gold and where each trajectory lies (the run folder and the id)."""
    a_records = {r.id: r for r in iter_example_records(Path(a_dir)) if r.epoch == 1}  # first attempts
    out = []
    for b in iter_example_records(Path(b_dir)):
        a = a_records.get(b.id) if b.epoch == 1 else None
        if a is None or a.correct == b.correct:
            continue
        out.append(
            {
                "id": b.id,
                "question": b.question,
                "gold": b.gold,
                "a_prediction": a.prediction,
                "a_correct": a.correct,
                "b_prediction": b.prediction,
                "b_correct": b.correct,
                "a_trajectory": f"{a_dir}/examples.jsonl#{a.id}",
                "b_trajectory": f"{b_dir}/examples.jsonl#{b.id}",
            }
        )
    return out


def _mean_difference(x: Any, y: Any, axis: int = -1) -> Any:
    return x.mean(axis=axis) - y.mean(axis=axis)


def _label(row: Any) -> str:
    return f"{row.mode}/{row.runner} ({row.model}, {row.run_id})"


def _correct_by_id(run_dir: Path) -> dict[str, float]:
    """Each example's first attempt (a run of several epochs is paired on its first; its pass@k
    and pass^k are in its own row)."""
    return {r.id: float(r.correct) for r in iter_example_records(run_dir) if r.epoch == 1}


def k_curve(run_dir: Path, task_name: str, mode: str, max_k: int | None = None) -> list[float]:
    """Accuracy at k = 1..n from the stored CoT-SC samples (module docstring for the combinations)."""
    from react_bench.tasks import load_task

    task = load_task(task_name)
    records = list(iter_example_records(run_dir))
    n = max((len(r.samples) for r in records), default=0)
    ks = range(1, (max_k or n) + 1)
    curve = []
    for k in ks:
        right = 0.0
        for r in records:
            answer = _answer_at_k(r, mode, k)
            right += task.score(answer, r.gold)[task.info.primary_metric]
        curve.append(right / len(records) if records else 0.0)
    return curve


def _answer_at_k(record: ExampleRecord, mode: str, k: int) -> str:
    samples = list(record.samples)
    vote = majority_vote(samples[:k]) if samples else None
    if mode == "react_cot_sc":
        return vote.answer if record.route == "react->cot_sc" and vote is not None else record.prediction
    if mode == "cot_sc_react" and vote is not None and vote.count < k / 2 and record.route == "cot_sc->react":
        return record.prediction
    return vote.answer if vote is not None else record.prediction


def tokens_per_step(run_dir: Path) -> list[dict[str, float]]:
    """Mean input tokens of the turn at each step: uncached, cache writes, cache reads."""
    sums: dict[int, list[float]] = {}
    for record in iter_example_records(run_dir):
        for episode in record.trajectory:
            for step in (s for s in episode.steps() if s.finished):
                u = step.usage
                values = [u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, 1]
                totals = sums.setdefault(step.number, [0.0, 0.0, 0.0, 0.0])
                sums[step.number] = [a + b for a, b in zip(totals, values, strict=True)]
    return [
        {"step": s, "uncached": t[0] / t[3], "written": t[1] / t[3], "read": t[2] / t[3]}
        for s, t in sorted(sums.items())
    ]


def _run_title(row: Any) -> str:
    return f"{row.task} {row.mode}/{row.runner}\n{row.model} ({row.run_id})"


def plot_k_curve(runs: Any, path: Path) -> None:
    """Accuracy at k of every CoT-SC-based run (the paper's Figure 2 shape), with n and a 95%
    Wilson band per run; the axis is 0-100% whatever the values (a flat 100 reads as 100)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from react_bench.metrics import wilson_ci

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for row in runs.itertuples() if len(runs) else ():
        if row.mode in ("cot_sc", "react_cot_sc", "cot_sc_react"):
            curve = k_curve(Path(row.run_dir), row.task, row.mode)
            n = len(read_records(Path(row.run_dir)))
            if curve and n:
                ks = range(1, len(curve) + 1)
                (line,) = ax.plot(
                    ks, [100 * v for v in curve], marker="o", ms=3, label=f"{row.task} {row.mode}/{row.runner} (n={n})"
                )
                bands = [wilson_ci(round(v * n), n) for v in curve]
                ax.fill_between(
                    ks,
                    [100 * b.low for b in bands],
                    [100 * b.high for b in bands],
                    color=line.get_color(),
                    alpha=0.15,
                    linewidth=0,
                )
    _save_percent_plot(
        fig,
        ax,
        path,
        ("CoT-SC samples k", "accuracy (%), 95% Wilson band"),
        "Accuracy at k (CoT-SC->ReAct: ReAct answer where known)",
        "no CoT-SC run in this study",
    )


def plot_tokens(runs: Any, path: Path) -> None:
    """Input tokens per turn along the episodes of every agent run, cached parts stacked: a grid
    of panels (three a row), each titled by its run, integer step ticks, one legend for all."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    agents = [r for r in runs.itertuples() if r.mode in ("react", "act", "react_cot_sc", "cot_sc_react")]
    columns = 2 if len(agents) == 4 else max(1, min(3, len(agents)))
    rows = max(1, math.ceil(len(agents) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.3 * columns, 3.3 * rows + 0.5), squeeze=False)
    parts = (("uncached", "uncached"), ("written", "cache write"), ("read", "cache read"))
    for i, ax in enumerate(axes.flat):
        if i >= len(agents):
            ax.set_visible(not agents)  # a spare panel of the grid: hidden (the empty figure keeps one for its note)
            continue
        row = agents[i]
        steps = tokens_per_step(Path(row.run_dir))
        x = [s["step"] for s in steps]
        bottom = [0.0] * len(steps)
        for key, label in parts:
            values = [s[key] for s in steps]
            ax.bar(x, values, bottom=bottom, width=0.8, label=label)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(_run_title(row), fontsize=8)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if x:
            ax.set_xlim(min(x) - 0.6, max(x) + 0.6)
            ax.set_ylim(0, max(bottom) * 1.08 or 1)
        ax.set_xlabel("step")
        ax.set_ylabel("input tokens per turn")
    if agents:
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
    else:
        axes[0][0].text(0.5, 0.5, "no agent run (react, act) in this study", ha="center", va="center")
        axes[0][0].set_axis_off()
    fig.savefig(path, dpi=110)
    plt.close(fig)


LEGEND = (
    "`*` protocol=custom (the paper's figure beside it is not like for like); `†` example ids differ from the "
    "task's other runs; `‡` examples ended in an error (scored as wrong); `§` the model did not take a "
    "protocol setting (listed below)"
)


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
    columns += ["on_frontier", "per_extra_correct", "published"]
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
                    "run": _label(r) + (" [oracle feedback]" if r.oracle_feedback else ""),
                    "run_id": r.run_id,
                    "n": int(r.n),
                    "measure": measure,
                    "per_example": spent / int(r.n),
                    "mean": float(r.mean),
                    "ci_low": float(r.ci_low),
                    "ci_high": float(r.ci_high),
                    "on_frontier": False,
                    "per_extra_correct": None,
                    "published": published(str(task), str(r.mode)),
                }
            )
        points.sort(key=lambda p: (p["per_example"], -p["mean"]))
        last: dict[str, Any] | None = None
        for p in points:
            if last is None or p["mean"] > last["mean"]:
                p["on_frontier"] = True
                if last is not None:
                    p["per_extra_correct"] = (p["per_example"] - last["per_example"]) / (p["mean"] - last["mean"])
                last = p
        rows += points
    return pd.DataFrame(rows, columns=columns)


def published(task: str, mode: str) -> str:
    """The published figure of ``mode`` on ``task`` beside a run of it: LATS's and Reflexion's
    papers for their modes, the ReAct paper's for the others ("" where none was published)."""
    if mode == "lats":
        return LATS_PAPER.get(task, "")
    if mode == "reflexion":
        return REFLEXION_PAPER.get(task, "")
    said = [f"{source} {figures[mode]:.1f}" for source, figures in task_info(task).paper.items() if mode in figures]
    return "; ".join(said)


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
        "on the task (ReAct's, Reflexion's, LATS's; other models and settings: not like for like).",
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
            lines.append(
                f"| {p.run} | {p.n} | {cost} | {100 * p.mean:.1f} | "
                f"[{100 * p.ci_low:.1f}, {100 * p.ci_high:.1f}] | {'yes' if p.on_frontier else ''} | {extra} | "
                f"{p.published} |"
            )
    return "\n".join(lines) + "\n"


def plot_frontier(points: Any, path: Path) -> None:
    """frontier.png: a panel per task, each run a point with its interval, the frontier a step line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted(set(points["task"])) if len(points) else []
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(6.5 * max(1, len(tasks)), 4.5), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=False):
        group = points[points["task"] == task]
        measure = group["measure"].iloc[0]
        for p in group.itertuples():
            low, high = max(0.0, 100 * (p.mean - p.ci_low)), max(0.0, 100 * (p.ci_high - p.mean))  # rounding
            ax.errorbar(p.per_example, 100 * p.mean, yerr=[[low], [high]], fmt="o" if p.on_frontier else "x", capsize=3)
            short = p.run.split(" (")[0]  # mode/runner: frontier.md names the model and the run
            ax.annotate(short, (p.per_example, 100 * p.mean), textcoords="offset points", xytext=(4, 4), fontsize=7)
        best = group[group["on_frontier"]]
        ax.step(best["per_example"], 100 * best["mean"], where="post", color="black", linewidth=1, label="frontier")
        ax.set_title(task)
        ax.margins(x=0.2)
        ax.set_xlabel("dollars per example" if measure == "USD" else "tokens per example (in + out)")
        ax.set_ylabel("score (%), 95% interval")
        ax.set_ylim(0, 100)
        ax.legend(loc="lower right", fontsize=8)
    if not tasks:
        axes[0][0].text(0.5, 0.5, "no finished run in this study", ha="center", va="center")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_study(runs: Any, out: Path, *, every_run: bool = False) -> dict[str, Any]:
    """Every file of a study folder (``scripts/compare.py`` and a sweep's combined table both write
    it): table1.md/.csv with its notes, paired.md, diff.md, failures.md, table3.md and context.md
    where they apply, both plots, runs.csv, report.html. Returns what was written and the table."""
    out.mkdir(parents=True, exist_ok=True)
    table, notes = table1(runs, every_run=every_run)
    table.to_csv(out / "table1.csv", index=False)
    markdown = table.to_markdown(index=False)
    lines = ["# Table 1 (ours beside the paper's)", "", markdown, "", LEGEND]
    custom = custom_notes(runs)
    if custom:
        lines += ["", "Runs to read with care:", *[f"- {n}" for n in custom]]
    if notes:
        lines += ["", "Runs not shown, and why:", *[f"- {n}" for n in notes]]
    (out / "table1.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    pairs = paired(runs)
    (out / "paired.md").write_text(paired_markdown(pairs), encoding="utf-8")
    (out / "diff.md").write_text(diff_markdown(runs), encoding="utf-8")
    (out / "failures.md").write_text(failures_markdown(runs), encoding="utf-8")
    written = ["table1.md", "table1.csv", "paired.md", "diff.md", "failures.md"]
    orderings = table3(runs)
    if len(orderings):
        (out / "table3.md").write_text(
            "# ALFWorld per task type (the paper's Table 3 below)\n\n" + orderings.to_markdown(index=False) + "\n",
            encoding="utf-8",
        )
        written.append("table3.md")
    curves = learning_curves(runs)
    if len(curves):
        (out / "learning_curve.md").write_text(
            "# Reflexion: right after each trial\n\n" + curves.to_markdown(index=False, disable_numparse=True) + "\n",
            encoding="utf-8",
        )
        plot_learning_curves(runs, out / "learning_curve.png")
        written += ["learning_curve.md", "learning_curve.png"]
    remedies = context_comparison(runs)
    if len(remedies):
        (out / "context.md").write_text(
            "# Context remedies side by side\n\n" + remedies.to_markdown(index=False) + "\n", encoding="utf-8"
        )
        written.append("context.md")
    plot_k_curve(runs, out / "cot_sc_k_curve.png")
    plot_tokens(runs, out / "tokens_per_step.png")
    points = frontier(runs)
    (out / "frontier.md").write_text(frontier_markdown(points), encoding="utf-8")
    plot_frontier(points, out / "frontier.png")
    runs.drop(columns=["ids"]).to_csv(out / "runs.csv", index=False)
    written += ["cot_sc_k_curve.png", "tokens_per_step.png", "frontier.md", "frontier.png", "runs.csv"]
    from react_bench.report import write_report

    write_report(runs, out, table_markdown="\n".join(lines), pairs=pairs, frontier_markdown=frontier_markdown(points))
    written.append("report.html")
    return {
        "table": table,
        "markdown": markdown,
        "notes": notes,
        "custom": custom,
        "written": written,
        "orderings": orderings,
    }


def paired_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Paired comparisons (same task, same example ids)",
        "",
        f"Holm's adjustment is over all {len(rows)} pairs of this study.",
        "",
        "| task | A | B | n | A | B | A - B | 95% CI | A only | B only | McNemar p | Holm p |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['a']} | {r['b']} | {r['n']} | {100 * r['a_mean']:.1f} | {100 * r['b_mean']:.1f} | "
            f"{100 * r['difference']:+.1f} | [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] | "
            f"{r['a_only']} | {r['b_only']} | {r['mcnemar_p']:.3g} | {r['holm_p']:.3g} |"
        )
    if not rows:
        lines.append("(no two runs share a task and example ids)")
    return "\n".join(lines) + "\n"


def comparable_pairs(runs: Any) -> list[tuple[Any, Any]]:
    """Every two runs of one task over exactly the same example ids (older first)."""
    rows = list(runs.sort_values("started").itertuples()) if len(runs) else []
    return [
        (a, b)
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
        if a.task == b.task and set(a.ids) == set(b.ids) and a.n and a.n == b.n
    ]


def diff_markdown(runs: Any) -> str:
    lines = ["# Per-question differences (runs over the same ids)", ""]
    pairs = comparable_pairs(runs)
    for a, b in pairs:
        changed = question_diff(Path(a.run_dir), Path(b.run_dir))
        lines += [
            f"## {a.task}: A = {_label(a)}, B = {_label(b)}",
            "",
            f"{len(changed)} of {a.n} questions changed; trajectories: A {a.run_dir}, B {b.run_dir} "
            "(examples.jsonl, by id).",
            "",
        ]
        if changed:
            lines += ["| id | question | gold | A answer | B answer |", "| --- | --- | --- | --- | --- |"]
            for c in changed:
                mark = {True: "right", False: "wrong"}
                lines.append(
                    f"| {c['id']} | {_md(c['question'])} | {_md(c['gold'])} | "
                    f"{_md(c['a_prediction'])} ({mark[c['a_correct']]}) | "
                    f"{_md(c['b_prediction'])} ({mark[c['b_correct']]}) |"
                )
            lines.append("")
    if not pairs:
        lines.append("(no two runs share a task and example ids)")
    return "\n".join(lines) + "\n"


def failures_markdown(runs: Any) -> str:
    """The failure labels (results.FAILURE_LABELS, the paper's Table 2 done automatically) per run."""
    from react_bench.results import FAILURE_LABELS

    lines = [
        "# Failure labels per run (the first that applies; see docs/guide.md)",
        "",
        "| run | n | " + " | ".join(FAILURE_LABELS) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in FAILURE_LABELS) + " |",
    ]
    for r in runs.sort_values(["task", "mode", "runner", "started"]).itertuples() if len(runs) else ():
        counts = r.failure_labels or {}
        lines.append(
            f"| {r.task} {_label(r)} | {r.n} | " + " | ".join(str(counts.get(k, 0)) for k in FAILURE_LABELS) + " |"
        )
    return "\n".join(lines) + "\n"


def _md(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]
