"""The best configuration for a budget (``react-bench search``, ``scripts/search.py``): a race over
models, methods and settings that stops the dominated ones early (Kapoor et al., 2024, "AI Agents
That Matter": accuracy against dollars, cheap baselines beside every method).

How it goes:
- **The grid.** Every model of ``search.models`` with every mode of ``search.modes`` and every
  combination of ``search.grid.<setting>=[...]`` (a ``mode.*`` setting only for the modes that take
  it). ``search.baselines=true`` adds, per model, the cheap rivals the literature compares against:
  the methods that say they are one (``Method.as_baseline``: best-of-k and CoT-SC) at the grid's k
  (its largest ``mode.k``, else 5; CoT-SC's samples only where ``protocol=custom`` lets them change).
- **Slices.** The task's first ``n`` examples are put in a stratified order (round-robin over the
  values of its first breakdown group: HotpotQA's question type) and cut into slices of
  ``search.slice`` (50). Every configuration still in the race runs the next slice as an ordinary
  run folder (``<results>/<task>/<model>/<mode>-<runner>/<search name>[-<grid>]-s<k>``, its
  examples given by id), so compare.py, drift and resume work on them. Under ``batch=true`` the
  slice's runs share batch rounds (``shared_rounds``), else they run one after another.
- **Dropping.** After each slice, every configuration is compared with every other on the examples
  both have run (each example's first attempt). B is dropped when some A dominates it:
  - A is significantly more accurate (one-sided exact sign test on the discordant examples) and
    no dearer per example (its mean cost at most B's); or
  - A is not worse beyond ``search.margin`` points (a one-sided paired non-inferiority z-test on
    the per-example differences; no variance at all: A's mean difference alone decides) and
    significantly cheaper per example (one-sided exact sign test on the per-example costs).
  Each test is at ``search.alpha`` (0.05) divided by the number of tests of the slice (two per
  ordered pair: Bonferroni). The dominator named is the one with the smallest p.
- **The budget.** ``budget_usd`` (or ``budget_tokens``, where a model has no price) is never
  passed: before a slice is sent its price is the dry run's (``estimate.estimate_run``: an upper
  bound, at half price under ``batch=true``), and the slice runs only if what the search spent so
  far (the runs' own metrics, earlier sessions included) and that price stay within it. Each run
  also gets its share of what is left as its own ``max_cost_usd``.
- **The metric** is the task's primary one; with ``judge=`` set, the judge's verdicts (each run is
  judged as it runs), and the search says so.
- **Repeatable.** The run folders are named by the search and resumed: the same command again
  sends nothing new (every answer is in its run folder; the request cache keeps the rest) and
  gives the same frontier. A killed search goes on with the same command.

What it writes, in ``<results>/search/<search name>/``: ``search.json`` (configurations, every
drop with its slice, dominator, test and p, the frontier with each score's interval and cost per
example, ``spent_usd`` beside ``full_grid_usd``, the frontier neighbours it cannot tell apart),
``search.md`` and ``search.png`` (cost per example against score, the frontier a step line, the
dropped configurations grey).
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from react_bench.errors import ConfigError
from react_bench.rundir import check_run_id, write_json

DEFAULT_SLICE = 50
DEFAULT_MARGIN = 2.0  # points
DEFAULT_ALPHA = 0.05
DEFAULT_K = 5
SEARCH_KEYS = {"models", "modes", "slice", "margin", "alpha", "baselines", "name"}


@dataclass(frozen=True)
class Candidate:
    """One configuration of the grid: a model, a mode, and its grid settings (``mode.k=3``)."""

    model: str
    mode: str
    settings: tuple[tuple[str, str], ...] = ()
    baseline: bool = False  # added by search.baselines=true

    @property
    def key(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.settings)
        return f"{self.model} {self.mode}" + (f" {extra}" if extra else "")

    @property
    def slug(self) -> str:
        """Its grid settings as a run id's part (``k3``)."""
        return "-".join(re.sub(r"[^A-Za-z0-9_.]", "", f"{k.rsplit('.', 1)[-1]}{v}") for k, v in self.settings)

    def overrides(self) -> list[str]:
        return [f"model={self.model}", f"mode={self.mode}", *(f"{k}={v}" for k, v in self.settings)]


