"""Fine-tuning data from runs (the paper's Figure 3: a small model fine-tuned on the correct
trajectories of a large one): ``python scripts/finetune_data.py RUN... --out DIR``.

What is written, from the *correct* examples of the given runs only (every attempt of each):

- ``<format>/``: a ``datasets.DatasetDict`` on disk (``datasets.load_from_disk``), with the same
  rows as ``<format>/<split>.jsonl`` (``load_dataset("json", data_files=...)``). The formats:
  - ``paper``: the paper's fine-tuning rows: ``prompt`` is the first request of the zero-shot
    text runner (``shots=0``, which a run of a model with ``model.finetuned_on`` sends): the
    example's input as the text runner opens it (``Question: ...``, a claim, ALFWorld's room and
    task, WebShop's page), no instruction or exemplars, then the first step's label
    (``Thought 1:``); ``target`` what follows it, the whole trajectory in the run's own format (ReAct: thoughts, actions
    and observations; Act: actions and observations; CoT: the reasoning and the answer;
    Standard: the answer), ``style`` saying which of the four it is (the run's mode);
  - ``chat``: OpenAI's fine-tuning chat format, one conversation per trajectory (``messages``:
    the input as the user's, each model turn the assistant's, each observation the user's; a
    tool-use run's calls as ``tool_calls`` and its results as ``tool`` messages);
  - ``steps``: one row per model turn: ``prompt`` the input and every earlier step, ``completion``
    the turn (the text runner's prompt, without exemplars).
- ``manifest.json``: the source runs (folder, run id, task, mode, runner, model, split role),
  the filters, the counts per format and split (equal to the files' lines), and tokens
  (characters / 4, an estimate: no tokenizer is assumed).

Splits by example id: a run over a *train* file (``task.data_file`` naming a ``train`` file, as
HotpotQA's and FEVER's train splits do) feeds ``train``; any other run (the dev questions the
paper evaluates on) feeds ``dev``, and no id of a dev run ever enters ``train``, whichever run it
came from. Identical rows (same input and target) are written once. The paper's formats need
the text runner's records (its turns are the text); a tool-use run gives ``chat`` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.methods.registry import find_method
from react_bench.prompts import ZERO_SHOT
from react_bench.record import Episode, ExampleRecord, RunHeader
from react_bench.results import iter_example_records
from react_bench.runners.text import answer_suffix, base_prompt
from react_bench.tasks import load_task
from react_bench.types import TextBlock, ToolResultBlock, ToolUseBlock

FORMATS = ("paper", "chat", "steps")


@dataclass(frozen=True)
class Source:
    run_dir: Path
    header: RunHeader
    role: str  # train | dev

    @staticmethod
    def read(run_dir: Path) -> Source:
        header = RunHeader.read(run_dir)
        data_file = str((header.config.get("task") or {}).get("data_file") or "")
        return Source(Path(run_dir), header, "train" if "train" in Path(data_file).name.lower() else "dev")


@dataclass
class Export:
    rows: dict[str, dict[str, list[dict[str, Any]]]] = field(
        default_factory=lambda: {f: {"train": [], "dev": []} for f in FORMATS}
    )
    seen: set[tuple[str, str, str]] = field(default_factory=set)
    skipped: dict[str, int] = field(default_factory=dict)

    def add(self, fmt: str, split: str, row: dict[str, Any], key: str) -> None:
        marker = (fmt, split, key)
        if marker in self.seen:
            self.skipped["duplicate"] = self.skipped.get("duplicate", 0) + 1
            return
        self.seen.add(marker)
        self.rows[fmt][split].append(row)


def export_finetune(run_dirs: Sequence[Path], out: Path) -> dict[str, Any]:
    """Write the formats and the manifest under ``out`` (a new or empty folder); return the manifest."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: give a new folder")
    sources = [Source.read(Path(d)) for d in run_dirs]
    dev_ids = {i for s in sources if s.role == "dev" for i in s.header.example_ids}
    export = Export()
    for source in sources:
        for record in iter_example_records(source.run_dir):
            if not record.correct:
                export.skipped["not correct"] = export.skipped.get("not correct", 0) + 1
                continue
            if source.role == "train" and record.id in dev_ids:  # never a dev question in train
                export.skipped["a dev id in a train run"] = export.skipped.get("a dev id in a train run", 0) + 1
                continue
            _rows(export, source, record)
    return _write(export, sources, out)


def _style(mode: str) -> str | None:
    """The prompt style a run's rows are written in: its one part's (ReAct-IM's is ReAct's format);
    None for a method of samples, a backoff or a search (no one trajectory style to learn)."""
    method = find_method(mode)
    if method is None or not method.of_parts or method.spec.backoff is not None or method.spec.samples:
        return None
    return method.spec.first


