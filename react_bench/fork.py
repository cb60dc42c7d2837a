"""Human-in-the-loop edits (the paper's Figure 5): fork a recorded trajectory at step k with an
edited thought, and let the model go on from there.

    python scripts/fork.py RUN_DIR --example ID --step K --thought "..."   (react-bench fork ...)

The fork is a new run of one example with the parent's settings (``run.json``'s composed
config), in a folder of its own beside the parent's, named ``<parent run id>-fork-<step>-<time>``;
its ``fork.json`` names the parent run, the example, the step and the edit, and ``fork.md`` shows
the parent's trajectory and the fork's side by side.

Steps 1..k are replayed from the parent's own recording (``calls.jsonl``): no model call, no
cost; the environment executes their actions again, so its state is what the parent's was. At
step k the recorded thought is replaced by the edited one (its action stays the recorded one);
from step k+1 the model answers live (through the run's retries; never the request cache, which
must not learn the edited answer as the model's). The edit reaches every later prompt, as the
paper's edits did.

Scope: the text runner's numbered format (``Thought k: ... / Action k: ...``: HotpotQA, FEVER,
the synthetic wiki), the agent modes (``react``, ``act`` cannot have a thought to edit).
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.events import StreamEvent
from react_bench.methods.registry import find_method
from react_bench.models.base import ModelClient, ModelLayer, ModelRequest, stream_response
from react_bench.models.collector import response_to_events
from react_bench.models.replay import Recorded, RecordedFailure, load_cassette
from react_bench.record import ExampleRecord, RunHeader
from react_bench.results import iter_example_records
from react_bench.rundir import safe_name
from react_bench.types import ModelResponse, TextBlock


def _opens_step(request: ModelRequest, step: int) -> bool:
    """Whether ``request`` is one of step ``step``: the numbered format stops each step's call at
    its observation (``\nObservation k:``), whether the model takes raw text or chat."""
    return f"\nObservation {step}:" in request.stop


@dataclass
class ForkModel(ModelLayer):
    """Serves the parent's recorded calls through step ``step`` (its thought there edited), then
    passes every later call to ``inner``, the live model. ``replayed`` / ``live`` count them."""

    inner: ModelClient
    recorded: list[Recorded]
    step: int
    thought: str
    replayed: int = 0
    live: int = 0
    _going_live: bool = field(default=False, repr=False)

    def stream_response(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        if not self._going_live and _opens_step(request, self.step + 1):
            self._going_live = True
        if self._going_live:
            self.live += 1
            return stream_response(self.inner, request)
        return self._replayed(request)

    async def _replayed(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        if self.replayed >= len(self.recorded):
            raise ConfigError(f"the parent's recording ends before step {self.step + 1}: fork at an earlier step")
        call = self.recorded[self.replayed]
        self.replayed += 1
        if isinstance(call, RecordedFailure):
            raise ConfigError(f"the parent's call {self.replayed} failed ({call.message}); fork an example that ran")
        if _opens_step(request, self.step):
            call = self._edited(call)
        for event in response_to_events(call):
            yield event
        yield call

    def _edited(self, response: ModelResponse) -> ModelResponse:
        text = "".join(b.text for b in response.content if isinstance(b, TextBlock))
        marker = f"\nAction {self.step}:"
        if marker not in text:
            raise ConfigError(f"step {self.step} of the parent has no thought and action to edit ({text[:80]!r})")
        label = f"Thought {self.step}:"  # a chat model writes the label itself; a prefilled one goes on after it
        head = text[: len(text) - len(text.lstrip())] + label if text.lstrip().startswith(label) else ""
        edited = f"{head} {self.thought.strip()}" + text[text.index(marker) :]
        return replace(response, content=(TextBlock(edited),))


@dataclass(frozen=True)
class Fork:
    run_dir: Path
    step: int
    parent: ExampleRecord
    child: ExampleRecord
    replayed: int
    live: int


def _parent_record(run_dir: Path, example: str) -> ExampleRecord:
    for record in iter_example_records(run_dir):
        if record.id == example and record.epoch == 1:
            return record
    raise ConfigError(f"{run_dir} has no finished example {example!r}")


async def fork_run(parent_dir: Path, example: str, step: int, thought: str, out: Any = None) -> Fork:
    """Fork ``example`` of the run in ``parent_dir`` at ``step`` with ``thought`` (the module docstring)."""
    from react_bench.evaluate import evaluate
    from react_bench.models import build_stack
    from react_bench.runconfig import RunConfig

    parent_dir = Path(parent_dir)
    header = RunHeader.read(parent_dir)
    method = find_method(header.mode)  # a mode of parts whose first is ReAct on its own exemplars
    spec = method.spec if method is not None and method.of_parts else None
    if header.runner != "text" or spec is None or spec.first != "react" or spec.prompt is not None:
        raise ConfigError(f"a fork edits a ReAct thought of the text runner; this run is {header.mode}/{header.runner}")
    record = _parent_record(parent_dir, example)
    if not 1 <= step < record.steps:
        raise ConfigError(f"example {example} ran {record.steps} step(s): fork at a step from 1 to {record.steps - 1}")
    _, by_id = load_cassette(parent_dir / "calls.jsonl")
    composed = json.loads((parent_dir / "run.json").read_text(encoding="utf-8")).get("composed")
    if not composed:
        raise ConfigError(
            f"{parent_dir} was run from code without its composed settings; fork a run of scripts/eval.py"
        )
    cfg = RunConfig.from_mapping(composed)
    # named by the parent's folder, never by the run_id its run.json says (a folder someone sent
    # may say ../../x there): the fork lies beside its parent
    parent_name = safe_name(parent_dir.resolve().name)
    run_id = f"{parent_name}-fork-{step}-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S-%f')}"
    cfg = replace(
        cfg,
        task=replace(cfg.task, ids=(example,), n=None, offset=0),
        run_id=run_id,
        run_dir=parent_dir.parent / run_id,
        resume=False,
        retry_errors=False,
        request_cache="off",  # the edited answer must never be cached as the model's
        epochs=1,
        progress=False,
        show="none",
    )
    # the live model as a run's (pacing, retries), without the request cache; the run records it
    live = build_stack(cfg.model, request_cache="off", record=False).top
    model = ForkModel(live, by_id.get(example, []), step, thought)
    result = await evaluate(cfg, out=out or io.StringIO(), model=model)
    child = _parent_record(result.run_dir, example)
    fork = Fork(result.run_dir, step, record, child, model.replayed, model.live)
    note = {
        "parent": str(parent_dir),
        "parent_run_id": header.run_id,
        "example": example,
        "step": step,
        "thought": thought,
        "replayed_calls": model.replayed,
        "live_calls": model.live,
    }
    (result.run_dir / "fork.json").write_text(json.dumps(note, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (result.run_dir / "fork.md").write_text(side_by_side(fork), encoding="utf-8")
    return fork


def side_by_side(fork: Fork) -> str:
    """The parent's and the fork's steps in two columns, the edited step marked."""

    def cells(record: ExampleRecord) -> dict[int, str]:
        """Step number -> its text and observations: rows are numbered as the user numbers steps
        (``--step k``), whatever else the record holds (events of no step are not a row)."""
        episode = record.trajectory[0] if record.trajectory else None
        steps = episode.steps() if episode is not None else []
        out = {}
        for s in steps:
            if s.number < 1:
                continue
            seen = " ".join(f"-> {(a.observation or '')[:120]}" for a in s.actions)
            out[s.number] = f"{s.text} {seen}".strip().replace("\n", " / ").replace("|", "/")
        return out

    parent, child = cells(fork.parent), cells(fork.child)
    lines = [
        f"# Fork of {fork.parent.id} at step {fork.step}",
        "",
        f"Parent: {fork.parent.prediction!r} ({'right' if fork.parent.correct else 'wrong'}); "
        f"fork: {fork.child.prediction!r} ({'right' if fork.child.correct else 'wrong'}); gold {fork.parent.gold!r}. "
        f"{fork.replayed} call(s) replayed from the parent's recording, {fork.live} live.",
        "",
        "| step | parent | fork |",
        "|---|---|---|",
    ]
    for k in range(1, max([*parent, *child], default=0) + 1):
        left, right = parent.get(k, ""), child.get(k, "")
        mark = " (edited)" if k == fork.step else (" (same)" if left == right else "")
        lines.append(f"| {k}{mark} | {left} | {right} |")
    return "\n".join(lines) + "\n"