@dataclass(frozen=True)
class SearchSettings:
    """The command's settings (the module docstring: what each does)."""

    task: str
    n: int
    models: tuple[str, ...]
    modes: tuple[str, ...]
    grid: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    budget_usd: float | None = None
    budget_tokens: int | None = None
    slice: int = DEFAULT_SLICE
    margin: float = DEFAULT_MARGIN
    alpha: float = DEFAULT_ALPHA
    baselines: bool = False
    name: str = "search"
    overrides: tuple[str, ...] = ()  # every other setting, given to each run (batch=true, judge=..., ...)
    results_dir: Path = Path("results")

    def __post_init__(self) -> None:
        if not self.models or not self.modes:
            raise ConfigError("search.models=[...] and search.modes=[...]: at least one of each")
        if self.n < 1 or self.slice < 1:
            raise ConfigError(f"n={self.n}, search.slice={self.slice}: whole numbers, at least 1")
        if (self.budget_usd is None) == (self.budget_tokens is None):
            raise ConfigError("give one budget: budget_usd=<dollars> (or budget_tokens=<tokens> for an unpriced model)")
        if not 0 < self.alpha < 1 or self.margin < 0:
            raise ConfigError(f"search.alpha={self.alpha} (0 to 1), search.margin={self.margin} (points, 0 or more)")
        check_run_id(self.name)

    @staticmethod
    def parse(argv: Sequence[str]) -> SearchSettings:
        """``key=value`` arguments: ``task``, ``n``, ``budget_usd`` / ``budget_tokens``, ``search.*``,
        ``search.grid.<setting>=[a,b]``, ``results_dir``; anything else is given to every run."""
        values: dict[str, Any] = {"grid": {}}
        passed: list[str] = []
        for arg in argv:
            key, eq, value = arg.partition("=")
            if not eq:
                raise ConfigError(f"{arg}: search takes key=value settings")
            if key.startswith("search.grid."):
                values["grid"][key.removeprefix("search.grid.")] = _listed(value)
            elif key.startswith("search."):
                name = key.removeprefix("search.")
                if name not in SEARCH_KEYS:
                    raise ConfigError(
                        f"{key}: search takes search.{', search.'.join(sorted(SEARCH_KEYS))}, search.grid.*"
                    )
                values[name] = _listed(value) if name in ("models", "modes") else value
            elif key in ("task", "n", "budget_usd", "budget_tokens", "results_dir"):
                values[key] = value
            elif key == "judge":  # (as scripts/eval.py reads it)
                passed.append(f"judge.model={value}")
            elif key in ("model", "mode", "ids", "offset", "split", "run_id", "resume", "max_cost_usd", "dry_run"):
                raise ConfigError(
                    f"{key}=: the search chooses it (search.models, search.modes, its slices, its budget)"
                )
            else:
                passed.append(arg)
        try:
            return SearchSettings(
                task=str(values.get("task", "hotpotqa")),
                n=int(values.get("n", 100)),
                models=tuple(values.get("models") or ()),
                modes=tuple(values.get("modes") or ()),
                grid=values["grid"],
                budget_usd=None if values.get("budget_usd") is None else float(values["budget_usd"]),
                budget_tokens=None if values.get("budget_tokens") is None else int(values["budget_tokens"]),
                slice=int(values.get("slice", DEFAULT_SLICE)),
                margin=float(values.get("margin", DEFAULT_MARGIN)),
                alpha=float(values.get("alpha", DEFAULT_ALPHA)),
                baselines=str(values.get("baselines", "false")).lower() in ("true", "1", "yes"),
                name=str(values.get("name", "search")),
                overrides=tuple(passed),
                results_dir=Path(str(values.get("results_dir", "results"))),
            )
        except ValueError as exc:
            raise ConfigError(f"search: {exc}") from None

    @property
    def measure(self) -> str:
        return "usd" if self.budget_usd is not None else "tokens"

    @property
    def budget(self) -> float:
        return float(self.budget_usd if self.budget_usd is not None else self.budget_tokens or 0)