def _rows(export: Export, source: Source, record: ExampleRecord) -> None:
    header, split = source.header, source.role
    style = _style(header.mode)
    fmt = load_task(header.task).text_format()
    episode = record.trajectory[-1] if record.trajectory else None  # the part that answered (after a backoff)
    if episode is None:
        return
    first = episode.first_observation or record.question
    opening = fmt.opening(first)
    meta = {"id": record.id, "epoch": record.epoch, "task": header.task, "source_run": header.run_id}
    messages = episode.messages()
    if header.runner == "text" and style is not None:
        turns = [m.text for m in messages if m.role == "assistant"]
        observations = ["".join(b.content for b in m.content if isinstance(b, ToolResultBlock)) for m in messages]
        observations = [o for m, o in zip(messages, observations, strict=True) if m.role == "user"]
        pieces = [fmt.piece(k, turn, obs) for k, (turn, obs) in enumerate(zip(turns, observations), start=1)]
        # the last turn ends the episode: its observation ("Episode finished.") is not the model's to learn
        last = fmt.piece(len(turns), turns[-1], "") if turns else ""
        last = last[: last.find(turns[-1]) + len(turns[-1])] if turns else ""
        trajectory = "".join(pieces[: len(turns) - 1]) + last
        # the prompt is the zero-shot text runner's first request (shots=0), which ends in the first
        # step's label; the target is what the model writes after it
        suffix = fmt.suffix(1, style) if style in ("react", "act") else answer_suffix(style)  # type: ignore[arg-type]
        prompt = base_prompt(ZERO_SHOT, opening) + suffix
        target = trajectory[len(suffix) :] if trajectory.startswith(suffix) else trajectory
        export.add("paper", split, {**meta, "style": style, "prompt": prompt, "target": target}, prompt + target)
        for k, turn in enumerate(turns, start=1):
            prompt = opening + "".join(pieces[: k - 1])
            row = {**meta, "step": k, "prompt": prompt, "completion": turn}
            export.add("steps", split, row, f"{prompt}\x00{turn}")
        chat = [{"role": "user", "content": opening}]
        for k, turn in enumerate(turns):
            chat.append({"role": "assistant", "content": turn})
            if k < len(turns) - 1 and k < len(observations):
                chat.append({"role": "user", "content": fmt.piece(k + 1, "", observations[k]).strip("\n")})
    else:
        chat = [{"role": "user", "content": first}, *_chat_turns(episode)]
    export.add("chat", split, {**meta, "messages": chat}, json.dumps(chat, sort_keys=True))


def _chat_turns(episode: Episode) -> list[dict[str, Any]]:
    """A tool-use episode as OpenAI's chat messages: text (thinking left out), calls, results."""
    out: list[dict[str, Any]] = []
    for message in episode.messages():
        if message.role == "assistant":
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            calls = [
                {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(dict(b.input))}}
                for b in message.content
                if isinstance(b, ToolUseBlock)
            ]
            turn: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                turn["tool_calls"] = calls
            out.append(turn)
        else:
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content})
                elif isinstance(block, TextBlock):
                    out.append({"role": "user", "content": block.text})
    return out


def _tokens(rows: Iterable[dict[str, Any]]) -> int:
    return sum(len(json.dumps(r, ensure_ascii=False)) for r in rows) // 4


def _write(export: Export, sources: Sequence[Source], out: Path) -> dict[str, Any]:
    from datasets import Dataset, DatasetDict

    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, dict[str, int]] = {}
    tokens: dict[str, dict[str, int]] = {}
    for fmt, splits in export.rows.items():
        folder = out / fmt
        folder.mkdir()
        kept = {split: rows for split, rows in splits.items() if rows}
        for split, rows in splits.items():
            with (folder / f"{split}.jsonl").open("w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if kept:
            DatasetDict({split: Dataset.from_list(rows) for split, rows in kept.items()}).save_to_disk(
                str(folder / "dataset")
            )
        counts[fmt] = {split: len(rows) for split, rows in splits.items()}
        tokens[fmt] = {split: _tokens(rows) for split, rows in splits.items()}
    manifest = {
        "sources": [
            {
                "run_dir": str(s.run_dir),
                "run_id": s.header.run_id,
                "task": s.header.task,
                "mode": s.header.mode,
                "runner": s.header.runner,
                "model": s.header.model_name,
                "split": s.role,
            }
            for s in sources
        ],
        "filters": {"correct": True, "dev_ids_never_in_train": True, "identical_rows_once": True},
        "counts": counts,
        "tokens_estimate": tokens,  # characters / 4
        "skipped": export.skipped,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest
