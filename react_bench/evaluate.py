"""One run: examples -> modes -> scores -> ``results/<task>/<model>/<mode>-<runner>/<run id>/``.

Files of a run (see ``results.py`` for reading them back):
- ``run.json``: the resolved config, the protocol fingerprint, the settings the model did
  not take (``not_applied``), the model's capabilities, the endpoint its requests went to (a
  host, never a key) and the SDK's version; written before the first example.
- ``examples.jsonl``: one line per finished example, appended and fsynced as it finishes
  (group commits off the event loop: ``rundir.RunWriter``), so a crash loses at most the
  examples in flight; an example counts as finished only once its lines are on disk.
- ``calls.jsonl``: the cassette, one line per finished example (``models.replay``).
- ``metrics.json``: written at the end, and printed as a short table.

``resume=true`` with ``run_id=...`` continues a run: finished ids are skipped, and a run
whose fingerprint differs is refused rather than mixed.

A ``Run`` is prepared once (examples, the model stack of ``models.build_stack``, prompts, the
task's environment and text format, the solver, the fingerprint, the folder) and then
executed, or dry-run (``dry_run=true``: no model call), its single calls prefetched through
the Batches API first where ``batch=true``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import gc
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from react_bench import rundir
from react_bench.console import ProgressBar, TrajectoryPrinter
from react_bench.environment import EnvFactory
from react_bench.episode import Solved, build_solver, env_config, not_the_papers
from react_bench.errors import ConfigError
from react_bench.estimate import Budget
from react_bench.events import AgentEvent, MethodStage, RunProgress, StepStarted
from react_bench.executors import start_executor
from react_bench.executors.base import Executor
from react_bench.executors.rounds import Ticket
from react_bench.methods.core import Outcome, Solver
from react_bench.methods.registry import get_method
from react_bench.metrics import protocol_fingerprint
from react_bench.models import ModelStack, build_stack, capabilities_to_dict
from react_bench.models.base import ModelClient, endpoint_host, operational
from react_bench.models.capabilities import calls_cost_usd, cost_usd
from react_bench.models.replay import CassetteKind, attempt_key, cassette_line
from react_bench.models.stack import route_of
from react_bench.prompts import PromptSpec
from react_bench.record import ExampleRecord, RunMetrics
from react_bench.redact import redacted, route_signature
from react_bench.results import summarize
from react_bench.runconfig import MAX_CONCURRENCY, RunConfig
from react_bench.runners.common import DELTAS
from react_bench.tasks import Example, Task, load_task
from react_bench.types import ModelResponse, Usage


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    summary: RunMetrics | None  # typed (None: a dry run, which writes dry_run.json instead)
    n_new: int
    judged: Any = None  # judge=: what the judging did (grading.judge.Judged)

    @property
    def metrics(self) -> dict[str, Any]:
        """The metrics as ``metrics.json`` holds them (plain data, for notebooks and JSON tools)."""
        return {} if self.summary is None else self.summary.to_dict()

    @property
    def n_over_budget(self) -> int:
        """Examples not started because ``max_cost_usd`` would have been passed."""
        return 0 if self.summary is None else self.summary.over_budget


def run_dir_for(cfg: RunConfig, run_id: str) -> Path:
    """The run's folder: the one being resumed (wherever it lies), else the results layout's."""
    if cfg.run_dir is not None:
        return cfg.run_dir
    s = cfg.solve
    return rundir.run_dir_path(cfg.results_dir, cfg.task.name, cfg.model.display_label, s.mode, s.runner, run_id)


def not_applied_settings(model: ModelClient, solver: Solver) -> list[str]:
    """Protocol settings this model will not take (recorded, never silently assumed): asked
    of the model for the first request of every kind the mode's policies send."""
    dropped: list[str] = []
    for request in solver.probe_requests():
        dropped += [d for d in model.not_applied(request) if d not in dropped]
    return dropped


EventSink = Callable[[str, AgentEvent], None]  # (example id, event)