def _listed(value: str) -> tuple[str, ...]:
    """``[a,b]`` or ``a,b`` as ("a", "b")."""
    inner = value.strip().removeprefix("[").removesuffix("]")
    return tuple(v.strip().strip("'\"") for v in inner.split(",") if v.strip())


def candidates(settings: SearchSettings) -> list[Candidate]:
    """The grid: model x mode x every combination of the grid's settings (a ``mode.*`` setting only
    for the modes whose group takes it), then the baselines where asked."""
    from react_bench.methods.registry import get_method, methods

    out: list[Candidate] = []
    for model, mode in itertools.product(settings.models, settings.modes):
        takes = set(get_method(mode).mode_node()) - {"name"}
        keys = [k for k in settings.grid if not k.startswith("mode.") or k.removeprefix("mode.") in takes]
        for values in itertools.product(*(settings.grid[k] for k in keys)):
            out.append(Candidate(model, mode, tuple(zip(keys, values, strict=True))))
    if settings.baselines:
        ks = [int(v) for v in settings.grid.get("mode.k", ()) if str(v).isdigit()]
        k = str(max(ks) if ks else DEFAULT_K)
        custom = any(o == "protocol=custom" for o in settings.overrides)
        for model in settings.models:  # the methods that say they are such a baseline (Method.as_baseline)
            rivals = [
                Candidate(model, m.name, chosen, baseline=True)
                for m in methods().values()
                if (chosen := m.as_baseline(int(k), custom)) is not None
            ]
            out += [c for c in rivals if not any((c.model, c.mode) == (o.model, o.mode) for o in out)]
    keys = [c.key for c in out]
    if len(set(keys)) != len(keys):
        raise ConfigError("search: the grid names a configuration twice")
    return out


def stratified_ids(settings: SearchSettings) -> list[str]:
    """The first ``n`` examples' ids, round-robin over the values of the task's first breakdown group
    (in the order each value first appears), so every slice holds each kind in its share."""
    from react_bench.tasks import TaskConfig, load_task

    task = load_task(settings.task)
    examples = task.examples(TaskConfig(name=settings.task, n=settings.n))
    if len(examples) < settings.n:
        raise ConfigError(f"task={settings.task} has {len(examples)} examples here, fewer than n={settings.n}")
    group = task.info.groups[0] if task.info.groups else None
    by: dict[str, list[str]] = {}
    for e in examples:
        by.setdefault(str(e.metadata.get(group)) if group else "", []).append(e.id)
    queues = list(by.values())
    order: list[str] = []
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    return order


def slices(ids: Sequence[str], size: int) -> list[list[str]]:
    return [list(ids[i : i + size]) for i in range(0, len(ids), size)]


def config_for(settings: SearchSettings, candidate: Candidate, ids: Sequence[str], k: int, **extra: Any) -> Any:
    """The run of ``candidate`` on slice ``k`` (its examples ``ids``)."""
    from react_bench.runconfig import RunConfig, compose

    run_id = f"{settings.name}{'-' + candidate.slug if candidate.slug else ''}-s{k}"
    overrides = [
        f"task={settings.task}",
        *settings.overrides,
        *candidate.overrides(),
        f"results_dir={settings.results_dir}",
        f"run_id={check_run_id(run_id)}",
        "progress=false",
        "show=none",
    ]
    try:
        composed = compose(overrides)
    except Exception as exc:  # Hydra's own (an unknown model or mode): one line naming the configuration
        raise ConfigError(f"{candidate.key}: {str(exc).strip().splitlines()[0]}") from None
    composed["ids"], composed["n"] = list(ids), None
    cfg = RunConfig.from_mapping(composed)
    return replace(cfg, **extra) if extra else cfg


