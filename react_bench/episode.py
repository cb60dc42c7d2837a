"""One example solved, wherever it runs: in the run's own process or on a Ray worker (``executors/ray.py``).

``build_solver`` builds what solving needs from a ``RunConfig`` (the task's prompts, its
environment factory, the ``methods.core.Solver`` over a model stack); ``evaluate.Run.prepare`` and
each Ray worker call it, so a worker solves exactly as the run's own process would.
``solve_example`` runs one example inside its recording and counting scopes and returns a
``Solved``: the outcome with everything the writer needs about the example's calls (the
responses and failures in order, the layers' counts, which responses the request cache
served, the events seen, the example's timeline). The writer itself (``examples.jsonl``, the budget, the progress bar)
stays with the run's process: ``evaluate`` turns a ``Solved`` into the example's lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from react_bench.environment import EnvFactory
from react_bench.errors import ConfigError
from react_bench.events import AgentEvent
from react_bench.methods.core import Outcome, Solver
from react_bench.methods.registry import get_method
from react_bench.models.base import ATTEMPT
from react_bench.models.counting import Counts, counting_scope
from react_bench.models.replay import Recorded, example_scope
from react_bench.prompts import PAPER_SOURCE, PaperPrompts, PromptSpec, load_instruction, with_shots
from react_bench.runconfig import RunConfig
from react_bench.tasks import Example, Task, load_task
from react_bench.timeline import Timeline, timeline_scope

Sink = Callable[[AgentEvent], None]


@dataclass
class Solved:
    """One example's outcome, its calls (responses and failures, in order), the model layers'
    counts (``Counts``: retries, cache hits and misses, cache write failures, the ids of the
    responses the request cache served), its wall time, and, from a Ray worker, the events it
    emitted."""

    outcome: Outcome
    calls: list[Recorded]
    counts: Counts
    wall_s: float
    events: list[AgentEvent] = field(default_factory=list)
    worker: str | None = None  # the Ray node and process that solved it; None: the run's own process
    timeline: Timeline | None = None  # when its calls, tools and stages happened (None: not kept)


async def solve_example(solver: Solver, example: Example, sink: Sink | None = None) -> Solved:
    started = time.monotonic()
    attempt = ATTEMPT.set(example.epoch)
    try:
        with example_scope(example.id, example.epoch) as calls, counting_scope() as counts, timeline_scope() as times:
            outcome = await solver.solve(example, sink)
    finally:
        ATTEMPT.reset(attempt)
    return Solved(outcome, calls, counts, time.monotonic() - started, timeline=times)


def text_shots(cfg: RunConfig) -> int | None:
    """The text runner's ``shots`` (the tool-use runner takes its own): as set; unset, 0 for a
    fine-tuned model (``model.finetuned_on``), which is sent the bare format its ``paper`` rows
    were made of, and None (the whole prompt) for the others."""
    if cfg.solve.runner != "text":
        return None
    if cfg.solve.shots is None and getattr(cfg.model, "finetuned_on", None):
        return 0
    return cfg.solve.shots


def build_prompts(cfg: RunConfig, task: Task | None = None) -> dict[str, PromptSpec]:
    task = task if task is not None else load_task(cfg.task.name)
    method = get_method(cfg.solve.mode)
    keys = method.spec.prompt_keys(cfg.solve.runner)
    foreign_keys = [k for k in keys if k in method.spec.prompt_keys("text")]  # prompt.file: text exemplars
    if cfg.prompt_file is not None and len(foreign_keys) > 1:
        raise ConfigError(f"prompt.file gives one prompt; mode {cfg.solve.mode} needs {list(keys)}")
    instruction = None
    if cfg.instruction_file is not None:
        if cfg.prompt_file is None:
            raise ConfigError("prompt.instruction_file goes with prompt.file (the exemplars it introduces)")
        instruction = load_instruction(cfg.instruction_file, cfg.instruction_key)
    prompts = {}
    for key in keys:
        paper = paper_prompt(task, key, cfg.prompt_pair) if cfg.prompt_source == "paper" else None
        foreign = cfg.prompt_file is not None and key in foreign_keys
        file = cfg.prompt_file if foreign else None
        prompts[key] = paper or task.prompt(
            key, file, cfg.prompt_key, instruction if foreign else None, cfg.prompt_pair
        )
    shots = text_shots(cfg)
    if shots is not None:
        starts = task.text_format().exemplar_starts
        prompts = {key: with_shots(prompt, shots, starts) for key, prompt in prompts.items()}
    prompts.update(method.extra_prompts(task.info.name))  # (a reflection's, a value's: in the fingerprint too)
    return prompts


def not_the_papers(cfg: RunConfig, prompts: dict[str, PromptSpec]) -> list[str]:
    """Under ``prompt=paper``, one line per prompt the paper published none of (the project's own is sent)."""
    if cfg.prompt_source != "paper":
        return []
    return [
        f"prompt=paper: the paper published no {key} prompt for task={cfg.task.name} mode={cfg.solve.mode} "
        f"runner={cfg.solve.runner}; the project's own is sent ({prompt.source}), as run.json records"
        for key, prompt in prompts.items()
        if not prompt.source.startswith(PAPER_SOURCE)
    ]


def paper_prompt(task: Task, style: str, pair: tuple[int, int] | None = None) -> PromptSpec | None:
    """``task``'s prompt of ``style`` from the paper's own files (``prompt=paper``); None where the
    paper published none. Fetched on first use (``react_bench.upstream``); the source names the
    pinned files, e.g. ``paper: ysymyth/ReAct@6bdb3a1:prompts/prompts_naive.json#webthink_simple6``."""
    from react_bench import upstream

    paper: PaperPrompts | None = getattr(task.info, "paper_prompts", None)
    if paper is None or style not in paper.styles:
        return None
    instruction = upstream.text(paper.instruction) if paper.instruction else paper.instruction
    after = f" + {upstream.texts()[paper.instruction].label}" if paper.instruction else ""
    if style in paper.texts:
        label = upstream.texts()[paper.texts[style]].label
        return PromptSpec(instruction or "", upstream.text(paper.texts[style]), f"{PAPER_SOURCE}{label}{after}")
    assert paper.file is not None
    path = upstream.fetch(paper.file)
    made: PromptSpec = task.prompt(style, str(path), paper.keys[style], instruction, pair)
    label = made.source.replace(str(path), upstream.pinned(paper.file).label)
    return replace(made, source=f"{PAPER_SOURCE}{label}{after}")


def env_config(cfg: RunConfig, task: Task) -> Any:
    """The run's environment config (the task's default where the run gives none)."""
    return cfg.env if cfg.env is not None or task.env_group is None else task.env_config({}, cfg.protocol)


def build_solver(
    cfg: RunConfig, task: Task, env: Any, model: Any
) -> tuple[dict[str, PromptSpec], EnvFactory | None, Solver]:
    """The prompts, the environment factory (None for the modes that need none) and the solver."""
    method = get_method(cfg.solve.mode)  # (its settings were settled and checked with the config)
    prompts = build_prompts(cfg, task)
    env_factory = task.environment(cfg.task, env) if method.spec.needs_env else None
    primary = task.info.primary_metric

    def grade(example: Example, outcome: Outcome) -> bool:  # the task's own score: right or not
        return task.score(outcome.prediction, example.gold, outcome.reward)[primary] >= 1.0

    second = method.judge(cfg.solve)
    judge = judge_model(second, cfg) if second is not None else None
    solver = Solver(cfg.solve, model, prompts, env_factory, task.text_format(), grade=grade, judge=judge, method=method)
    return prompts, env_factory, solver


def judge_model(name: str, cfg: RunConfig) -> Any:
    """A method's second model (``Method.judge``, e.g. ``reflexion.judge=<name>``): the model of
    ``configs/model/<name>.yaml``,
    with the run's request cache and recording (its calls are the example's, in the cassette)."""
    from react_bench.models import build_stack
    from react_bench.models.stack import ModelSpec
    from react_bench.paths import model_file

    spec = ModelSpec.from_mapping(model_file(name, "reflexion.judge"))
    return build_stack(spec, request_cache=cfg.request_cache, sends=not cfg.dry_run).top