async def evaluate(
    cfg: RunConfig,
    out: TextIO = sys.stdout,
    on_event: EventSink | None = None,
    model: ModelClient | None = None,
    deltas: bool = True,
    ticket: Ticket | None = None,
) -> RunResult:
    """Run ``cfg``. ``on_event`` receives every AgentEvent of every example with the example's
    id, as it happens (``console.TrajectoryPrinter`` shows them), and a ``RunProgress`` when
    an example has been written; ``deltas=False``: without the model's text and thinking
    fragments (``AssistantTextDelta`` / ``AssistantThinkingDelta``), for a sink that wants the
    steps and the progress only (they are then never produced). ``model``: a client built by
    the caller (a notebook's or a benchmark's own) instead of the one ``cfg.model`` names;
    ``cfg.model`` still names it in the results, and the run's layers (request cache,
    recording) go around it. ``ticket``: the run's place in a study's shared batch rounds
    (``shared_rounds``; ``batch=true``), closed however the run ends."""
    try:
        run = Run.prepare(cfg, out, model)
        try:
            if cfg.dry_run:
                return run.dry_run()
            return await run.execute(on_event, deltas, ticket)
        finally:
            await run.aclose()
    finally:
        if ticket is not None:
            ticket.close()


@dataclass
class Run:
    """One run, prepared once (examples, model stack, prompts, environment, solver, fingerprint,
    folder), then executed, dry-run, or prefetched through the Batches API first."""

    cfg: RunConfig
    task: Task
    examples: list[Example]
    stack: ModelStack
    prompts: dict[str, PromptSpec]
    env_factory: EnvFactory | None
    solver: Solver
    not_applied: list[str]
    fingerprint: str
    run_id: str
    run_dir: Path
    out: TextIO

    @property
    def model(self) -> ModelClient:
        return self.stack.top

    @classmethod
    def prepare(cls, cfg: RunConfig, out: TextIO = sys.stdout, model: ModelClient | None = None) -> Run:
        if cfg.executor == "ray" and model is not None and not cfg.dry_run:
            raise ConfigError(
                "executor=ray builds the model on each worker from cfg.model; a client built by "
                "the caller cannot be sent there (use executor=local)"
            )
        if cfg.judge.kind == "judge" and not cfg.dry_run:  # a judge that cannot be asked: said before any example
            from react_bench.grading.judge import check_judge

            check_judge(cfg.judge)
        task = load_task(cfg.task.name)
        env = env_config(cfg, task)
        examples = task.examples(cfg.task, env)
        if task.coverage is not None and (task.coverage.found < task.coverage.requested or task.coverage.left_out):
            print(f"coverage: {task.coverage.summary()}", file=out)
        for line in task.data_notes(cfg.task, env, examples) if not cfg.dry_run else ():
            print(f"note: {line}", file=out)
        loading = cfg.model.provider == "local" and model is None and cfg.show != "none"
        if loading:  # the embedded model loads here (seconds); the first answer may take minutes more
            print(f"loading the local model {cfg.model.display_label} ...", file=out, flush=True)
        started = time.monotonic()
        stack = build_stack(cfg.model, request_cache=cfg.request_cache, client=model, sends=not cfg.dry_run)
        if loading:
            print(
                f"model loaded in {time.monotonic() - started:.1f} s; each step of an episode is a model call "
                "(the bar shows the step in progress)",
                file=out,
                flush=True,
            )
        prompts, env_factory, solver = build_solver(cfg, task, env, stack.top)
        for line in not_the_papers(cfg, prompts) if cfg.show != "none" else ():
            print(f"note: {line}", file=out)
        not_applied = not_applied_settings(stack.top, solver)
        settings = {
            "protocol": cfg.protocol,
            "solve": _solve_fingerprint(cfg.solve),
            "task": cfg.task.name,
            "split": cfg.task.split,
            "not_applied": not_applied,  # a protocol setting the model refused changes the protocol
            "model": _jsonable(cfg.model.fingerprint()),
            "env": _env_settings(env) if env_factory else None,
        }
        if cfg.epochs > 1:  # (a run of one attempt keeps the fingerprint runs have always had)
            settings["epochs"] = cfg.epochs
        ids = [e.id for e in examples]
        fingerprint = protocol_fingerprint(ids, {k: p.sha256 for k, p in prompts.items()}, settings)
        run_id = cfg.run_id or new_run_id(cfg)
        run = cls(
            cfg,
            task,
            examples,
            stack,
            prompts,
            env_factory,
            solver,
            not_applied,
            fingerprint,
            run_id,
            run_dir_for(cfg, run_id),
            out,
        )
        kind: CassetteKind = "completions" if cfg.solve.runner == "text" else "responses"
        solver.method.open_run(solver, run.run_dir, kind)  # its own files (Reflexion's trial log)
        if cfg.batch:
            from react_bench.executors.rounds import batch_client

            # a clear error before anything is written; the prompt cache outlives the minutes
            # between rounds (cache_ttl=auto)
            batch_client(stack)[1].for_rounds()
        return run

    async def aclose(self) -> None:
        if self.env_factory is not None:
            self.env_factory.close()
        if self.solver.judge is not self.model:  # Reflexion's judge of another model: its own client
            await self.solver.judge.aclose()
        await self.stack.aclose()

    def header(self) -> dict[str, Any]:
        """run.json: written before the first example."""
        cfg, model, task = self.cfg, self.model, self.task
        return {
            "run_id": self.run_id,
            "fingerprint": self.fingerprint,
            "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            # URL credentials never reach the folder (resume takes the endpoint from the user's config)
            "config": redacted(_run_json_config(cfg)),
            "composed": redacted(cfg.composed),  # the settings as composed: what resume and replay start from
            # this user's signature of where the requests go and which variable holds the key:
            # resume keeps a route only this user chose (runconfig.own_route)
            "route_signature": route_signature(route_of(redacted(cfg.composed.get("model") or {})))
            if cfg.composed
            else None,
            "model_name": model.name,
            "endpoint": endpoint_host(self.stack.client),  # host[:port] the requests went to; None: no server
            "sdk": self.stack.client.sdk,
            "model_capabilities": capabilities_to_dict(model.capabilities),
            "not_applied": self.not_applied,
            "prompts": {k: {"source": p.source, "sha256": p.sha256} for k, p in self.prompts.items()},
            "n_examples": len(self.examples),
            "epochs": self.cfg.epochs,
            "coverage": _jsonable(asdict(task.coverage)) if task.coverage is not None else None,
            "example_ids": [e.id for e in self.examples],
        }

    async def execute(
        self, on_event: EventSink | None = None, deltas: bool = True, ticket: Ticket | None = None
    ) -> RunResult:
        cfg, run_dir = self.cfg, self.run_dir
        done = rundir.prepare(run_dir, resume=cfg.resume, retry_errors=cfg.retry_errors, fingerprint=self.fingerprint)
        try:
            return await self._execute(done, on_event, deltas, ticket)
        finally:
            rundir.release(run_dir)  # the folder is free for the next process

    async def _execute(
        self, done: set[rundir.Attempt], on_event: EventSink | None, deltas: bool, ticket: Ticket | None
    ) -> RunResult:
        cfg, run_dir = self.cfg, self.run_dir
        if not (run_dir / rundir.RUN_JSON).exists():
            rundir.write_json(run_dir / rundir.RUN_JSON, self.header())
        for line in self.not_applied:
            print(f"note: {self.model.name} does not take {line}; the run records it as not applied", file=self.out)
        todo = [a for a in self.attempts() if a.key not in done]
        executor = await self.executor(todo, events=on_event is not None or cfg.show == "trajectories", ticket=ticket)
        try:
            await executor.prepare(todo)
            budget = None
            if cfg.max_cost_usd is not None and todo:
                budget = Budget.start(
                    cfg.max_cost_usd,
                    self.model.name,
                    self.solver,
                    run_dir,
                    todo[0].question,
                    _caching(cfg),
                    batch=cfg.batch,
                )
                model_name = self.model.name
                executor.limit_cost(cfg.max_cost_usd, budget.spent, lambda u: cost_usd(model_name, u))
            tracer = self.tracer() if todo else None
            try:
                n_new = await self._run_examples(todo, executor, len(done), on_event, budget, deltas, tracer)
            finally:
                if tracer is not None:  # what became of the spans: said, and kept in trace.json
                    print(tracer.close().line(), file=self.out)
        finally:
            executor.close()
        over = len(budget.skipped) if budget is not None else 0
        metrics = replace(summarize(run_dir, self.task.info), over_budget=over)
        rundir.write_json(run_dir / rundir.METRICS, metrics.to_dict())
        if cfg.judge.kind is not None:  # the answers read a second time (grading.judge); metrics.json again
            from react_bench.grading.judge import judge_run

            judged = await judge_run(
                run_dir,
                cfg.judge,
                batch=cfg.batch,
                poll_s=cfg.batch_poll_s,
                request_cache=cfg.request_cache,
                out=self.out,
            )
            metrics = replace(summarize(run_dir, self.task.info), over_budget=over)
            return RunResult(run_dir, metrics, n_new, judged)
        return RunResult(run_dir, metrics, n_new)

    def tracer(self) -> Any:
        """The run's ``tracing.live.LiveTrace`` where ``trace.endpoint`` (or the standard OTLP variable)
        names a collector; None (and nothing of OpenTelemetry imported) where none is named."""
        from react_bench.tracing.export import traces_url

        url = traces_url(self.cfg.trace.endpoint)
        if url is None:
            return None
        from react_bench.tracing.live import LiveTrace

        return LiveTrace(url, self.run_dir, self.cfg.trace.content)

    def attempts(self) -> list[Example]:
        """Every example once per epoch, epoch by epoch (``epochs=1``: the examples)."""
        return [replace(e, epoch=k) for k in range(1, self.cfg.epochs + 1) for e in self.examples]

    async def executor(self, todo: list[Example], *, events: bool, ticket: Ticket | None = None) -> Executor:
        """Where the episodes run (``executor=``, ``batch=``; ``react_bench.executors``)."""
        return await start_executor(
            self.cfg, self.solver, self.stack, self.run_dir, self.run_id, self.out, todo, events=events, ticket=ticket
        )

    def dry_run(self) -> RunResult:
        """No model call: the first request as the API would get it, and the run's estimate
        (with ``batch=true``, the batched price and hours beside the live ones)."""
        from react_bench.estimate import ASSUMED_RPM, batch_estimate, estimate_run, wire_request

        cfg, examples, run_dir = self.cfg, self.examples, self.run_dir
        caching, minimum = _caching(cfg)
        questions = [e.question for e in examples]
        estimate = estimate_run(self.solver, questions, caching=caching, minimum=minimum)
        cost = calls_cost_usd(self.model.name, [estimate.usage])
        rundir.prepare(run_dir, resume=False, retry_errors=False, fingerprint="", dry_run=True)
        first = self.solver.probe_requests(examples[0].question)[0] if examples else None
        if first is not None:
            rundir.write_json(run_dir / "dry_run_request.json", wire_request(self.stack.client, first))
        u = estimate.usage
        rpm = self.cfg.model.requests_per_minute
        summary: dict[str, Any] = {
            "examples": len(examples),
            "calls_at_most": estimate.calls,
            "usage": u.to_dict(),
            "cost_usd": cost,
            "hours_at_rpm": estimate.calls / (rpm or ASSUMED_RPM) / 60,
            "rpm": rpm or ASSUMED_RPM,
            "caching": caching,
            "note": "upper bound: every episode runs to the step cap",
        }
        cost_text = "unknown (no price for this model)" if cost is None else f"${cost:.2f}"
        calls_said, bound_said = f"at most {estimate.calls} calls", "an upper bound: every episode to the step cap"
        price = self.solver.method.price
        expected = price.calls_at_most(self.solver)  # the estimate is expected, not the most
        if expected is not None:
            most = len(examples) * expected
            summary.update(
                calls_at_most=most,
                calls_expected=estimate.calls,
                note=f"expected: {price.expected_said(self.solver)} (at most: every call it can make)",
            )
            calls_said = f"about {estimate.calls} calls (at most {most})"
            bound_said = price.expected_said(self.solver)
        lines = [
            f"dry run (no model call): {len(examples)} examples, {calls_said}, about "
            f"{u.total_input_tokens} input tokens ({u.cache_read_input_tokens} read from the prompt cache, "
            f"{u.cache_creation_input_tokens} written) and {'about' if expected is not None else 'at most'} "
            f"{u.output_tokens} output tokens; "
            f"estimated cost {cost_text} ({bound_said}), "
            f"{summary['hours_at_rpm']:.1f} hours at {summary['rpm']:g} requests/minute" + ("" if rpm else " (assumed)")
        ]
        if cfg.batch:
            from react_bench.executors.rounds import batch_client

            long_cache = batch_client(self.stack)[1].cache_ttl == "1h"
            summary["batch"], line = batch_estimate(
                self.solver, questions, self.model.name, caching=caching, minimum=minimum, long_cache=long_cache
            )
            lines.append(line)
        if cfg.judge.kind is not None:
            from react_bench.grading.judge import estimate as judge_estimate

            pairs = [(e.question, e.gold) for e in examples]
            summary["judge"], line = judge_estimate(cfg.judge, pairs, batch=cfg.batch)
            lines.append(line)
        rundir.write_json(run_dir / "dry_run.json", summary)
        lines.append(f"first request: {run_dir / 'dry_run_request.json'}")
        print("\n".join(lines), file=self.out)
        return RunResult(run_dir, None, 0)

    async def _run_examples(
        self,
        todo: list[Example],
        executor: Executor,
        n_done: int,
        on_event: EventSink | None,
        budget: Budget | None,
        deltas: bool,
        tracer: Any = None,
    ) -> int:
        cfg, run_dir, out = self.cfg, self.run_dir, self.out
        deltas = deltas and on_event is not None  # the caller's own sink (on_event is wrapped below)
        n_total = len(self.examples) * cfg.epochs
        concurrency = cfg.concurrency
        if concurrency > MAX_CONCURRENCY:
            print(
                f"note: concurrency={concurrency} is capped at {MAX_CONCURRENCY} examples at once (more meets "
                "every API's rate limits; model.requests_per_minute paces the calls)",
                file=out,
            )
        concurrency = executor.concurrency(min(concurrency, MAX_CONCURRENCY))

        semaphore = asyncio.Semaphore(concurrency)
        writer = rundir.RunWriter(run_dir)
        cassette_kind: CassetteKind = "completions" if cfg.solve.runner == "text" else "responses"
        enabled = cfg.progress and cfg.show != "none"
        bar = ProgressBar(f"{cfg.task.name} {cfg.solve.mode}", n_total, n_done, out, enabled=enabled)
        printer = TrajectoryPrinter(bar.write, prefix_ids=cfg.concurrency > 1) if cfg.show == "trajectories" else None
        if enabled:
            executor.say_through(bar.write)  # its own lines (batch rounds') above the bar

        def heartbeat(example_id: str, event: AgentEvent) -> None:
            if isinstance(event, StepStarted):  # the bar names the step in progress: a long first example
                bar.heartbeat(example_id, event.step)  # is not silence
            elif isinstance(event, MethodStage):  # a method's own stage: Reflexion's trial, LATS's iteration
                bar.stage(example_id, event.what, event.index, event.total)

        # Who reads the events: the trajectory printer, the bar's heartbeat, the caller's own sink.
        sinks = [s for s in (printer, heartbeat if enabled else None, on_event) if s is not None]
        on_event = None if not sinks else (sinks[0] if len(sinks) == 1 else functools.partial(_fan_out, sinks))

        finished = 0
        from react_bench.executors.rounds import OverBudget

        # the ids of the responses from this run's batches (half price); batch rounds add theirs as they come
        batched = executor.batched_ids(run_dir)

        async def one(example: Example) -> None:
            nonlocal finished
            async with semaphore:
                if budget is not None and not await budget.admit(attempt_key(example.id, example.epoch)):
                    return  # left for a resumed run with a larger budget
                sink = None if on_event is None else functools.partial(on_event, example.id)
                if printer is not None:
                    printer.begin(example.id, example.question, example.gold)
                try:
                    solved = await executor.solve(example, sink)
                except OverBudget:  # batch rounds: the budget stopped the rounds before this one finished
                    if budget is not None:
                        await budget.give_up(attempt_key(example.id, example.epoch))
                    return  # left for a resumed run with a larger budget
                record = self.record(example, solved, batched)
                if budget is not None:
                    await budget.done(attempt_key(example.id, example.epoch), record.cost_usd)
                cassette = cassette_line(example.id, solved.calls, cassette_kind, example.epoch)
                lines = rundir.json_line(record.to_dict()), rundir.json_line(cassette)
            # The next example may start while these lines go to disk; this one counts once they are there.
            await writer.write(*lines)
            if tracer is not None:  # its spans, made from its record as written (react_bench.tracing)
                tracer.example(record, cassette)
            finished += 1
            bar.update(record)
            if on_event is not None:
                outcome = solved.outcome
                progress = RunProgress(
                    n_done + finished, n_total, example.id, outcome.prediction, record.correct, outcome.reason
                )
                on_event(example.id, progress)

        # The model's text fragments become events only for a sink that reads them (the examples'
        # tasks take this context when they are created).
        wanted = DELTAS.set(printer is not None or deltas)
        # What the set-up made (the SDK's thousands of classes, the wiki, the data, the prompts) lives
        # as long as the run: frozen, it is not walked by every full collection while the examples
        # run (each walked ~270k objects, ~85 ms: a quarter of a millisecond per model call).
        gc.freeze()
        try:
            # A TaskGroup cancels and awaits the examples in flight if one raises (a bug of ours),
            # so nothing still uses the environment when the run closes it.
            try:
                async with asyncio.TaskGroup() as group:
                    for example in todo:
                        group.create_task(one(example))
            except BaseExceptionGroup as failed:
                raise failed.exceptions[0] from None
        finally:
            gc.unfreeze()  # collectable again once the run is over (a notebook runs many)
            DELTAS.reset(wanted)
            await writer.aclose()
            bar.close()
        return finished

    def record(self, example: Example, solved: Solved, batched: set[str]) -> ExampleRecord:
        """The example's line of examples.jsonl."""
        outcome, counts, calls = solved.outcome, solved.counts, solved.calls
        scores = self.task.score(outcome.prediction, example.gold, outcome.reward)
        sources = call_sources(calls, counts.cached_ids, batched)
        spent, saved = _costs(self.model.name, calls, sources)
        return replace(
            example_record(example, outcome, scores, self.task.info.primary_metric),
            wall_s=round(solved.wall_s, 4),
            retries=counts.retries,
            request_cache={"hits": counts.cache_hits, "misses": counts.cache_misses},
            cache_write_failures=counts.cache_write_failures,
            stop_reasons=stop_reason_counts(calls),
            cost_usd=spent,
            saved_usd=saved,
            worker=solved.worker,
            timeline=timeline_of(solved, sources),
        )


