"""Reading runs back: per-example records, metrics with confidence intervals, tables.

Intervals: a 0/1 score's mean (EM, label accuracy, success) gets Wilson's score interval,
which stays honest at small n (3 of 3 right: [43.9, 100]); a graded score (F1, WebShop's
reward) the percentile bootstrap (``metrics.score_ci``).

``load_examples(run_dir)`` gives the examples as a pandas DataFrame (one row per example,
the trajectory kept as a column of dicts) for small runs; for a run of any size a notebook lists
the examples without their trajectories (``studies.export.examples_table``) and reads one when it
shows it (``read_example``); ``summarize`` computes the run's
metrics from ``examples.jsonl`` alone, so a resumed or crashed run is scored the same way
as one that ran in one go.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from react_bench.methods.core import Method
from react_bench.methods.registry import find_method
from react_bench.metrics import groundable, grounded, pass_at_k, pass_hat_k, score_ci
from react_bench.record import Cost, ExampleRecord, GroupScore, RunHeader, RunMetrics, Score, StepAction
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


def read_example(run_dir: str | Path, example_id: str, epoch: int = 1) -> ExampleRecord | None:
    """One example's record (its attempt ``epoch``), read line by line until it is found: what a
    notebook shows of a run too large to hold (``studies.export.examples_table`` is its list)."""
    for record in iter_example_records(Path(run_dir)):
        if record.id == example_id and record.epoch == epoch:
            return record
    return None


def iter_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The same records as dicts in the current layout (pandas, and readers by key)."""
    for record in iter_example_records(run_dir):
        yield record.to_dict()


