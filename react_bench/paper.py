"""The whole paper as one command: ``python scripts/eval.py experiment=paper model=<model>``
runs every table and figure's runs one after another (with ``batch=true``: all at once, their
requests in shared batch rounds, ``shared_rounds``); with ``dry_run=true`` it prices them first,
without a model call: per part, the calls, tokens, dollars and hours at the model's rate limit
(batched: the hours of the study's longest run, every run being at once).

The parts and their runs (``PARTS``), as the paper ran them:
- Table 1: HotpotQA and FEVER, each of the seven modes, on the paper's 500 questions / claims
  (``split=paper500``);
- Figure 2: CoT-SC's accuracy at k = 1..21, read from Table 1's CoT-SC runs (no run of its own);
- Table 3: ALFWorld's 134 unseen games, ReAct, Act and ReAct-IM, each with the six orderings of
  its exemplars (``prompt.pair``);
- Table 4: WebShop's 500 goals, ReAct and Act;
- Table 2: labels of Table 1's ReAct and CoT runs (by hand, ``scripts/annotate.py``): no call;
- Figure 3: the fine-tuning data, ReAct, Act, CoT and Standard on 3,000 HotpotQA train questions
  (the paper's; given as ``task.data_file``, the offline data has 200 of them);
- Figure 5: forks of chosen trajectories (``scripts/fork.py``): a few calls each, not priced.

A price is the dry run's for a few examples of each run (every episode to its step cap: an upper
bound; the prompt cache as the model would use it), scaled to the run's examples (ALFWorld's on 12
small generated games and exemplars from 18 train games: the same prompt sizes, made in seconds
the first time instead of minutes). Hours: the calls at
the model's configured ``requests_per_minute`` (else ``ASSUMED_RPM``, said as assumed) and its
tokens at ``tokens_per_minute`` where set, whichever is longer, one run after another.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from react_bench.estimate import ASSUMED_RPM, Estimate, estimate_example
from react_bench.types import Usage

MODES_TABLE1 = ("standard", "cot", "cot_sc", "act", "react", "react_cot_sc", "cot_sc_react")
PAIRS = ("[0,1]", "[1,0]", "[0,2]", "[2,0]", "[1,2]", "[2,1]")


@dataclass(frozen=True)
class Job:
    overrides: tuple[str, ...]  # the run's settings, as on the command line
    examples: int  # how many the paper ran
    priced_on: tuple[str, ...] = ("n=4",)  # the examples a price is the mean of (their settings)


@dataclass(frozen=True)
class Part:
    name: str
    jobs: tuple[Job, ...]
    note: str = ""


def _job(*overrides: str, examples: int, priced_on: tuple[str, ...] = ("n=4",)) -> Job:
    return Job(tuple(overrides), examples, priced_on)


# ALFWorld priced on 12 generated games (two of each type) with exemplars from 18 train games (the
# fewest that give three of each type): the same sizes of prompt, made in seconds, not minutes
ALFWORLD_PRICED_ON = ("alfworld.games=12", "alfworld.train_games=18")


PARTS: tuple[Part, ...] = (
    Part(
        "Table 1",
        tuple(
            _job(f"task={t}", f"mode={m}", "split=paper500", examples=500)
            for t in ("hotpotqa", "fever")
            for m in MODES_TABLE1
        ),
    ),
    Part("Figure 2", (), "CoT-SC at k = 1..21 from Table 1's CoT-SC runs"),
    Part(
        "Table 3",
        tuple(
            _job("task=alfworld", f"mode={m}", f"prompt.pair={p}", examples=134, priced_on=ALFWORLD_PRICED_ON)
            for m in ("react", "act", "react_im")
            for p in PAIRS
        ),
    ),
    Part("Table 4", tuple(_job("task=webshop", f"mode={m}", "split=paper500", examples=500) for m in ("react", "act"))),
    Part("Table 2", (), "labels of Table 1's ReAct and CoT runs, by hand (scripts/annotate.py)"),
    Part(
        "Figure 3",
        tuple(
            _job("task=hotpotqa", f"mode={m}", "split=all", examples=3000) for m in ("react", "act", "cot", "standard")
        ),
        "on HotpotQA's train questions: give their file with +task.data_file=...; then scripts/finetune_data.py",
    ),
    Part("Figure 5", (), "forks of chosen trajectories (scripts/fork.py): a few calls each"),
)


@dataclass(frozen=True)
class Price:
    part: str
    runs: int
    calls: int
    usage: Usage
    usd: float | None
    hours: float
    batch_usd: float | None = None  # batch=true: half price, the prompt cache written for an hour
    batch_hours: float = 0.0  # its runs at once in shared rounds: its longest run's rounds x ASSUMED_ROUND_MINUTES
    prompts: tuple[str, ...] = ()  # the sources of its runs' prompts, each once
    batch_rounds: int = 0  # the rounds of its longest run (its waves of lanes, and the retry rounds)
    longest: str = ""  # that run's settings


PAPER_PROMPTS = "prompt=paper"  # every run sends the paper's own prompts (``prompt=own`` on the command line: ours)


def _prompt_choice(given: Sequence[str]) -> list[str]:
    """``prompt=paper`` unless the command line chose a prompt (Hydra takes a group once)."""
    return [] if any(a.startswith("prompt=") for a in given) else [PAPER_PROMPTS]


def _config(job: Job, model: Sequence[str], prompt: Sequence[str] = ()) -> Any:
    from react_bench.runconfig import RunConfig

    settings = [
        *_prompt_choice(prompt),
        *job.overrides,
        *job.priced_on,
        *model,
        *prompt,
        "dry_run=true",
        "progress=false",
        "show=none",
    ]
    return RunConfig.from_mapping(_composed(settings))


def _composed(overrides: Sequence[str]) -> dict[str, Any]:
    from react_bench.runconfig import compose

    return compose(overrides)


@dataclass(frozen=True)
class JobPrice:
    live: Estimate
    batched: Estimate  # the same calls, the prompt cache written with the 1-hour lifetime where taken
    model: str
    rounds: int  # batch=true: the most rounds an example takes
    prompts: tuple[str, ...] = ()  # the sources of the prompts it sends (PromptSpec.source)


def price_job(job: Job, model: Sequence[str], prompt: Sequence[str] = ()) -> JobPrice:
    """One run's upper bound: the first example's estimate (the exemplars written to the prompt
    cache), and the mean of the others' (read from it) for the rest of the paper's examples."""
    import asyncio

    from react_bench.estimate import rounds
    from react_bench.evaluate import Run, _caching

    cfg = _config(job, model, prompt)
    run = Run.prepare(cfg, out=io.StringIO())
    try:
        caching, minimum = _caching(cfg)
        questions = [e.question for e in run.examples] or ["probe"]
        info = getattr(run.stack.client, "info", None)
        estimates = []
        for long_cache in (False, caching and bool(getattr(info, "cache_ttl_1h", False))):
            first = estimate_example(
                run.solver,
                questions[0],
                caching=caching,
                minimum=minimum,
                exemplars_cached=False,
                long_cache=long_cache,
            )
            each = [
                estimate_example(
                    run.solver, q, caching=caching, minimum=minimum, exemplars_cached=True, long_cache=long_cache
                )
                for q in questions
            ]
            n, k = job.examples - 1, len(each)
            calls = first.calls + round(n * sum(e.calls for e in each) / k)
            usage = first.usage + _times(sum((e.usage for e in each), Usage()), n / k)
            estimates.append(Estimate(calls, usage))
        sources = tuple(p.source for p in run.prompts.values())
        return JobPrice(estimates[0], estimates[1], run.model.name, rounds(run.solver), sources)
    finally:
        asyncio.run(run.aclose())


def _times(usage: Usage, k: float) -> Usage:
    return Usage(
        input_tokens=round(usage.input_tokens * k),
        output_tokens=round(usage.output_tokens * k),
        cache_creation_input_tokens=round(usage.cache_creation_input_tokens * k),
        cache_read_input_tokens=round(usage.cache_read_input_tokens * k),
        cache_creation_1h_input_tokens=round(usage.cache_creation_1h_input_tokens * k),
    )


def price(
    model: Sequence[str], rpm: float | None = None, tpm: float | None = None, prompt: Sequence[str] = ()
) -> list[Price]:
    """Every part's price on the model of ``model`` (command-line settings: ``model=...``), live
    and with ``batch=true``; ``prompt``: ``prompt=own`` prices the project's exemplars instead."""
    from react_bench.estimate import ASSUMED_ROUND_MINUTES
    from react_bench.models.capabilities import calls_cost_usd

    out = []
    for part in PARTS:
        calls, usage, rounds, longest = 0, Usage(), 0, ""
        sources: dict[str, None] = {}
        usd: float | None = 0.0
        batch_usd: float | None = 0.0
        for job in part.jobs:
            priced = price_job(job, model, prompt)
            sources |= dict.fromkeys(priced.prompts)
            calls += priced.live.calls
            usage = usage + priced.live.usage
            if study_rounds(priced.rounds, job.examples) > rounds:
                rounds, longest = study_rounds(priced.rounds, job.examples), " ".join(job.overrides)
            cost = calls_cost_usd(priced.model, [priced.live.usage]) if priced.model else None
            usd = None if usd is None or cost is None else usd + cost
            batched = calls_cost_usd(priced.model, [priced.batched.usage]) if priced.model else None
            batch_usd = None if batch_usd is None or batched is None else batch_usd + 0.5 * batched
        minutes = calls / (rpm or ASSUMED_RPM)
        if tpm:
            minutes = max(minutes, (usage.total_input_tokens + usage.output_tokens) / tpm)
        out.append(
            Price(
                part.name,
                len(part.jobs),
                calls,
                usage,
                usd if part.jobs else 0.0,
                minutes / 60,
                batch_usd if part.jobs else 0.0,
                rounds * ASSUMED_ROUND_MINUTES / 60,
                tuple(sources),
                rounds,
                longest,
            )
        )
    return out


