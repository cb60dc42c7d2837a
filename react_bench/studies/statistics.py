"""Statistics over runs of one task on the same example ids: paired differences with their
bootstrap interval, McNemar's p (Holm-adjusted) and the smallest difference the pair could detect
(below it a difference is "not distinguishable", never ranked), the per-question diff, accuracy at k from the
stored CoT-SC samples, tokens per step."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from react_bench.methods.core import majority_vote
from react_bench.methods.registry import find_method
from react_bench.metrics import detectable_paired
from react_bench.record import ExampleRecord
from react_bench.results import iter_example_records
from react_bench.studies.runs import run_label


def paired_test(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Two runs' per-example outcomes (0 or 1, the same examples in the same order): the means, the
    difference ``a - b`` with its 95% paired bootstrap interval, the discordant counts, McNemar's
    exact p, and the smallest difference the pair detects at 80% power (below it: not
    distinguishable)."""
    import numpy as np
    from scipy.stats import bootstrap
    from statsmodels.stats.contingency_tables import mcnemar

    xa, xb = np.array(a, float), np.array(b, float)
    if not len(xa):
        raise ValueError("paired_test: no examples")
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
    detectable = detectable_paired(len(xa), table[0][1] + table[1][0])
    return {
        "a_mean": float(xa.mean()),
        "b_mean": float(xb.mean()),
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "a_only": table[0][1],
        "b_only": table[1][0],
        "mcnemar_p": float(mcnemar(table, exact=True).pvalue),
        # the smallest difference these n and this discordance detect at 80% power; a difference
        # below it is not ranked ("not distinguishable")
        "detectable": detectable,
        "distinguishable": detectable is not None and abs(diff) >= detectable,
    }


def paired(runs: Any) -> list[dict[str, Any]]:
    """Every two runs of one task over exactly the same example ids: difference, CI, McNemar p, and
    the smallest difference the pair could detect at 80% power (``metrics.detectable_paired``)."""
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
            test = paired_test([ra[k] for k in ids], [rb[k] for k in ids])
            out.append(
                {
                    "task": a.task,
                    "a": run_label(a),
                    "b": run_label(b),
                    "n": len(ids),
                    **test,
                }
            )
    if out:
        from statsmodels.stats.multitest import multipletests

        adjusted = multipletests([r["mcnemar_p"] for r in out], method="holm")[1]
        for r, q in zip(out, adjusted, strict=True):
            r["holm_p"] = float(q)
    return out


def detectable_text(row: dict[str, Any]) -> str:
    return "" if row.get("detectable") is None else f"{100 * row['detectable']:.1f}"


def verdict(row: dict[str, Any]) -> str:
    """A pair's difference as a reader should take it: ranked only when the pair could detect it."""
    if not row.get("distinguishable"):
        return "not distinguishable"
    return ("A higher" if row["difference"] > 0 else "B higher") + (" (p < 0.05)" if row["holm_p"] < 0.05 else "")


def comparable_pairs(runs: Any) -> list[tuple[Any, Any]]:
    """Every two runs of one task over exactly the same example ids (older first)."""
    rows = list(runs.sort_values("started").itertuples()) if len(runs) else []
    return [
        (a, b)
        for i, a in enumerate(rows)
        for b in rows[i + 1 :]
        if a.task == b.task and set(a.ids) == set(b.ids) and a.n and a.n == b.n
    ]


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
    method = find_method(mode)
    spec = method.spec if method is not None else None
    if spec is not None and spec.backoff == "cot_sc":  # the samples are the backoff's: where it ran
        return vote.answer if record.route == f"{spec.first}->cot_sc" and vote is not None else record.prediction
    route = f"cot_sc->{spec.backoff}" if spec is not None and spec.first == "cot_sc" else None
    if route is not None and vote is not None and vote.count < k / 2 and record.route == route:
        return record.prediction  # the backoff answered, where k samples would have handed it over too
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