class Summary:
    """A run's metrics from its records, taken one at a time (``add``), holding per example only
    what the figures need: its scores as numbers, its id and outcome where attempts are paired
    (epochs > 1), and the record without its trajectory only when the run's method summarises
    records (Reflexion, LATS, best-of-k). ``summarize`` feeds it ``examples.jsonl``; a study's scan
    (``studies.scan``) feeds it while it reads the same lines for everything else, so a run of any
    size is summarised in one pass and bounded memory. ``metrics()`` is metrics.json."""

    def __init__(self, run_dir: Path, info: TaskInfo) -> None:
        self.run_dir, self.info = Path(run_dir), info
        self.run = RunHeader.read(run_dir)
        method = find_method(self.run.mode)
        # the records (trajectory-less) only for a method that summarises them
        self._method = method if method is not None and type(method).summarize is not Method.summarize else None
        self.kept: list[ExampleRecord] = []
        self.n = 0
        self.scores: dict[str, list[float]] = {}
        self.errored: list[str] = []
        self.labels: Counter[str] = Counter()
        self.grounded_n = self.grounded_hits = self.grounded_right = 0
        self.acted: Counter[str] = Counter()
        self.usage = Usage()
        self.sums: Counter[str] = Counter()  # integer figures summed over records
        self.reasons: Counter[str] = Counter()
        self.routes: Counter[str] = Counter()
        self.stop_reasons: Counter[str] = Counter()
        self.repairs: Counter[str] = Counter()
        self.cache = {"hits": 0, "misses": 0}
        self.out_of_label_set: int | None = None
        self.timed_n, self.timed_s, self.timed_calls = 0, 0.0, 0
        self.spent: float | None = 0.0  # None once any record's price is unknown
        self.saved: float | None = 0.0
        self.groups: dict[str, dict[str, list[float]]] = {}
        self.attempts: dict[str, list[bool]] = {}  # id -> outcome per attempt (epochs > 1)
        # judge= (grading.judge): the verdict file beside the run, and each record's key to join on
        from react_bench.grading.verdicts import JUDGE_FILE, RULES_FILE

        self.judge_file = next((f for f in (JUDGE_FILE, RULES_FILE) if (self.run_dir / f).is_file()), None)
        self.keys: list[dict[str, Any]] = []

    def add(self, record: ExampleRecord, executed: Sequence[StepAction] | None = None) -> str:
        """Take one record in; returns its failure label (``executed``: its actions, when the
        caller has them already)."""
        info = self.info
        executed = record.executed() if executed is None else executed
        label = failure_label(record, executed)
        if self.n == 0:  # which metrics a run has is read from its first record, as ever
            self.scores = {m: [] for m in info.metrics if m in record.scores}
            self.out_of_label_set = 0 if "in_label_set" in record.scores else None
        self.n += 1
        for name, values in self.scores.items():
            values.append(float(record.scores[name]))
        if record.reason == "error":
            self.errored.append(record.id)
        self.labels[label] += 1
        # Grounded: over the examples whose answer a page could say (not yes / no; None for tasks
        # whose answers are labels or rewards), the same denominator for every runner and mode.
        if info.grounded_answers and groundable(record.gold):
            hit = grounded(record.prediction, [a.observation or "" for a in executed])
            self.grounded_n += 1
            self.grounded_hits += hit
            self.grounded_right += hit and record.correct
        # steps: model turns; actions: environment actions executed (the answer action included). The
        # text runner executes one action a turn; the tool-use runner may execute several at once.
        self.acted.update(action_counts(record, executed))
        self.usage = self.usage + record.usage
        for name in ("calls", "retries", "replaced_chars", "cache_write_failures", "bad_calls", "steps"):
            self.sums[name] += getattr(record, name)
        self.sums["refused"] += record.reason == "refused"
        self.reasons[record.reason] += 1
        self.routes[record.route] += 1
        self.stop_reasons.update(record.stop_reasons)
        self.repairs.update(record.repairs)
        for k in self.cache:
            self.cache[k] += int(record.request_cache.get(k) or 0)
        if self.out_of_label_set is not None and not record.scores.get("in_label_set", True):
            self.out_of_label_set += 1
        if record.wall_s is not None:  # None: runs made before it was kept
            self.timed_n, self.timed_s, self.timed_calls = (
                self.timed_n + 1,
                self.timed_s + float(record.wall_s),
                self.timed_calls + record.calls,
            )
        self.spent = None if self.spent is None or record.cost_usd is None else self.spent + record.cost_usd
        self.saved = None if self.saved is None or record.saved_usd is None else self.saved + record.saved_usd
        self.sums["correct"] += record.correct
        metric = info.primary_metric
        for key in info.groups:
            value = record.metadata.get(key)
            if value is not None and metric in self.scores:
                self.groups.setdefault(key, {}).setdefault(str(value), []).append(float(record.scores[metric]))
        if self.run.epochs > 1:
            self.attempts.setdefault(record.id, []).append(record.correct)
        if self._method is not None:
            self.kept.append(replace(record, trajectory=()))
        if self.judge_file is not None:
            self.keys.append({"id": record.id, "epoch": record.epoch})
        return label

    def _judged(self) -> tuple[dict[str, Score], tuple[str, ...], dict[str, Any] | None]:
        """The verdicts' score (``judged``, or ``rules`` for the heuristic), once every example has a
        verdict line, and the ``judge`` block; nothing where the run was not judged."""
        if self.judge_file is None:
            return {}, (), None
        from react_bench.grading.verdicts import RULES_FILE, summary, verdicts

        lines = verdicts(self.run_dir, self.judge_file)
        block = summary(self.keys, lines)
        name = "rules" if self.judge_file == RULES_FILE else "judged"
        block["metric"] = name
        if block["unjudged"] or not self.keys:
            return {}, (), block
        hits = [float((lines[(k["id"], k["epoch"])].get("verdict")) == "CORRECT") for k in self.keys]
        ci = score_ci(hits, seed=0)
        return {name: Score(ci.mean, (ci.low, ci.high), ci.method)}, (name,), block

    def metrics(self) -> RunMetrics:
        run, info, n = self.run, self.info, self.n
        scores = {}
        for name, values in self.scores.items():
            ci = score_ci(values, seed=0)  # Wilson's for 0/1 scores, else the bootstrap
            scores[name] = Score(ci.mean, (ci.low, ci.high), ci.method)
        actions = self.acted["actions"]
        grounded_n = self.grounded_n
        summary = self._method.summarize(self.kept, run.config.get("solve") or {}) if self._method is not None else None
        judged, judged_names, judge_block = self._judged()
        scores.update(judged)
        return RunMetrics(
            run_id=run.run_id,
            task=info.name,
            model=run.model_name,
            mode=run.mode,
            runner=run.runner,
            n=n,
            n_planned=run.n_examples * run.epochs,
            primary_metric=info.primary_metric,
            metrics=(*info.metrics, *judged_names),
            scores=scores,
            judge=judge_block,
            fingerprint=run.fingerprint,
            protocol=run.protocol,
            endpoint=run.endpoint,
            sdk=run.sdk,
            not_applied=tuple(run.not_applied),
            usage=self.usage,
            calls=self.sums["calls"],
            left_out=run.left_out,  # unreadable data skipped on request
            reasons=dict(self.reasons),
            routes=dict(self.routes),
            # An error is an example a fault kept from answering (after the retries): scored as wrong in
            # every mean above, and counted apart from wrong answers, so it can be rerun.
            errors=len(self.errored),
            errored_ids=tuple(self.errored),
            retries=self.sums["retries"],
            request_cache=dict(self.cache),
            replaced_chars=self.sums["replaced_chars"],
            stop_reasons=dict(self.stop_reasons),
            refused=self.sums["refused"],
            cache_write_failures=self.sums["cache_write_failures"],
            bad_calls=self.sums["bad_calls"],
            repairs=dict(self.repairs),
            # FEVER answers outside SUPPORTS / REFUTES / NOT ENOUGH INFO (scored wrong, counted here)
            out_of_label_set=self.out_of_label_set,
            cost=_cost(n, self.sums["correct"], self.spent, self.saved, _superseded_spent(self.run_dir)),
            failure_labels={label: self.labels[label] for label in FAILURE_LABELS if self.labels[label]},
            grounded_n=grounded_n,
            grounded=self.grounded_hits / grounded_n if grounded_n else None,
            grounded_accuracy=self.grounded_right / grounded_n if grounded_n else None,
            mean_steps=self.sums["steps"] / n if n else 0.0,
            wall_per_example_s=self.timed_s / self.timed_n if self.timed_n else None,
            wall_per_call_s=self.timed_s / self.timed_calls if self.timed_n and self.timed_calls else None,
            # of every action executed: the share the environment refused (WebShop's "Invalid action!",
            # ALFWorld's "Nothing happens.", Wikipedia's "Invalid action: ..."), and the thoughts written as actions
            mean_actions=actions / n if n else 0.0,
            actions=actions,
            invalid_rate=self.acted["invalid"] / actions if actions else 0.0,
            think_share=self.acted["think"] / actions if actions else 0.0,
            by_group=_breakdown(self.groups),
            epochs=run.epochs,
            pass_at=_repeated(self.attempts, run.epochs, pass_at_k),
            pass_hat=_repeated(self.attempts, run.epochs, pass_hat_k),
            flips=_flips(self.attempts) if run.epochs > 1 else None,
            method=_summary_json(summary),
        )


