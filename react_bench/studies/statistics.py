"""Statistics over runs of one task on the same example ids: paired differences with their
bootstrap interval, McNemar's p (Holm-adjusted) and the smallest difference the pair could detect
(below it a difference is "not distinguishable", never ranked), the per-question diff, accuracy at k from the
stored CoT-SC samples, tokens per step."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from react_bench.methods.core import majority_vote
from react_bench.methods.registry import find_method
from react_bench.metrics import detectable_paired
from react_bench.record import ExampleRecord
from react_bench.studies.runs import run_label
from react_bench.studies.scan import scan


def paired_test(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Two runs' per-example outcomes (0 or 1, the same examples in the same order): the means, the
    difference ``a - b`` with its 95% paired bootstrap interval, the discordant counts, McNemar's
    exact p, and the smallest difference the pair detects at 80% power (below it: not
    distinguishable)."""
    import numpy as np
    from statsmodels.stats.contingency_tables import mcnemar

    xa, xb = np.array(a, float), np.array(b, float)
    if not len(xa):
        raise ValueError("paired_test: no examples")
    diff = float(xa.mean() - xb.mean())
    low, high = paired_bootstrap(xa, xb)
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


def judged_first(run_dir: str | Path) -> dict[str, bool] | None:
    """id -> judged CORRECT (each example's first attempt), from the run's verdict file; None where
    the run was not judged, or not every example was (no partial figure is compared)."""
    from react_bench.grading.verdicts import JUDGE_FILE, RULES_FILE, verdicts

    folder = Path(run_dir)
    name = next((f for f in (JUDGE_FILE, RULES_FILE) if (folder / f).is_file()), None)
    if name is None:
        return None
    lines = verdicts(folder, name)
    first = scan(folder).first
    if any((k, 1) not in lines for k in first):
        return None
    return {k: lines[(k, 1)].get("verdict") == "CORRECT" for k in first}


def paired(runs: Any, *, judged: bool = False) -> list[dict[str, Any]]:
    """Every two runs of one task over exactly the same example ids: difference, CI, McNemar p, and
    the smallest difference the pair could detect at 80% power (``metrics.detectable_paired``).
    ``judged``: over the verdicts of judge= (``judged_first``) instead of the task's metric, for the
    pairs whose runs were both judged the same way."""
    out = []
    rows = list(runs.itertuples())
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if a.task != b.task or set(a.ids) != set(b.ids) or not a.n or a.n != b.n:
                continue
            if judged:
                if not a.judged_metric or a.judged_metric != b.judged_metric:
                    continue
                ja, jb = judged_first(a.run_dir), judged_first(b.run_dir)
                if ja is None or jb is None:
                    continue
                ra, rb = ja, jb
            else:
                ra, rb = scan(a.run_dir).first, scan(b.run_dir).first  # each example's first attempt
            ids = sorted(set(ra) & set(rb))
            if not ids:
                continue
            test = paired_test([float(ra[k]) for k in ids], [float(rb[k]) for k in ids])
            out.append(
                {
                    "task": a.task,
                    "a": run_label(a),
                    "b": run_label(b),
                    "n": len(ids),
                    "metric": a.judged_metric if judged else a.metric,
                    **test,
                }
            )
    if out:
        from statsmodels.stats.multitest import multipletests

        adjusted = multipletests([r["mcnemar_p"] for r in out], method="holm")[1]
        for r, q in zip(out, adjusted, strict=True):
            r["holm_p"] = float(q)
    return out


def flips(pairs: list[dict[str, Any]], judged: list[dict[str, Any]]) -> list[str]:
    """The pairs whose order under exact match (the task's metric) and judged differ, a line each."""
    by_pair = {(r["task"], r["a"], r["b"]): r for r in judged}
    out = []
    for r in pairs:
        j = by_pair.get((r["task"], r["a"], r["b"]))
        if j is None or r["difference"] * j["difference"] >= 0:
            continue
        out.append(
            f"{r['task']}: {r['a']} vs {r['b']} rank one way under {r['metric']} (A - B = "
            f"{100 * r['difference']:+.1f} points) and the other {j['metric']} ({100 * j['difference']:+.1f} points)"
        )
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