def _fan_out(sinks: list[EventSink], example_id: str, event: AgentEvent) -> None:
    for sink in sinks:
        sink(example_id, event)


def _caching(cfg: RunConfig) -> tuple[bool, int]:
    """Whether the model caches prompts as configured, and its minimum cacheable length."""
    if cfg.model.provider != "anthropic" or not cfg.model.settings.get("prompt_caching", True):
        return False, 0
    from react_bench.models.capabilities import min_cache_tokens

    return True, min_cache_tokens(str(cfg.model.name))


def new_run_id(cfg: RunConfig | None = None) -> str:
    """A UTC timestamp; with ``cfg``, one whose run folder is not taken yet (``-2``, ``-3``, ...
    appended): two runs of one task, model, mode and runner started within the same second
    (e.g. ``context=full`` then ``context=truncate``) each get their own folder."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    if cfg is None:
        return stamp
    run_id, n = stamp, 2
    while run_dir_for(cfg, run_id).exists():
        run_id, n = f"{stamp}-{n}", n + 1
    return run_id


def stop_reason_counts(calls: list[Any]) -> dict[str, int]:
    """How the example's calls stopped (``error`` for a call that failed)."""
    out: Counter[str] = Counter()
    for call in calls:
        if isinstance(call, ModelResponse):
            out[call.stop_reason.value if call.stop_reason else "none"] += 1
        else:
            out["error"] += 1
    return dict(out)


