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
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from react_bench.errors import ConfigError
from react_bench.events import AgentEvent, RunProgress
from react_bench.metrics import protocol_fingerprint
from react_bench.models import capabilities_to_dict, make_model
from react_bench.models.base import ModelClient
from react_bench.models.capabilities import calls_cost_usd
from react_bench.models.replay import CassetteKind, RecordingModel, cassette_line, example_scope
from react_bench.modes import MODE_SPECS, Outcome, Solver
from react_bench.prompts import PromptSpec, load_prompt
from react_bench.results import summarize
from react_bench.runconfig import RunConfig
from react_bench.tasks import Example, load_task
from react_bench.types import ModelResponse

# Settings that cannot change an answer: left out of the fingerprint, so a run may be resumed
# with a longer timeout or more threads. Everything else (model file, seed, wiki) is in it.
OPERATIONAL_KEYS = frozenset(
    {
        "label",
        "default_n",
        "max_retries",
        "timeout_s",
        "n_threads",
        "n_threads_batch",
        "user_agent",
        "max_attempts",
        "backoff_s",
        "store",
        "script",
    }  # a scripted model (a test tool) continues a resumed run from a new script
)


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]
    n_new: int


def run_dir_for(cfg: RunConfig, run_id: str) -> Path:
    s = cfg.solve
    return cfg.results_dir / cfg.task.name / _safe(cfg.model_label) / f"{s.mode}-{s.runner}" / run_id


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


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
    prompts = {}
    for key in keys:
        foreign = cfg.prompt_file is not None and key in foreign_keys
        prompts[key] = load_prompt(cfg.task.name, key, cfg.prompt_file if foreign else None, cfg.prompt_key)
    return prompts


async def evaluate(
    cfg: RunConfig, out: TextIO = sys.stdout, on_event: Callable[[AgentEvent], None] | None = None
) -> RunResult:
    task = load_task(cfg.task.name)
    examples = task.examples(cfg.task)
    if task.coverage is not None and task.coverage.found < task.coverage.requested:
        print(f"coverage: {task.coverage.summary()}", file=out)
    model = RecordingModel(make_model(cfg.model))
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
    run_id = cfg.run_id or dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    run_dir = run_dir_for(cfg, run_id)
    done = _prepare_run_dir(run_dir, cfg, fingerprint)
    header = {
        "run_id": run_id,
        "fingerprint": fingerprint,
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "config": _jsonable(asdict(cfg)),
        "model_name": model.name,
        "model_capabilities": capabilities_to_dict(model.capabilities),
        "not_applied": not_applied,
        "prompts": {k: {"source": p.source, "sha256": p.sha256} for k, p in prompts.items()},
        "n_examples": len(examples),
        "coverage": _jsonable(asdict(task.coverage)) if task.coverage is not None else None,
        "example_ids": [e.id for e in examples],
    }
    if not done:
        (run_dir / "run.json").write_text(json.dumps(header, indent=2) + "\n", encoding="utf-8")
    for line in header["not_applied"]:
        print(f"note: {model.name} does not take {line}; the run records it as not applied", file=out)
    todo = [e for e in examples if e.id not in done]
    try:
        n_new = await _run_examples(cfg, task, solver, todo, run_dir, len(done), len(examples), out, on_event)
    finally:
        if env_factory is not None:
            env_factory.close()
    metrics = summarize(run_dir, task)
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    return RunResult(run_dir, metrics, n_new)


def _prepare_run_dir(run_dir: Path, cfg: RunConfig, fingerprint: str) -> set[str]:
    """Create the run folder; on resume, return the ids already finished there."""
    if run_dir.exists() and any(run_dir.iterdir()):
        if not cfg.resume:
            raise ConfigError(f"{run_dir} exists; add resume=true to continue it, or choose another run_id")
        recorded = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        if recorded["fingerprint"] != fingerprint:
            raise ConfigError(f"{run_dir} was run with another protocol (fingerprint differs); refusing to mix")
        return _finished_ids(run_dir / "examples.jsonl", run_dir / "calls.jsonl")
    run_dir.mkdir(parents=True, exist_ok=True)
    return set()


def _finished_ids(examples: Path, calls: Path) -> set[str]:
    """Ids with a complete line in BOTH files; both files are cut back to exactly those.

    A crash can cut a line, or fall between an example's record and its cassette line; such
    an example is run again, so it must leave neither file (else it would count twice in the
    metrics, or the cassette would hold it twice or glued to the next line).
    """
    kept_examples, kept_calls = _complete_lines(examples), _complete_lines(calls)
    done = set(kept_examples) & set(kept_calls)
    for path, kept in ((examples, kept_examples), (calls, kept_calls)):
        content = b"".join(raw for id_, raw in kept.items() if id_ in done)
        if path.exists() and path.read_bytes() != content:
            tmp = path.with_suffix(".jsonl.tmp")
            tmp.write_bytes(content)
            os.replace(tmp, path)  # a crash now leaves the old file or the new, never half
    return done


def _complete_lines(path: Path) -> dict[str, bytes]:
    """The newline-terminated JSON lines of ``path`` by id, up to the first damaged one."""
    lines: dict[str, bytes] = {}
    if not path.exists():
        return lines
    with path.open("rb") as f:
        for raw in f:
            try:
                if not raw.endswith(b"\n"):
                    raise ValueError("no newline")
                lines[str(json.loads(raw)["id"])] = raw
            except (ValueError, KeyError, TypeError):
                break  # a line cut by a crash: drop it and everything after
    return lines


async def _run_examples(cfg, task, solver, todo, run_dir, n_done, n_total, out, on_event) -> int:
    from tqdm import tqdm

    semaphore = asyncio.Semaphore(cfg.concurrency)
    write_lock = asyncio.Lock()
    cassette_kind: CassetteKind = "completions" if cfg.solve.runner == "text" else "responses"
    bar = tqdm(
        total=n_total,
        initial=n_done,
        desc=f"{cfg.task.name} {cfg.solve.mode}",
        unit="ex",
        file=out,
        disable=not cfg.progress,
        dynamic_ncols=True,
    )
    finished = 0

    async def one(example: Example) -> None:
        nonlocal finished
        async with semaphore:
            with example_scope(example.id) as calls:
                outcome = await solver.solve(example.question, on_event)
            scores = task.score(outcome.prediction, example.gold)
            record = example_record(example, outcome, scores, task.primary_metric)
            usages = [c.usage for c in calls if isinstance(c, ModelResponse)]
            record["cost_usd"] = calls_cost_usd(solver.model.name, usages)  # None: a price is unknown
            async with write_lock:
                _append(run_dir / "examples.jsonl", record)
                _append(run_dir / "calls.jsonl", cassette_line(example.id, calls, cassette_kind))
                finished += 1
                bar.update(1)
                if on_event is not None:
                    on_event(RunProgress(n_done + finished, n_total, example.id))

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
        "samples": outcome.samples,
        "vote": asdict(outcome.vote) if outcome.vote else None,
        "metadata": _jsonable(example.metadata),
        "trajectory": outcome.episodes,
    }


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