def question_diff(a_dir: Path, b_dir: Path) -> Iterator[dict[str, Any]]:
    """The examples two runs over the same ids got differently (right in one, wrong in the other),
    first attempts, in B's order, with both answers, the gold and where each trajectory lies (the
    run folder and the id), one at a time: only the two lines of each changed example are read
    (where ``RunScan.offsets`` says they start), and none is kept, so a diff of any size runs in
    the memory of one example."""
    sa, sb = scan(a_dir), scan(b_dir)
    with (a_dir / "examples.jsonl").open("rb") as fa, (b_dir / "examples.jsonl").open("rb") as fb:
        for example_id, right in sb.first.items():
            if example_id not in sa.first or sa.first[example_id] == right:
                continue
            a, b = _line_at(fa, sa.offsets[example_id]), _line_at(fb, sb.offsets[example_id])
            yield {
                "id": example_id,
                "question": b.question,
                "gold": b.gold,
                "a_prediction": a.prediction,
                "a_correct": a.correct,
                "b_prediction": b.prediction,
                "b_correct": b.correct,
                "a_trajectory": f"{a_dir}/examples.jsonl#{example_id}",
                "b_trajectory": f"{b_dir}/examples.jsonl#{example_id}",
            }


def _line_at(handle: BinaryIO, offset: int) -> ExampleRecord:
    """The record whose line starts at ``offset`` (read as any record is: old ones upgraded)."""
    handle.seek(offset)
    return ExampleRecord.from_dict(json.loads(handle.readline()))


def paired_bootstrap(xa: Any, xb: Any, resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile interval of the paired bootstrap of ``mean(xa) - mean(xb)`` for 0/1
    outcomes, in memory of the order of ``resamples`` whatever the number of examples.

    A resample of n pairs drawn with replacement is fixed, for the mean difference, by how many of
    its pairs are (1, 0), (0, 1) and alike: a multinomial draw of n over the three shares. Drawing
    those counts is the same bootstrap distribution as drawing n indices per resample (scipy's
    ``bootstrap(paired=True)``, which holds ``resamples x n`` numbers: 8 GB at n = 10^5)."""
    import numpy as np

    n = len(xa)
    a_only, b_only = int(((xa == 1) & (xb == 0)).sum()), int(((xa == 0) & (xb == 1)).sum())
    if a_only == b_only == 0:
        return 0.0, 0.0
    shares = [a_only / n, b_only / n, (n - a_only - b_only) / n]
    counts = np.random.default_rng(seed).multinomial(n, shares, size=resamples)
    differences = (counts[:, 0] - counts[:, 1]) / n
    low, high = np.percentile(differences, [2.5, 97.5])
    return float(low), float(high)


def k_curve(run_dir: Path, task_name: str, mode: str, max_k: int | None = None) -> list[float]:
    """Accuracy at k = 1..n from the stored CoT-SC samples (module docstring for the combinations)."""
    from react_bench.tasks import load_task

    task = load_task(task_name)
    records = scan(run_dir).samples
    n = max((len(samples) for samples, *_ in records), default=0)
    curve = []
    for k in range(1, (max_k or n) + 1):
        right = 0.0
        for samples, gold, route, prediction in records:
            answer = _answer_at_k(samples, route, prediction, mode, k)
            right += task.score(answer, gold)[task.info.primary_metric]
        curve.append(right / len(records) if records else 0.0)
    return curve


def _answer_at_k(samples: Sequence[str], route: str, prediction: str, mode: str, k: int) -> str:
    vote = majority_vote(list(samples[:k])) if samples else None
    method = find_method(mode)
    spec = method.spec if method is not None else None
    if spec is not None and spec.backoff == "cot_sc":  # the samples are the backoff's: where it ran
        return vote.answer if route == f"{spec.first}->cot_sc" and vote is not None else prediction
    handed = f"cot_sc->{spec.backoff}" if spec is not None and spec.first == "cot_sc" else None
    if handed is not None and vote is not None and vote.count < k / 2 and route == handed:
        return prediction  # the backoff answered, where k samples would have handed it over too
    return vote.answer if vote is not None else prediction


def tokens_per_step(run_dir: Path) -> list[dict[str, float]]:
    """Mean input tokens of the turn at each step: uncached, cache writes, cache reads."""
    return [
        {"step": s, "uncached": t[0] / t[3], "written": t[1] / t[3], "read": t[2] / t[3]}
        for s, t in sorted(scan(run_dir).tokens.items())
    ]