async def price(cfg: Any) -> tuple[float | None, int]:
    """The dry run's price of ``cfg`` (dollars, None for a model with none; tokens), sending nothing:
    every episode to its cap, half the dollars under ``batch=true``."""
    from react_bench.estimate import estimate_run
    from react_bench.evaluate import Run, _caching
    from react_bench.models.capabilities import calls_cost_usd

    dry = replace(cfg, dry_run=True)
    run = Run.prepare(dry, io.StringIO())
    try:
        caching, minimum = _caching(dry)
        estimate = estimate_run(run.solver, [e.question for e in run.examples], caching=caching, minimum=minimum)
        usd = calls_cost_usd(run.model.name, [estimate.usage])
        tokens = estimate.usage.total_input_tokens + estimate.usage.output_tokens
        return (None if usd is None else usd * (0.5 if cfg.batch else 1.0)), tokens
    finally:
        await run.aclose()


@dataclass
class Outcomes:
    """A configuration's examples so far: right or not (its first attempt; judged where a judge
    read them), and each one's cost (dollars, tokens); what its runs spent."""

    right: dict[str, bool] = field(default_factory=dict)
    usd: dict[str, float | None] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    spent_usd: float = 0.0
    spent_tokens: int = 0
    runs: list[Path] = field(default_factory=list)

    def add(self, run_dir: Path, judged: bool) -> None:
        from react_bench.record import RunMetrics
        from react_bench.results import iter_example_records
        from react_bench.studies.statistics import judged_first

        verdicts = judged_first(run_dir) if judged else None
        for r in iter_example_records(run_dir):
            if r.epoch != 1 or r.id in self.right:
                continue
            self.right[r.id] = bool(verdicts[r.id]) if verdicts is not None and r.id in verdicts else r.correct
            self.usd[r.id] = r.cost_usd
            self.tokens[r.id] = r.usage.total_input_tokens + r.usage.output_tokens
        metrics = RunMetrics.read(run_dir)
        if metrics is not None:
            self.spent_usd += metrics.cost.spent or 0.0
            self.spent_tokens += metrics.usage.total_input_tokens + metrics.usage.output_tokens
        self.runs.append(run_dir)

    def cost(self, measure: str, example: str) -> float:
        value = self.usd.get(example) if measure == "usd" else self.tokens.get(example)
        return float(value or 0.0)

    def per_example(self, measure: str) -> float:
        return sum(self.cost(measure, k) for k in self.right) / max(1, len(self.right))

    def spent(self, measure: str) -> float:
        return self.spent_usd if measure == "usd" else float(self.spent_tokens)


def _sign_p(wins: int, losses: int) -> float:
    """One-sided exact sign test: P(at least ``wins`` of ``wins + losses`` at one half)."""
    from scipy.stats import binomtest

    n = wins + losses
    return 1.0 if n == 0 else float(binomtest(wins, n, 0.5, alternative="greater").pvalue)


def _noninferior_p(a: Sequence[float], b: Sequence[float], margin: float) -> float:
    """One-sided paired z-test of H0: mean(a - b) <= -margin (margin as a share)."""
    from scipy.stats import norm

    d = [x - y for x, y in zip(a, b, strict=True)]
    n = len(d)
    if n == 0:
        return 1.0
    mean = sum(d) / n
    var = sum((x - mean) ** 2 for x in d) / (n - 1) if n > 1 else 0.0
    if var == 0:
        return 0.0 if mean > -margin else 1.0
    return float(norm.sf((mean + margin) / math.sqrt(var / n)))


def dominance(a: Outcomes, b: Outcomes, measure: str, margin: float) -> list[dict[str, Any]]:
    """The two tests by which A may dominate B on the examples both have, each with its p."""
    ids = sorted(set(a.right) & set(b.right))
    if not ids:
        return []
    ra, rb = [float(a.right[k]) for k in ids], [float(b.right[k]) for k in ids]
    ca, cb = [a.cost(measure, k) for k in ids], [b.cost(measure, k) for k in ids]
    a_only = sum(1 for x, y in zip(ra, rb, strict=True) if x > y)
    b_only = sum(1 for x, y in zip(ra, rb, strict=True) if y > x)
    cheaper = sum(1 for x, y in zip(ca, cb, strict=True) if x < y)
    dearer = sum(1 for x, y in zip(ca, cb, strict=True) if x > y)
    n = len(ids)
    return [
        {
            "test": "more accurate, no dearer",
            "p": _sign_p(a_only, b_only),
            "holds": sum(ca) / n <= sum(cb) / n,
            "n": n,
            "difference": (sum(ra) - sum(rb)) / n,
        },
        {
            "test": f"not worse by {100 * margin:g} points, cheaper",
            "p": max(_noninferior_p(ra, rb, margin), _sign_p(cheaper, dearer)),
            "holds": True,
            "n": n,
            "difference": (sum(ra) - sum(rb)) / n,
        },
    ]