def load_examples(run_dir: str | Path):
    import pandas as pd

    return pd.DataFrame(read_records(Path(run_dir)))


def summarize(run_dir: Path, info: TaskInfo) -> RunMetrics:
    """The run's metrics from ``examples.jsonl`` alone (``RunMetrics.to_dict`` is metrics.json),
    read one record at a time (``Summary``)."""
    summary = Summary(run_dir, info)
    for record in iter_example_records(run_dir):
        summary.add(record)
    return summary.metrics()


def flip_share(records: Sequence[ExampleRecord]) -> float | None:
    """The share of examples with several attempts whose outcome differs between them."""
    attempts: dict[str, list[bool]] = {}
    for r in records:
        attempts.setdefault(r.id, []).append(r.correct)
    return _flips(attempts)


def _flips(attempts: Mapping[str, Sequence[bool]]) -> float | None:
    several = [a for a in attempts.values() if len(a) > 1]
    return sum(len(set(a)) > 1 for a in several) / len(several) if several else None


def _repeated(
    attempts: Mapping[str, Sequence[bool]], epochs: int, estimate: Callable[[int, int, int], float]
) -> dict[int, Score]:
    """pass@k or pass^k (``estimate``) for k = 1 .. the fewest attempts any example has (``epochs``
    when the run is whole), each the mean over examples of the per-example estimate, with its interval."""
    if epochs < 2 or not attempts:
        return {}
    out: dict[int, Score] = {}
    for k in range(1, min(epochs, *(len(a) for a in attempts.values())) + 1):
        ci = score_ci([estimate(len(a), sum(a), k) for a in attempts.values()], seed=0)
        out[k] = Score(ci.mean, (ci.low, ci.high), ci.method)
    return out


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


