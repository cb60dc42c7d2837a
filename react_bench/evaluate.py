"""One run: examples -> modes -> scores -> ``results/<task>/<model>/<mode>-<runner>/<run id>/``.

Files of a run (see ``results.py`` for reading them back):
- ``run.json``: the resolved config, the protocol fingerprint, the settings the model did
  not take (``not_applied``), the model's capabilities; written before the first example.
- ``examples.jsonl``: one line per finished example, appended and flushed as it finishes,
  so a crash loses at most the examples in flight.
- ``calls.jsonl``: the cassette, one line per finished example (``models.replay``).
- ``metrics.json``: written at the end, and printed as a short table.

``resume=true`` with ``run_id=...`` continues a run: finished ids are skipped, and a run
whose fingerprint differs is refused rather than mixed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from react_bench import rundir
from react_bench.console import ProgressBar, TrajectoryPrinter
from react_bench.errors import ConfigError
from react_bench.events import AgentEvent, RunProgress
from react_bench.metrics import protocol_fingerprint
from react_bench.models import capabilities_to_dict, make_model
from react_bench.models.base import ModelClient
from react_bench.models.cache import CachedModel
from react_bench.models.capabilities import calls_cost_usd
from react_bench.models.counting import counting_scope
from react_bench.models.replay import CassetteKind, RecordingModel, cassette_line, example_scope
from react_bench.modes import MODE_SPECS, Outcome, Solver
from react_bench.prompts import PromptSpec, load_instruction, load_prompt
from react_bench.results import summarize
from react_bench.runconfig import OPERATIONAL_KEYS, RunConfig
from react_bench.tasks import Example, load_task
from react_bench.types import ModelResponse


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]
    n_new: int


def run_dir_for(cfg: RunConfig, run_id: str) -> Path:
    s = cfg.solve
    return rundir.run_dir_path(cfg.results_dir, cfg.task.name, cfg.model_label, s.mode, s.runner, run_id)


def with_request_cache(model: ModelClient, cfg: RunConfig) -> ModelClient:
    """The on-disk request cache around models worth caching (not the scripted or replay ones)."""
    if cfg.request_cache == "off" or cfg.model.get("provider") not in ("anthropic", "openai", "local"):
        return model
    return CachedModel(model, mode=cfg.request_cache)


def not_applied_settings(model: ModelClient, solver: Solver) -> list[str]:
    """Protocol settings this model will not take (recorded, never silently assumed): asked
    of the model for the first request of every kind the mode's policies send."""
    dropped: list[str] = []
    for request in solver.probe_requests():
        dropped += [d for d in model.not_applied(request) if d not in dropped]
    return dropped


def build_prompts(cfg: RunConfig) -> dict[str, PromptSpec]:
    keys = MODE_SPECS[cfg.solve.mode].prompt_keys(cfg.solve.runner)
    foreign_keys = [k for k in keys if k in ("react", "act", "cot", "standard")]
    if cfg.prompt_file is not None and len(foreign_keys) > 1:
        raise ConfigError(f"prompt.file gives one prompt; mode {cfg.solve.mode} needs {list(keys)}")
    instruction = None
    if cfg.instruction_file is not None:
        if cfg.prompt_file is None:
            raise ConfigError("prompt.instruction_file goes with prompt.file (the exemplars it introduces)")
        instruction = load_instruction(cfg.instruction_file, cfg.instruction_key)
    prompts = {}
    for key in keys:
        foreign = cfg.prompt_file is not None and key in foreign_keys
        file = cfg.prompt_file if foreign else None
        prompts[key] = load_prompt(cfg.task.name, key, file, cfg.prompt_key, instruction if foreign else None)
    return prompts


EventSink = Callable[[str, AgentEvent], None]  # (example id, event)


