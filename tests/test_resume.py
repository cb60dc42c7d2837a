"""Resuming a run after a crash: every example ends up exactly once in ``examples.jsonl`` AND
in the cassette ``calls.jsonl``, whichever write the crash cut."""

from __future__ import annotations

import io
import json
from pathlib import Path

from react_bench.evaluate import evaluate
from react_bench.methods.core import SolveSettings
from react_bench.models.replay import load_cassette
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig


def config(tmp_path: Path, script: list[str], resume: bool = False) -> RunConfig:
    path = tmp_path / f"script-{len(script)}.json"
    path.write_text(json.dumps(script))
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=3),
        model={"provider": "scripted", "label": "scripted", "script": str(path)},
        solve=SolveSettings(mode="standard"),
        results_dir=tmp_path / "results",
        run_id="r",
        resume=resume,
        progress=False,
    )


def ids_of(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


async def test_resume_after_a_crash_between_the_example_and_its_cassette_line(tmp_path):
    first = await evaluate(config(tmp_path, [" yes", " no", " maybe"]), out=io.StringIO())
    examples, calls = first.run_dir / "examples.jsonl", first.run_dir / "calls.jsonl"
    all_ids = ids_of(examples)
    # The crash: the third example's record was written, its cassette line only half.
    lines = calls.read_text().splitlines(keepends=True)
    calls.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])

    again = await evaluate(config(tmp_path, [" maybe"], resume=True), out=io.StringIO())
    assert again.n_new == 1
    assert ids_of(examples) == all_ids
    kind, by_id = load_cassette(calls)
    assert sorted(by_id) == sorted(all_ids)
    assert again.metrics["n"] == 3


async def test_resume_treats_a_record_without_its_newline_as_unfinished(tmp_path):
    first = await evaluate(config(tmp_path, [" yes", " no", " maybe"]), out=io.StringIO())
    examples, calls = first.run_dir / "examples.jsonl", first.run_dir / "calls.jsonl"
    all_ids = ids_of(examples)
    # The crash cut the last record just before its newline (and before its cassette line).
    examples.write_text(examples.read_text()[:-1])
    calls.write_text("".join(calls.read_text().splitlines(keepends=True)[:2]))

    again = await evaluate(config(tmp_path, [" maybe"], resume=True), out=io.StringIO())
    assert again.n_new == 1
    assert ids_of(examples) == all_ids  # one record per line, none glued to the next
    assert sorted(load_cassette(calls)[1]) == sorted(all_ids)


async def test_resume_refuses_a_run_with_other_model_settings(tmp_path):
    import dataclasses

    import pytest

    from react_bench.errors import ConfigError

    first = config(tmp_path, [" yes", " no", " maybe"])
    await evaluate(
        dataclasses.replace(first, model={**first.model.to_mapping(), "name": "scripted-a"}), out=io.StringIO()
    )
    other = config(tmp_path, [" maybe"], resume=True)
    with pytest.raises(ConfigError, match="fingerprint differs"):
        await evaluate(
            dataclasses.replace(other, model={**other.model.to_mapping(), "name": "scripted-b"}), out=io.StringIO()
        )