def action_counts(
    record: ExampleRecord | Mapping[str, Any], executed: Sequence[StepAction] | None = None
) -> dict[str, int]:
    """Actions executed in a record's episodes, those that ended in an error, and thoughts."""
    executed = ExampleRecord.of(record).executed() if executed is None else executed
    return {
        "actions": len(executed),
        "invalid": sum(a.is_error for a in executed),
        "think": sum(a.name == "think" for a in executed),
    }


def observations(record: ExampleRecord | Mapping[str, Any]) -> list[str]:
    return [observation for _, _, observation in _executed(ExampleRecord.of(record))]


def _executed(record: ExampleRecord, executed: Sequence[StepAction] | None = None) -> list[tuple[str, str, str]]:
    """(action name, the action as called, observation) of every executed call, in order."""
    out = []
    for action in record.executed() if executed is None else executed:
        if action.text is not None:  # the text runner: the action as executed, "search[Ed Wood]"
            name, called = action.name, action.text.strip()
        elif action.name == "text_action":  # runs recorded before the environment seam
            called = str(action.arguments.get("action", ""))
            name = called.split("[", 1)[0].strip().lower()
        else:
            name, called = action.name, json.dumps([action.name, dict(action.arguments)], sort_keys=True)
        out.append((name, called, action.observation or ""))
    return out


def failure_label(record: ExampleRecord | Mapping[str, Any], actions: Sequence[StepAction] | None = None) -> str:
    """The example's label of ``FAILURE_LABELS`` (a record, or a line's dict as a notebook has it;
    ``actions``: its executed actions, when the caller has them already)."""
    r = ExampleRecord.of(record)
    if r.reason == "error":
        return "error"
    if r.correct:
        return "correct"
    executed = _executed(r, actions)
    called = [action for _, action, _ in executed]
    if any(called.count(a) >= 3 for a in set(called)):
        return "repeated_action"
    searches = [observation for name, _, observation in executed if name == "search"]
    if searches and all(o.startswith("Could not find") for o in searches):
        return "search_failures_only"
    if r.bad_calls > 0:
        return "parse_failures"
    if r.reason == "step_limit":
        return "step_limit"
    return "wrong_answer"


def _cost(n: int, correct: int, spent: float | None, saved: float | None, superseded: float | None = 0.0) -> Cost:
    """What the run cost, in USD, from its ``n`` records' sums (``spent``/``saved``: None where any
    record's price is unknown); None (unknown) where any example's price is unknown, never a silent 0.

    - ``spent``: the calls that reached the API (this run's, the errored attempts that
      ``retry_errors`` replaced included): the money, equal to pricing the API's own log;
    - ``saved``: the calls served from the request cache, priced as they would have been;
    - ``total``, ``per_example``, ``per_correct``: the price of the answers' calls, spent or
      saved alike, so a cached rerun costs what the first run cost and runs compare fairly.
    """
    if not n:
        return Cost(spent=superseded or 0.0, saved=0.0)
    spent_all = superseded + spent if superseded is not None and spent is not None else None
    if spent is None or saved is None:
        return Cost(spent=spent_all, saved=saved)
    total = float(spent + saved)
    return Cost(spent_all, saved, total, total / n, total / correct if correct else None)