def study_rounds(rounds: int, examples: int) -> int:
    """A run's rounds in a batched study: its examples in waves of ``BATCH_LANES`` lanes, each wave
    its longest episode's rounds, and the rounds a failed batch result may take before it goes
    live (``MAX_BATCH_TRIES``)."""
    from react_bench.executors.rounds import BATCH_LANES, MAX_BATCH_TRIES

    waves = -(-max(1, examples) // BATCH_LANES)
    return waves * rounds + MAX_BATCH_TRIES


def prompt_lines(prices: Sequence[Price]) -> list[str]:
    """Which prompts each part sends: the paper's pinned files, and the project's own where the
    paper published none (or ``prompt=own`` was given)."""
    from react_bench.prompts import PAPER_SOURCE

    lines = []
    for p in prices:
        files: dict[str, None] = {}
        own: dict[str, None] = {}
        for source in p.prompts:
            if source.startswith(PAPER_SOURCE):
                files |= dict.fromkeys(piece.split("#")[0] for piece in source[len(PAPER_SOURCE) :].split(" + "))
            else:
                own[re.sub(r"_<type>_\d\+\d$", "", source.split(" ")[0])] = None  # one per style, not per ordering
        said = []
        if files:
            said.append("the paper's own, " + ", ".join(files))
        if own:
            said.append("the project's own " + ", ".join(own))
        if said:
            lines.append(f"  {p.part} prompts: {'; '.join(said)}")
    return lines


def price_table(prices: Sequence[Price], model: str, rpm: float | None, seconds: float, batch: bool = False) -> str:
    from react_bench.estimate import ASSUMED_ROUND_MINUTES

    rate = f"{rpm} requests/minute (the model's)" if rpm else f"{ASSUMED_RPM} requests/minute (assumed)"
    head = ["part", "runs", "calls", "input tokens", "output tokens", "USD", "hours"]
    rows = [tuple(head + (["batch USD", "batch hours"] if batch else []))]

    def usd(value: float | None) -> str:
        return "unknown" if value is None else f"{value:,.2f}"

    def total(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(v or 0.0 for v in values)

    for p in [*prices, None]:
        if p is None:  # the whole paper
            p = Price(
                "all",
                sum(q.runs for q in prices),
                sum(q.calls for q in prices),
                sum((q.usage for q in prices), Usage()),
                total([q.usd for q in prices]),
                sum(q.hours for q in prices),
                total([q.batch_usd for q in prices]),
                max((q.batch_hours for q in prices), default=0.0),  # every part at once
            )
        row = [
            p.part,
            str(p.runs),
            f"{p.calls:,}",
            f"{p.usage.total_input_tokens:,}",
            f"{p.usage.output_tokens:,}",
            usd(p.usd),
            f"{p.hours:,.1f}",
        ]
        rows.append(tuple(row + ([usd(p.batch_usd), f"{p.batch_hours:,.1f}"] if batch else [])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        f"experiment=paper on {model}: upper bounds (every episode to its step cap), no model call; "
        f"hours at {rate}, one run after another"
    ]
    if batch:
        lines.append(
            "batch=true: every request through the Message Batches API at half price, the prompt cache written "
            f"for an hour; batch hours: every run at once, their requests in shared rounds, so the study takes "
            f"its longest run's rounds at an assumed {ASSUMED_ROUND_MINUTES} minutes a round"
        )
    lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    if batch and prices:
        setter = max(prices, key=lambda q: q.batch_rounds)
        lines.append(
            f"  batch hours are set by {setter.part} ({setter.longest}): {setter.batch_rounds} rounds (its longest "
            f"episode, its waves of lanes and {_retry_rounds()} rounds for a failed batch result)"
        )
    lines += [f"  {p.name}: {p.note}" for p in PARTS if p.note]
    lines += prompt_lines(prices)
    lines.append(f"(priced in {seconds:.1f} s)")
    return "\n".join(lines)


def _retry_rounds() -> int:
    from react_bench.executors.rounds import MAX_BATCH_TRIES

    return MAX_BATCH_TRIES


def main(argv: Sequence[str]) -> int:
    """``scripts/eval.py experiment=paper ...``: price it (``dry_run=true``) or run every part."""
    import sys

    from react_bench.errors import ConfigError
    from react_bench.models.stack import ModelSpec

    given = [a for a in argv if not a.startswith("experiment=")]
    dry = any(a in ("dry_run=true", "dry_run=True") for a in given)
    batch = any(a in ("batch=true", "batch=True") for a in given)
    model = [a for a in given if a.split("=", 1)[0].split(".")[0] == "model" or a.startswith("model=")]
    prompt = [a for a in given if a.startswith("prompt=")]
    rest = [
        a
        for a in given
        if a not in model + prompt and not a.startswith("dry_run=") and not (dry and a.startswith("batch="))
    ]
    if rest and dry:
        print(
            f"error: experiment=paper dry_run=true takes model settings, prompt= and batch=true only; got {rest[0]}",
            file=sys.stderr,
        )
        return 2
    try:
        spec = ModelSpec.from_mapping(_composed(model)["model"])
        if dry:
            started = time.monotonic()
            prices = price(model, spec.requests_per_minute, spec.tokens_per_minute, prompt)
            seconds = time.monotonic() - started
            print(price_table(prices, spec.display_label, spec.requests_per_minute, seconds, batch=batch))
            return 0
        return run_all(model, [*prompt, *rest])
    except ConfigError as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2


def run_all(model: Sequence[str], extra: Sequence[str]) -> int:
    """Every run of every part, each its own run folder (``run_id`` by part and job, so the command
    run again resumes where it stopped): one after another, or under ``batch=true`` all at once,
    their requests in shared batch rounds (``shared_rounds``)."""
    import asyncio
    import sys

    from react_bench.evaluate import evaluate, run_dir_for

    if any(a.lower() in ("batch=true", "batch=1", "batch=yes") for a in extra):
        return run_batched(model, extra)
    worst = 0
    for name, cfg in jobs_of(model, extra):
        if (run_dir_for(cfg, cfg.run_id or "") / "run.json").exists():  # the command run again: go on
            cfg = replace(cfg, resume=True)
        print(
            f"{name}: {cfg.task.name} mode={cfg.solve.mode}"
            + (f" pair={list(cfg.prompt_pair)}" if cfg.prompt_pair else "")
        )
        try:
            result = asyncio.run(evaluate(cfg, out=sys.stdout))
        except Exception as exc:  # noqa: BLE001 - a part that cannot run is said, the others go on
            print(f"  not run: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            worst = max(worst, 3)
            continue
        print(f"  {result.n_new} new example(s): {result.run_dir}")
        if result.summary is not None and result.summary.errors:
            worst = max(worst, 3)
    return worst


def jobs_of(model: Sequence[str], extra: Sequence[str]) -> list[tuple[str, Any]]:
    """Every run of the paper: (its part and place, its settings), each with its own run id."""
    from react_bench.runconfig import RunConfig

    out = []
    for part in PARTS:
        for k, job in enumerate(part.jobs, start=1):
            run_id = f"paper-{part.name.lower().replace(' ', '')}-{k}"
            overrides = [
                *_prompt_choice(extra),
                *job.overrides,
                *model,
                *extra,
                f"run_id={run_id}",
                f"n={job.examples}",
            ]
            out.append((f"{part.name} ({k}/{len(part.jobs)})", RunConfig.from_mapping(_composed(overrides))))
    return out


def run_batched(model: Sequence[str], extra: Sequence[str]) -> int:
    """``experiment=paper batch=true``: every run at once in shared batch rounds (a run folder that
    exists is resumed); each run's folder as when run alone."""
    import asyncio
    import sys

    from react_bench.shared_rounds import resumable, run_together

    jobs = jobs_of(model, extra)
    cfgs = [resumable(cfg) for _, cfg in jobs]
    budget = next((cfg.max_cost_usd for cfg in cfgs if cfg.max_cost_usd is not None), None)
    results = asyncio.run(run_together(cfgs, sys.stdout, max_cost_usd=budget))
    worst = 0
    for result in results:
        if isinstance(result, BaseException) or (result.summary is not None and result.summary.errors):
            worst = 3
    return worst