def drops(alive: Mapping[str, Outcomes], measure: str, margin: float, alpha: float) -> dict[str, dict[str, Any]]:
    """Who is dropped after a slice, each with the configuration that dominated it (smallest p)."""
    keys = list(alive)
    tests = 2 * len(keys) * (len(keys) - 1)
    level = alpha / max(1, tests)
    out: dict[str, dict[str, Any]] = {}
    for b in keys:
        found = [
            {"by": a, **t}
            for a in keys
            if a != b
            for t in dominance(alive[a], alive[b], measure, margin)
            if t["holds"] and t["p"] < level
        ]
        if found:
            best = min(found, key=lambda t: (t["p"], keys.index(t["by"])))
            out[b] = {**best, "level": level}
    return out


def frontier(points: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The configurations no other beats: none at most as costly scores as high (ties: the better)."""
    ranked = sorted(points, key=lambda k: (points[k]["per_example"], -points[k]["score"]))
    out, best = [], -1.0
    for k in ranked:
        if points[k]["score"] > best:
            out.append(k)
            best = points[k]["score"]
    return out


async def _run_slice(cfgs: Sequence[Any], batch: bool, out: TextIO) -> None:
    from react_bench.evaluate import evaluate
    from react_bench.shared_rounds import label, resumable, run_together

    cfgs = [resumable(c) for c in cfgs]
    if batch:
        await run_together(cfgs, out)
        return
    for cfg in cfgs:
        try:
            result = await evaluate(cfg, out=io.StringIO())
        except Exception as exc:  # noqa: BLE001 - said; the configuration keeps what it has
            print(f"  {label(cfg)}: not run: {type(exc).__name__}: {str(exc).splitlines()[0]}", file=out, flush=True)
            continue
        print(f"  {cfg.task.name} {cfg.solve.mode} {cfg.model.display_label}: {result.n_new} new example(s)", file=out)


async def search(settings: SearchSettings, out: TextIO = sys.stdout) -> dict[str, Any]:
    """The race (module docstring); what search.json holds."""
    from react_bench.evaluate import run_dir_for

    grid = candidates(settings)
    chunks = slices(stratified_ids(settings), settings.slice)
    measure = settings.measure
    base = {c.key: config_for(settings, c, chunks[0], 1) for c in grid}
    judged = any(cfg.judge.model for cfg in base.values())
    judge_said = next((str(cfg.judge.model) for cfg in base.values() if cfg.judge.model), None)
    batch = any(cfg.batch for cfg in base.values())
    print(
        f"search {settings.name}: {len(grid)} configuration(s) on task={settings.task}, n={settings.n} in "
        f"{len(chunks)} slice(s) of {settings.slice}; budget {settings.budget:g} {measure}"
        + (f"; the metric is judge={judge_said}'s verdict" if judged else ""),
        file=out,
        flush=True,
    )
    full = 0.0
    for c in grid:  # the whole grid's dry-run price: every configuration on every example
        usd, tokens = await price(config_for(settings, c, [i for ch in chunks for i in ch], 0))
        if measure == "usd" and usd is None:
            raise ConfigError(f"{c.key}: its model has no price; give budget_tokens=<tokens> instead of budget_usd")
        full += usd if measure == "usd" and usd is not None else tokens
    print(f"the full grid's dry-run price: {full:.4f} {measure}", file=out, flush=True)
    outcomes = {c.key: Outcomes() for c in grid}
    alive = [c.key for c in grid]
    dropped: dict[str, dict[str, Any]] = {}
    stopped = None
    slices_run = 0
    for k, ids in enumerate(chunks, start=1):
        spent = sum(o.spent(measure) for o in outcomes.values())
        cfgs = {key: config_for(settings, next(c for c in grid if c.key == key), ids, k) for key in alive}
        prices: dict[str, float] = {}
        for key, cfg in cfgs.items():
            usd, tokens = await price(cfg)
            prices[key] = float(usd if measure == "usd" and usd is not None else tokens)
        wanted = sum(prices.values())
        fresh = [key for key, cfg in cfgs.items() if not _finished(cfg, ids)]
        if fresh and spent + sum(prices[key] for key in fresh) > settings.budget:
            stopped = (
                f"slice {k} priced at {sum(prices[key] for key in fresh):.4f} {measure} (dry run) after "
                f"{spent:.4f} spent: it would pass the budget of {settings.budget:g}"
            )
            print(f"stop: {stopped}", file=out, flush=True)
            break
        left = settings.budget - spent
        if measure == "usd":  # each run its share of what is left: together they cannot pass it
            cfgs = {
                key: replace(cfg, max_cost_usd=max(1e-9, left * prices[key] / max(wanted, 1e-12)))
                for key, cfg in cfgs.items()
            }
        print(f"slice {k}/{len(chunks)}: {len(ids)} examples x {len(alive)} configuration(s)", file=out, flush=True)
        await _run_slice(list(cfgs.values()), batch, out)
        slices_run = k
        for key, cfg in cfgs.items():
            run_dir = run_dir_for(cfg, cfg.run_id)
            if (run_dir / "examples.jsonl").is_file():
                outcomes[key].add(run_dir, judged)
        gone = drops({key: outcomes[key] for key in alive}, measure, settings.margin / 100, settings.alpha)
        for key, why in gone.items():
            dropped[key] = {"after_slice": k, "n": len(outcomes[key].right), **why}
            print(
                f"  dropped {key}: {why['by']} is {why['test']} (p={why['p']:.2g}, level {why['level']:.2g})", file=out
            )
        alive = [key for key in alive if key not in gone]
        if len(alive) == 1:
            break
    return _result(settings, grid, outcomes, alive, dropped, full, slices_run, stopped, judge_said)


def _finished(cfg: Any, ids: Sequence[str]) -> bool:
    """Whether the run of ``cfg`` already holds every example of its slice (the command run again)."""
    from react_bench.evaluate import run_dir_for

    path = run_dir_for(cfg, cfg.run_id) / "examples.jsonl"
    if not path.is_file():
        return False
    done = {json.loads(line).get("id") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    return set(ids) <= done


def _result(
    settings: SearchSettings,
    grid: Sequence[Candidate],
    outcomes: Mapping[str, Outcomes],
    alive: Sequence[str],
    dropped: Mapping[str, Mapping[str, Any]],
    full: float,
    slices_run: int,
    stopped: str | None,
    judge: str | None,
) -> dict[str, Any]:
    from react_bench.metrics import score_ci

    measure = settings.measure
    points: dict[str, dict[str, Any]] = {}
    for c in grid:
        o = outcomes[c.key]
        if not o.right:
            continue
        ci = score_ci([float(v) for v in o.right.values()], seed=0)
        points[c.key] = {
            "model": c.model,
            "mode": c.mode,
            "settings": dict(c.settings),
            "baseline": c.baseline,
            "n": len(o.right),
            "score": ci.mean,
            "ci95": [ci.low, ci.high],
            "per_example": o.per_example(measure),
            "runs": [str(p) for p in o.runs],
            "status": "dropped" if c.key in dropped else "survived",
        }
    survivors = {k: v for k, v in points.items() if k in alive}
    front = frontier(survivors)
    close = []
    for lower, upper in itertools.pairwise(front):  # neighbours whose scores a paired test cannot tell apart
        test = dominance(outcomes[upper], outcomes[lower], measure, 0.0)
        if test and test[0]["p"] >= settings.alpha:
            close.append({"cheaper": lower, "dearer": upper, "p": test[0]["p"]})
    spent_usd = sum(o.spent_usd for o in outcomes.values())
    spent_tokens = sum(o.spent_tokens for o in outcomes.values())
    return {
        "task": settings.task,
        "n": settings.n,
        "slice": settings.slice,
        "slices_run": slices_run,
        "measure": measure,
        "metric": f"judged by {judge}" if judge else "the task's primary metric",
        "budget": settings.budget,
        "spent_usd": spent_usd,
        "spent_tokens": spent_tokens,
        "spent": spent_usd if measure == "usd" else spent_tokens,
        "full_grid_usd" if measure == "usd" else "full_grid_tokens": full,
        "stopped": stopped,
        "margin_points": settings.margin,
        "alpha": settings.alpha,
        "configurations": points,
        "dropped": {k: dict(v) for k, v in dropped.items()},
        "frontier": front,
        "not_distinguishable": close,
    }


def markdown(result: Mapping[str, Any]) -> str:
    measure, points = result["measure"], result["configurations"]
    unit = "USD" if measure == "usd" else "tokens"
    full = result.get("full_grid_usd", result.get("full_grid_tokens"))
    lines = [
        f"# Search on {result['task']}: the frontier for a budget",
        "",
        f"Metric: {result['metric']}. Spent {result['spent']:.4f} {unit} of a budget of {result['budget']:.4f} "
        f"(the full grid's dry-run price: {full:.4f} {unit}); {result['slices_run']} slice(s) of {result['slice']}.",
        "",
        "## The frontier",
        "",
        f"| configuration | n | score | 95% CI | {unit} per example |",
        "| --- | ---: | ---: | --- | ---: |",
    ]
    for key in result["frontier"]:
        p = points[key]
        lines.append(
            f"| {key} | {p['n']} | {100 * p['score']:.1f} | [{100 * p['ci95'][0]:.1f}, {100 * p['ci95'][1]:.1f}] "
            f"| {p['per_example']:.6f} |"
        )
    lines += [
        "",
        "## Dropped",
        "",
        "| configuration | after slice | dominated by | test | p |",
        "| --- | ---: | --- | --- | ---: |",
    ]
    for key, d in result["dropped"].items():
        lines.append(f"| {key} | {d['after_slice']} | {d['by']} | {d['test']} | {d['p']:.2g} |")
    if result["not_distinguishable"]:
        lines += ["", "Frontier neighbours a paired test cannot tell apart:", ""]
        lines += [f"- {c['cheaper']} and {c['dearer']} (p={c['p']:.2g})" for c in result["not_distinguishable"]]
    if result["stopped"]:
        lines += ["", f"Stopped: {result['stopped']}."]
    return "\n".join(lines) + "\n"


def plot(result: Mapping[str, Any], path: Path) -> None:
    """Cost per example against score: the frontier a step line, the dropped configurations grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    points = result["configurations"]
    for key, p in points.items():
        grey = p["status"] == "dropped"
        ax.errorbar(
            p["per_example"],
            100 * p["score"],
            yerr=[[100 * (p["score"] - p["ci95"][0])], [100 * (p["ci95"][1] - p["score"])]],
            fmt="o",
            color="0.7" if grey else None,
            ms=4,
            capsize=2,
        )
        ax.annotate(key, (p["per_example"], 100 * p["score"]), fontsize=7, color="0.5" if grey else "black")
    front = result["frontier"]
    if front:
        ax.step([points[k]["per_example"] for k in front], [100 * points[k]["score"] for k in front], where="post")
    ax.set_xlabel(("USD" if result["measure"] == "usd" else "tokens") + " per example")
    ax.set_ylabel("score (%), 95% interval")
    ax.set_title(f"search on {result['task']}: the frontier (grey: dropped)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(result: Mapping[str, Any], settings: SearchSettings) -> Path:
    folder = settings.results_dir / "search" / settings.name
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "search.json", dict(result))
    (folder / "search.md").write_text(markdown(result), encoding="utf-8")
    plot(result, folder / "search.png")
    return folder


def main(argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    settings = SearchSettings.parse(argv)
    result = asyncio.run(search(settings, out))
    folder = write(result, settings)
    print(markdown(result), file=out)
    print(f"search: {folder / 'search.json'}, search.md, search.png", file=out)
    return 0