def _superseded_spent(run_dir: Path) -> float | None:
    from react_bench.rundir import SUPERSEDED

    path = run_dir / SUPERSEDED
    if not path.exists():
        return 0.0
    costs = [json.loads(line).get("cost_usd") for line in path.read_text(encoding="utf-8").splitlines() if line]
    return None if any(c is None for c in costs) else float(sum(costs))


def cache_summary(metrics: RunMetrics) -> str:
    """``"15 of 15 calls served from the request cache"`` (the calls the cache saw)."""
    return f"{metrics.cache_hits} of {metrics.cache_calls} calls served from the request cache"


def billed_equivalent_input(usage: dict[str, int]) -> float:
    """Input tokens as they are billed, in units of an uncached token: uncached + 1.25 x cache
    writes + 0.1 x cache reads (Anthropic's prompt-cache multipliers)."""
    return usage["input_tokens"] + 1.25 * usage["cache_creation_input_tokens"] + 0.1 * usage["cache_read_input_tokens"]


def _breakdown(groups: Mapping[str, Mapping[str, Sequence[float]]]) -> dict[str, dict[str, GroupScore]]:
    breakdown: dict[str, dict[str, GroupScore]] = {}
    for key, values in groups.items():
        breakdown[key] = {}
        for value, scores in sorted(values.items()):
            ci = score_ci(scores, seed=0)
            breakdown[key][value] = GroupScore(len(scores), ci.mean, (ci.low, ci.high))
    return breakdown


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _summary_json(summary: Any) -> dict[str, Any] | None:
    """A method's summary (``Method.summarize``) as metrics.json keeps it: its ``to_dict``, or a mapping."""
    if summary is None:
        return None
    return dict(summary.to_dict() if hasattr(summary, "to_dict") else summary)


