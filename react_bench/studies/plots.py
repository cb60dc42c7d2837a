"""The study's figures (matplotlib, Agg): accuracy at k, tokens per step, Reflexion's learning
curves, the cost-accuracy frontier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from react_bench.methods.core import ModeSpec
from react_bench.methods.registry import find_method
from react_bench.studies.runs import method_curves, run_title
from react_bench.studies.scan import scan
from react_bench.studies.statistics import k_curve, tokens_per_step


def plot_learning_curves(runs: Any, path: Path) -> None:
    """The share right after each round of every run whose method has a learning curve
    (``Method.curve``: Reflexion's trials), with its 95% Wilson band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r, curve in method_curves(runs):
        if not curve.points:
            continue
        trials = range(1, len(curve.points) + 1)
        said = f" ({curve.said})" if curve.said else ""
        (line,) = ax.plot(
            trials, [100 * c.mean for c in curve.points], marker="o", ms=3, label=f"{run_title(r)}{said} (n={r.n})"
        )
        low, high = [100 * c.ci95[0] for c in curve.points], [100 * c.ci95[1] for c in curve.points]
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


def _spec(mode: str) -> ModeSpec | None:
    """A mode of parts' spec (None for a method that solves its own way, or one not installed)."""
    method = find_method(mode)
    return method.spec if method is not None and method.of_parts else None


def plot_k_curve(runs: Any, path: Path) -> None:
    """Accuracy at k of every CoT-SC-based run (the paper's Figure 2 shape), with n and a 95%
    Wilson band per run; the axis is 0-100% whatever the values (a flat 100 reads as 100)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from react_bench.metrics import wilson_ci

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for row in runs.itertuples() if len(runs) else ():
        if getattr(_spec(row.mode), "samples", False):  # a mode with CoT-SC samples
            curve = k_curve(Path(row.run_dir), row.task, row.mode)
            n = len(scan(row.run_dir).samples)
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

    agents = [r for r in runs.itertuples() if getattr(_spec(r.mode), "needs_env", False)]
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
        ax.set_title(run_title(row), fontsize=8)
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
