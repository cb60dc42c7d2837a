"""Drift against a recorded run (``react-bench drift RUN_DIR``, ``scripts/drift.py``): the run's
examples again, with its settings, data and prompts, against the model as it answers now.

Why: a model behind an API changes under its name, and a published number stops reproducing. A
run here records every call and observation, so a rerun says exactly what changed:

- per example, the old and new outcome, and the first step where the two trajectories part, with
  why: another thought (the model wrote something else), another action (it acted otherwise
  after the same thought), or another observation (the same action was answered otherwise: a
  live page edited, a shop's catalog changed: the environment, not the model);
- the flips each way, McNemar's exact p, and the score change with its paired 95% interval;
- the model's identity as the API reported it, then and now (the model id in each response, as the
  cassette keeps it from this version on: an API's snapshot id, the local model's file hash), the
  model settings' fingerprint, and each prompt's sha256.

The rerun is a run folder of its own beside the recorded one (``<run>-drift-<time>``), made with
the request cache off (a cached answer is the old model's), in batch rounds where ``batch=true``;
``drift.md`` and ``drift.json`` are written into it. ``model=<configs/model name>`` (and
``model.<key>=...``) reruns against another model or endpoint.

A folder someone sent chooses nothing about where a key goes: its endpoint and key variable are
kept only under resume's rules (``runconfig.own_route``: a folder this user signed, the provider's
defaults, or restated on the command line), else drift stops in one line before any request.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.record import ExampleRecord, RunHeader, Step
from react_bench.results import iter_example_records
from react_bench.rundir import safe_name
from react_bench.studies.statistics import paired_test


@dataclass(frozen=True)
class Parting:
    """Where two trajectories of one example part: the step, and what differs first."""

    step: int
    why: str  # "another thought" | "another action" | "another observation" | "another length"
    old: str
    new: str


@dataclass(frozen=True)
class Drift:
    run_dir: Path  # the rerun's folder (drift.md and drift.json are in it)
    report: dict[str, Any]


def _step_view(step: Step) -> tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]:
    """A step as three things to compare: its thought (the turn's text without the actions written
    in it), its actions, and what they were answered."""
    thought = step.text
    for a in step.actions:
        if a.text:
            thought = thought.replace(a.text, "")
    actions = tuple((a.name, json.dumps(a.arguments, sort_keys=True)) for a in step.actions)
    return thought.strip(), actions, tuple(str(a.observation) for a in step.actions)


def parting(old: ExampleRecord, new: ExampleRecord) -> Parting | None:
    """The first step where ``old`` and ``new`` differ (their episodes' steps in order, numbered as
    the episode numbers them); None where the two trajectories are the same."""
    a = [s for e in old.trajectory for s in e.steps()]
    b = [s for e in new.trajectory for s in e.steps()]
    for x, y in zip(a, b, strict=False):
        (tx, ax, ox), (ty, ay, oy) = _step_view(x), _step_view(y)
        if tx != ty:
            return Parting(x.number, "another thought", x.text.strip()[:200], y.text.strip()[:200])
        if ax != ay:
            said = [", ".join(a.text or a.name for a in s.actions)[:200] for s in (x, y)]
            return Parting(x.number, "another action", said[0], said[1])
        if ox != oy:
            return Parting(x.number, "another observation", " | ".join(ox)[:200], " | ".join(oy)[:200])
    if len(a) != len(b) or old.prediction != new.prediction:
        last = min(len(a), len(b))
        number = (a[last - 1].number + 1) if last else 1
        return Parting(number, "another length", f"{len(a)} steps", f"{len(b)} steps")
    return None


def _models(run_dir: Path) -> list[str]:
    """The model ids the responses of a run reported (its cassette's ``models``), in order of first use."""
    path = run_dir / "calls.jsonl"
    seen: dict[str, None] = {}
    if path.exists():
        with path.open(encoding="utf-8") as f:
            for line in f:
                try:
                    ids = json.loads(line).get("models") or ()
                except (ValueError, AttributeError):
                    continue
                seen.update((str(m), None) for m in ids if m)
    return list(seen)


async def drift(
    run_dir: Path,
    model: Mapping[str, Any] | None = None,
    restated: Mapping[str, Any] | None = None,
    batch: bool | None = None,
    out: Any = None,
) -> Drift:
    """Rerun ``run_dir``'s examples now and report what changed (the module docstring). ``model``:
    another model's settings (a configs/model file's mapping), else the run's own; ``restated``: the
    ``model.<key>`` settings the command line gave (``{"model.base_url": ...}``)."""
    from react_bench.evaluate import evaluate
    from react_bench.runconfig import RunConfig, own_route

    run_dir = Path(run_dir)
    header = RunHeader.read(run_dir)
    data = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    composed = data.get("composed")
    if not composed:
        raise ConfigError(
            f"{run_dir} was run from code without its composed settings; drift reruns scripts/eval.py runs"
        )
    old = {(r.id, r.epoch): r for r in iter_example_records(run_dir)}
    if not old:
        raise ConfigError(f"{run_dir} has no finished example to rerun")
    given = {k.removeprefix("model."): v for k, v in dict(restated or {}).items()}
    if model is None:  # the run's own model: its endpoint and key variable under resume's rules
        route = own_route(
            {"model": given}, composed, [f"model.{k}" for k in given], run_dir, data.get("route_signature")
        )
    else:
        route = {**model, **given}
    cfg = RunConfig.from_mapping({**composed, "model": route})
    ids = tuple(dict.fromkeys(i for i, _ in old))  # the order the run recorded them
    run_id = f"{safe_name(run_dir.resolve().name)}-drift-{dt.datetime.now(dt.UTC).strftime('%Y%m%d-%H%M%S-%f')}"
    cfg = replace(
        cfg,
        task=replace(cfg.task, ids=ids, n=None, offset=0),
        run_id=run_id,
        run_dir=run_dir.parent / run_id,  # beside the recorded run, named by its folder
        resume=False,
        retry_errors=False,
        request_cache="off",  # a cached answer is the old model's
        batch=cfg.batch if batch is None else batch,
        progress=False,
        show="none",
        max_cost_usd=None,
    )
    result = await evaluate(cfg, out=out or io.StringIO())
    new = {(r.id, r.epoch): r for r in iter_example_records(result.run_dir)}
    report = compare(run_dir, result.run_dir, header, old, new, composed.get("model") or {}, route)
    (result.run_dir / "drift.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (result.run_dir / "drift.md").write_text(drift_markdown(report), encoding="utf-8")
    return Drift(result.run_dir, report)


def compare(
    old_dir: Path,
    new_dir: Path,
    header: RunHeader,
    old: Mapping[tuple[str, int], ExampleRecord],
    new: Mapping[tuple[str, int], ExampleRecord],
    old_model: Mapping[str, Any],
    new_model: Mapping[str, Any],
) -> dict[str, Any]:
    """The drift report of a recorded run and its rerun (the module docstring)."""
    keys = [k for k in old if k in new]
    examples: list[dict[str, Any]] = []
    for key in keys:
        a, b = old[key], new[key]
        part = parting(a, b)
        examples.append(
            {
                "id": key[0],
                "epoch": key[1],
                "old_correct": a.correct,
                "new_correct": b.correct,
                "flip": "" if a.correct == b.correct else ("right -> wrong" if a.correct else "wrong -> right"),
                "old_prediction": a.prediction,
                "new_prediction": b.prediction,
                "parted_at": None
                if part is None
                else {"step": part.step, "why": part.why, "old": part.old, "new": part.new},
            }
        )
    xa = [float(old[k].correct) for k in keys]
    xb = [float(new[k].correct) for k in keys]
    test = paired_test(xb, xa)  # new - old
    new_header = RunHeader.read(new_dir)
    old_prompts = json.loads((old_dir / "run.json").read_text(encoding="utf-8")).get("prompts") or {}
    new_prompts = json.loads((new_dir / "run.json").read_text(encoding="utf-8")).get("prompts") or {}
    parted = [e for e in examples if e["parted_at"] is not None]
    return {
        "run": str(old_dir),
        "rerun": str(new_dir),
        "task": header.task,
        "mode": header.mode,
        "runner": header.runner,
        "n": len(keys),
        "old_score": sum(xa) / len(xa) if xa else None,
        "new_score": sum(xb) / len(xb) if xb else None,
        "difference": test["difference"],
        "ci95": [test["ci_low"], test["ci_high"]],
        "mcnemar_p": test["mcnemar_p"],
        "right_to_wrong": sum(e["flip"] == "right -> wrong" for e in examples),
        "wrong_to_right": sum(e["flip"] == "wrong -> right" for e in examples),
        "trajectories_parted": len(parted),
        "parted_by_observation": sum(e["parted_at"]["why"] == "another observation" for e in parted),
        "identity": {
            "then": {
                "model": header.model_name,
                "reported_ids": _models(old_dir) or None,
                "settings": _fingerprint(old_model),
            },
            "now": {
                "model": new_header.model_name,
                "reported_ids": _models(new_dir) or None,
                "settings": _fingerprint(new_model),
            },
        },
        "prompts": {
            k: {"then": old_prompts.get(k), "now": new_prompts.get(k)} for k in sorted({*old_prompts, *new_prompts})
        },
        "examples": examples,
    }


def _fingerprint(model: Mapping[str, Any]) -> str:
    """The model settings that change an answer, hashed (the endpoint and key variable left out)."""
    from react_bench.models.stack import ModelSpec

    try:
        spec = ModelSpec.from_mapping(dict(model))
        shown = json.dumps(spec.fingerprint(), sort_keys=True, default=str)
    except ConfigError:
        shown = json.dumps({k: v for k, v in model.items() if k not in ("base_url", "api_key_env")}, sort_keys=True)
    return "sha256:" + hashlib.sha256(shown.encode("utf-8")).hexdigest()[:16]


def drift_markdown(report: Mapping[str, Any]) -> str:
    pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}"  # noqa: E731
    then, now = report["identity"]["then"], report["identity"]["now"]
    lines = [
        f"# Drift: {report['task']} {report['mode']}/{report['runner']}",
        "",
        f"Recorded run: {report['run']}  ",
        f"Rerun: {report['rerun']}",
        "",
        f"{report['n']} examples: {pct(report['old_score'])} then, {pct(report['new_score'])} now; change "
        f"{100 * report['difference']:+.1f} points, 95% paired CI [{100 * report['ci95'][0]:+.1f}, "
        f"{100 * report['ci95'][1]:+.1f}]; McNemar's exact p = {report['mcnemar_p']:.3g}.",
        f"Flips: {report['right_to_wrong']} right -> wrong, {report['wrong_to_right']} wrong -> right. "
        f"Trajectories parted: {report['trajectories_parted']} ({report['parted_by_observation']} at an "
        "observation: the environment answered the same action otherwise, not the model).",
        "",
        "## The model's identity",
        "",
        "| | then | now |",
        "|---|---|---|",
        f"| model | {then['model']} | {now['model']} |",
        f"| ids the API reported | {', '.join(then['reported_ids'] or ['not recorded'])} | "
        f"{', '.join(now['reported_ids'] or ['not recorded'])} |",
        f"| settings fingerprint | {then['settings']} | {now['settings']} |",
    ]
    for key, hashes in report["prompts"].items():
        same = "" if hashes["then"] == hashes["now"] else " (changed)"
        lines.append(f"| prompt {key} | {hashes['then']} | {hashes['now']}{same} |")
    flipped = [e for e in report["examples"] if e["flip"]]
    lines += ["", f"## Flipped examples ({len(flipped)})", ""]
    if flipped:
        lines += ["| id | flip | then | now | parted at | why |", "|---|---|---|---|---|---|"]
        for e in flipped:
            part = e["parted_at"] or {}
            lines.append(
                f"| {e['id']} | {e['flip']} | {_cell(e['old_prediction'])} | {_cell(e['new_prediction'])} | "
                f"{part.get('step', '')} | {part.get('why', 'same trajectory')} |"
            )
    else:
        lines.append("None.")
    others = [e for e in report["examples"] if not e["flip"] and e["parted_at"]]
    if others:
        lines += ["", f"## Same outcome, another trajectory ({len(others)})", ""]
        lines += ["| id | parted at | why |", "|---|---|---|"]
        lines += [f"| {e['id']} | {e['parted_at']['step']} | {e['parted_at']['why']} |" for e in others]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:80]