async def evaluate(cfg: RunConfig, out: TextIO = sys.stdout, on_event: EventSink | None = None) -> RunResult:
    """Run ``cfg``. ``on_event`` receives every AgentEvent of every example with the example's
    id, as it happens (``console.TrajectoryPrinter`` shows them), and a ``RunProgress`` when
    an example has been written."""
    task = load_task(cfg.task.name)
    examples = task.examples(cfg.task)
    if task.coverage is not None and task.coverage.found < task.coverage.requested:
        print(f"coverage: {task.coverage.summary()}", file=out)
    model = RecordingModel(with_request_cache(make_model(cfg.model), cfg))
    prompts = build_prompts(cfg)
    env_factory = None
    if MODE_SPECS[cfg.solve.mode].needs_env:
        from react_bench.tasks import resolve_data_dir
        from react_bench.wiki import make_env_factory

        env_factory = make_env_factory(cfg.wiki, task=cfg.task.name, data_dir=resolve_data_dir(cfg.task.data_dir))
    solver = Solver(cfg.solve, model, prompts, env_factory)
    not_applied = not_applied_settings(model, solver)
    settings = {
        "protocol": cfg.protocol,
        "solve": _jsonable(asdict(cfg.solve)),
        "task": cfg.task.name,
        "split": cfg.task.split,
        "not_applied": not_applied,  # a protocol setting the model refused changes the protocol
        "model": {k: v for k, v in cfg.model.items() if k not in OPERATIONAL_KEYS},
        "wiki": {k: v for k, v in asdict(cfg.wiki).items() if k not in OPERATIONAL_KEYS} if env_factory else None,
    }
    fingerprint = protocol_fingerprint([e.id for e in examples], {k: p.sha256 for k, p in prompts.items()}, settings)
    run_id = cfg.run_id or new_run_id()
    run_dir = run_dir_for(cfg, run_id)
    done = rundir.prepare(run_dir, resume=cfg.resume, retry_errors=cfg.retry_errors, fingerprint=fingerprint)
    header = {
        "run_id": run_id,
        "fingerprint": fingerprint,
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "config": _jsonable(asdict(cfg)),
        "composed": cfg.composed,  # the settings as composed: what resume and replay start from
        "model_name": model.name,
        "model_capabilities": capabilities_to_dict(model.capabilities),
        "not_applied": not_applied,
        "prompts": {k: {"source": p.source, "sha256": p.sha256} for k, p in prompts.items()},
        "n_examples": len(examples),
        "coverage": _jsonable(asdict(task.coverage)) if task.coverage is not None else None,
        "example_ids": [e.id for e in examples],
    }
    if not (run_dir / rundir.RUN_JSON).exists():
        rundir.write_json(run_dir / rundir.RUN_JSON, header)
    for line in header["not_applied"]:
        print(f"note: {model.name} does not take {line}; the run records it as not applied", file=out)
    todo = [e for e in examples if e.id not in done]
    try:
        n_new = await _run_examples(cfg, task, solver, todo, run_dir, len(done), len(examples), out, on_event)
    finally:
        if env_factory is not None:
            env_factory.close()
        close = getattr(model, "aclose", None)  # the HTTP client of a network model
        if close is not None:
            await close()
    metrics = summarize(run_dir, task)
    rundir.write_json(run_dir / rundir.METRICS, metrics)
    return RunResult(run_dir, metrics, n_new)


def new_run_id() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")


async def _run_examples(cfg, task, solver, todo, run_dir, n_done, n_total, out, on_event) -> int:
    semaphore = asyncio.Semaphore(cfg.concurrency)
    write_lock = asyncio.Lock()
    cassette_kind: CassetteKind = "completions" if cfg.solve.runner == "text" else "responses"
    enabled = cfg.progress and cfg.show != "none"
    bar = ProgressBar(f"{cfg.task.name} {cfg.solve.mode}", n_total, n_done, out, enabled=enabled)
    if cfg.show == "trajectories":
        printer = TrajectoryPrinter(bar.write, prefix_ids=cfg.concurrency > 1)
        user_sink = on_event

        def on_event(example_id: str, event: AgentEvent) -> None:
            printer(example_id, event)
            if user_sink is not None:
                user_sink(example_id, event)

    finished = 0

    async def one(example: Example) -> None:
        nonlocal finished
        async with semaphore:
            sink = None if on_event is None else functools.partial(on_event, example.id)
            with example_scope(example.id) as calls, counting_scope() as (counts, cached):
                outcome = await solver.solve(example.question, sink)
            scores = task.score(outcome.prediction, example.gold)
            record = example_record(example, outcome, scores, task.primary_metric)
            record["retries"] = counts["retries"]  # transient faults survived (models.retrying)
            record["request_cache"] = {"hits": counts["cache_hits"], "misses": counts["cache_misses"]}
            # a response served from the request cache was paid for by an earlier run
            usages = [c.usage for c in calls if isinstance(c, ModelResponse) and c.id not in cached]
            record["cost_usd"] = calls_cost_usd(solver.model.name, usages)  # None: a price is unknown
            async with write_lock:
                rundir.append(run_dir / rundir.EXAMPLES, record)
                rundir.append(run_dir / rundir.CALLS, cassette_line(example.id, calls, cassette_kind))
                finished += 1
                bar.update(record)
                if on_event is not None:
                    progress = RunProgress(n_done + finished, n_total, example.id, outcome.prediction,
                                           record["correct"], outcome.reason)  # fmt: skip
                    on_event(example.id, progress)

    try:
        # A TaskGroup cancels and awaits the examples in flight if one raises (a bug of ours),
        # so nothing still uses the wiki when the run closes it.
        try:
            async with asyncio.TaskGroup() as group:
                for example in todo:
                    group.create_task(one(example))
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
    finally:
        bar.close()
    return finished


def example_record(example: Example, outcome: Outcome, scores: dict[str, float], primary_metric: str) -> dict[str, Any]:
    return {
        "id": example.id,
        "question": example.question,
        "gold": example.gold,
        "prediction": outcome.prediction,
        "correct": scores[primary_metric] >= 1.0,  # HotpotQA: EM; FEVER: label accuracy
        **scores,
        "steps": outcome.steps,
        "reason": outcome.reason,
        "route": outcome.route,
        "backoff": outcome.backoff,
        "error": outcome.error,
        "usage": outcome.usage.to_dict(),
        "calls": outcome.stats.calls,
        "bad_calls": outcome.stats.bad_calls,
        "repairs": outcome.stats.repairs,
        "replaced_chars": outcome.stats.replaced_chars,
        "samples": outcome.samples,
        "vote": asdict(outcome.vote) if outcome.vote else None,
        "metadata": _jsonable(example.metadata),
        "trajectory": outcome.episodes,
    }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