def _costs(model: str, calls: list[Any], sources: list[str]) -> tuple[float | None, float | None]:
    """(spent, saved) by the example's calls in this run, in USD; (None, None) for a model with
    no price, never a silent 0. ``sources``: where each call's response came from (``call_sources``).
    *Spent*: the calls that reached the API; a response of this run's batches at the Batches
    API's half price, once (whether the episode got it from the round or, resumed, from the
    request cache the round wrote). *Saved*: the rest the request cache served (paid for by an
    earlier run, or earlier in this example: the same request asked again), priced as they would
    have been."""
    if cost_usd(model, Usage()) is None:
        return None, None
    by_source: dict[str, list[Usage]] = {"live": [], "batch": [], "cache": [], "failed": []}
    for call, source in zip(calls, sources, strict=True):
        by_source[source].append(call.usage if isinstance(call, ModelResponse) else Usage())
    live, paid, saved_usage = by_source["live"], by_source["batch"], by_source["cache"]
    live_cost, batch_cost = calls_cost_usd(model, live), calls_cost_usd(model, paid)
    spent = None if live_cost is None or batch_cost is None else live_cost + 0.5 * batch_cost
    saved = calls_cost_usd(model, saved_usage)
    return spent, saved


def call_sources(calls: list[Any], cached: Counter[str], batched: set[str]) -> list[str]:
    """Where each of an example's calls got its response: ``live`` (the API, at full price), ``batch``
    (this run's batches, at half: a response's first use), ``cache`` (the request cache served it:
    paid for by an earlier run, or earlier in this example) or ``failed``. ``cached``: how often the
    request cache served each response id; the uses it served come after a response's first."""
    uses = Counter(c.id for c in calls if isinstance(c, ModelResponse))
    seen: Counter[str] = Counter()
    out = []
    for call in calls:
        if not isinstance(call, ModelResponse):
            out.append("failed")
            continue
        seen[call.id] += 1
        if call.id in batched:
            out.append("batch" if seen[call.id] == 1 else "cache")
        elif seen[call.id] > uses[call.id] - cached[call.id]:
            out.append("cache")
        else:
            out.append("live")
    return out