def format_table(metrics: RunMetrics, info: TaskInfo) -> str:
    """A short, aligned metrics table with the paper's figure beside ours."""
    rows = [("metric", "value", "95% CI")]
    for name in info.metrics:
        if name in metrics.scores:
            m = metrics.scores[name]
            rows.append((name, f"{100 * m.mean:.1f}", f"[{100 * m.ci95[0]:.1f}, {100 * m.ci95[1]:.1f}]"))
    for key, values in metrics.by_group.items():
        for value, g in values.items() if key in info.shown_groups else ():
            interval = f"[{100 * g.ci95[0]:.1f}, {100 * g.ci95[1]:.1f}]"
            rows.append((f"  {key} {value} (n={g.n})", f"{100 * g.mean:.1f}", interval))
    custom = metrics.protocol == "custom"
    for source, figures in info.paper.items():
        if metrics.mode in figures:
            said = "NOT LIKE FOR LIKE: this run is protocol=custom" if custom else ""
            rows.append((f"paper ({source})", f"{figures[metrics.mode]:.1f}", said))
    for k, score in metrics.pass_at.items():
        rows.append((f"pass@{k}", f"{100 * score.mean:.1f}", f"[{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]"))
    for k, score in metrics.pass_hat.items():
        rows.append((f"pass^{k}", f"{100 * score.mean:.1f}", f"[{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]"))
    if metrics.flips is not None:
        rows.append(
            ("flip between attempts", f"{100 * metrics.flips:.1f}", "share of examples, right in some, wrong in others")
        )
    method = find_method(metrics.mode) if metrics.method is not None else None
    if method is not None and metrics.method is not None:  # what it adds (Reflexion's curve, LATS's search)
        rows += method.table_rows(metrics.method)
    if metrics.epochs > 1:
        what = f"{metrics.epochs} attempts per example; scores are over every attempt"
        rows.append(("attempts", f"{metrics.n}/{metrics.n_planned}", what))
    else:
        rows.append(("examples", f"{metrics.n}/{metrics.n_planned}", "scores are over all of them"))
    if metrics.errors:
        rows.append(("ERRORS", str(metrics.errors), "examples a fault kept from answering, scored as wrong"))
    if metrics.retries:
        rows.append(("retries", str(metrics.retries), "transient faults retried"))
    rows.append(("finish reasons", ", ".join(f"{k}={v}" for k, v in sorted(metrics.reasons.items())), ""))
    if metrics.refused:
        rows.append(("REFUSED", str(metrics.refused), "the model declined (stop reason refusal), scored as wrong"))
    if metrics.stop_reasons:
        stops = ", ".join(f"{k}={v}" for k, v in sorted(metrics.stop_reasons.items()))
        rows.append(("stop reasons", stops, "of every model call"))
    rows.append(("routes", ", ".join(f"{k}={v}" for k, v in sorted(metrics.routes.items())), ""))
    acts = f"model turns; {metrics.mean_actions:.2f} actions executed per example"
    rows.append(("mean steps", f"{metrics.mean_steps:.2f}", acts))
    if metrics.grounded_accuracy is not None:
        of = f"right and read in an observation, of {metrics.grounded_n} answers a page can say"
        rows.append(("grounded accuracy", f"{100 * metrics.grounded_accuracy:.1f}", of))
    if metrics.wall_per_example_s is not None:
        per_call = "" if metrics.wall_per_call_s is None else f"{metrics.wall_per_call_s:.2f} s per model call"
        rows.append(("wall time", f"{metrics.wall_per_example_s:.2f} s per example", per_call))
    if metrics.left_out:
        rows.append(("left out (unreadable)", str(len(metrics.left_out)), f"the first: {metrics.left_out[0]}"))
    rows.append(("bad calls (re-asks)", str(metrics.bad_calls), ""))
    if metrics.actions:
        rows.append(("invalid actions", f"{100 * metrics.invalid_rate:.1f}%", f"of {metrics.actions} actions"))
        if metrics.think_share:
            rows.append(("think actions", f"{100 * metrics.think_share:.1f}%", "thoughts written as actions"))
    if metrics.out_of_label_set is not None:
        rows.append(("answers not a label", str(metrics.out_of_label_set), ""))
    usage = metrics.usage
    total_in = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    unknown = usage.unknown_calls
    said = f"usage unknown for {unknown} of {metrics.calls or unknown} calls (the server sent none)" if unknown else ""
    rows.append(("tokens in/out", f"{total_in}/{usage.output_tokens}", said))
    if usage.cache_read_input_tokens or usage.cache_creation_input_tokens:
        cache = f"read {usage.cache_read_input_tokens}, written {usage.cache_creation_input_tokens}"
        rows.append(("  of which cache", cache, ""))
    if metrics.cache_write_failures:
        not_stored = "responses used, not stored: a rerun asks again"
        rows.append(("cache writes failed", str(metrics.cache_write_failures), not_stored))
    if metrics.cache_calls:
        rows.append(("request cache", cache_summary(metrics), "a hit is not sent, not paid again"))
    cost = metrics.cost
    if cost.spent is None and cost.total is None:
        rows.append(("cost (USD)", "unknown (no price for this model)", ""))
    else:
        rows.append(("spent (USD)", _usd(cost.spent), "calls that reached the API"))
        if cost.saved:
            rows.append(("saved (USD)", _usd(cost.saved), "calls served from the request cache, at price"))
        if cost.total is not None:
            per_correct = "n/a" if cost.per_correct is None else f"{cost.per_correct:.4f}"
            per = f"per example {_usd(cost.per_example)}, per correct {per_correct}"
            rows.append(("cost of the answers", f"{cost.total:.4f}", per))
    if metrics.endpoint or metrics.sdk:
        rows.append(("endpoint", str(metrics.endpoint or "-"), str(metrics.sdk or "")))
    if metrics.not_applied:
        rows.append(("NOT APPLIED", "; ".join(metrics.not_applied), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)