def timeline_of(solved: Solved, sources: list[str]) -> dict[str, Any] | None:
    """The record's ``timeline`` (``react_bench.timeline``): each call's times with its retries and
    where its response came from, beside the tools' and the stages' times."""
    if solved.timeline is None:
        return None
    timeline = solved.timeline.to_dict(solved.calls)
    timeline["calls"] = [
        _call_entry(times, source, call)
        for times, source, call in zip(timeline["calls"], sources, solved.calls, strict=True)
    ]
    return timeline


def _call_entry(times: list[float] | None, source: str, call: Any) -> dict[str, Any]:
    """A call as the timeline keeps it: its times, where its response came from, and what its chat
    span says (the reported model, the response's id, its stop reason and usage, its retries; a
    failure's type alone, never its message, which may quote the request)."""
    if not isinstance(call, ModelResponse):
        return {"t": times, "source": source, "error": str(call.message).split(":", 1)[0][:80]}
    entry: dict[str, Any] = {"t": times, "source": source, "model": call.model, "id": call.id}
    entry["stop"] = call.stop_reason.value if call.stop_reason else None
    entry["usage"] = call.usage.to_dict()
    if call.retries:
        entry["retries"] = call.retries
    return entry


def example_record(example: Example, outcome: Outcome, scores: dict[str, float], primary_metric: str) -> ExampleRecord:
    return ExampleRecord(
        id=example.id,
        question=example.question,
        gold=example.gold,
        prediction=outcome.prediction,
        correct=scores[primary_metric] >= 1.0,  # HotpotQA: EM; FEVER: label accuracy; games: success
        scores=scores,
        reward=outcome.reward,
        steps=outcome.steps,
        reason=outcome.reason,
        route=outcome.route,
        backoff=outcome.backoff,
        error=outcome.error,
        usage=outcome.usage,
        calls=outcome.stats.calls,
        bad_calls=outcome.stats.bad_calls,
        repairs=outcome.stats.repairs,
        replaced_chars=outcome.stats.replaced_chars,
        samples=tuple(outcome.samples),
        vote=outcome.vote,
        metadata=_jsonable(example.metadata),
        trajectory=tuple(outcome.episodes),
        epoch=example.epoch,
        method=outcome.extra,
    )


def _run_json_config(cfg: RunConfig) -> dict[str, Any]:
    """The run's config as run.json keeps it: the method's own settings under its ``settings_key``
    (Reflexion's under "reflexion", LATS's under "lats", as ever; a later method's under "options")."""
    config = _jsonable(asdict(cfg))
    config["solve"] = get_method(cfg.solve.mode).kept_settings(config["solve"])
    return config


def _solve_fingerprint(solve: Any) -> dict[str, Any]:
    """The solve settings as the fingerprint holds them: a loop setting at its default that runs
    before it existed also had is left out, so those runs keep their fingerprint (and resume)."""
    settings = _jsonable(asdict(solve))
    if settings["loop"].get("act_at_cap") is True:
        del settings["loop"]["act_at_cap"]
    method = get_method(solve.mode)  # its own settings under its key; absent where it has none (as ever)
    return method.fingerprinted(method.kept_settings(settings))


def _env_settings(env: Any) -> dict[str, Any] | None:
    """The environment's settings that can change an observation (in the fingerprint)."""
    if env is None:
        return None
    return {k: v for k, v in _jsonable(asdict(env)).items() if not operational(type(env), k)}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
