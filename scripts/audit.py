"""The grader's own checks (react_bench/grading/audit.py says which), with agents that need no model:

    python scripts/audit.py task=hotpotqa n=30                 # the task's split: null, oracle, candidates, ...
    python scripts/audit.py task=hotpotqa n=30 judge=claude-haiku-4-5   # the judge held to them too
    python scripts/audit.py RUN_DIR [RUN_DIR ...]              # a study's runs (or its results folder):
                                                               # label-error candidates too
    python scripts/audit.py recorded=all                       # the rule tier on recorded public runs
Writes audit.md and audit.json (``out=DIR``; default: results/audit/<task>, or the first run's
folder's parent). Exit codes: 0 every check passes; 1 a check found something (audit.md names
it); 2 a setting or the data is unusable (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402

STYLES = ("react", "act", "cot", "standard")  # the project's own prompts, whose exemplars a gold must not be in


def _runs(paths: list[Path]) -> list[Path]:
    runs: list[Path] = []
    for path in paths:
        if (path / "run.json").is_file():
            runs.append(path)
        elif path.is_dir():
            runs += sorted(p.parent for p in path.rglob("run.json") if (p.parent / "examples.jsonl").is_file())
        else:
            raise ConfigError(f"{path}: not a run folder nor a folder of runs")
    return runs


def recorded(settings: dict[str, str]) -> int:
    """``recorded=all|<name>``: the rule tier on recorded public runs (grading/recorded.py)."""
    from react_bench.grading.recorded import RECORDED, markdown, rules_on
    from react_bench.upstream import UpstreamError

    names = list(RECORDED) if settings["recorded"] == "all" else [settings["recorded"]]
    unknown = [n for n in names if n not in RECORDED]
    if unknown or set(settings) - {"recorded", "out"}:
        print(f"error: recorded= takes all or one of {', '.join(RECORDED)} (and out=DIR)", file=sys.stderr)
        return 2
    try:
        results = [rules_on(name) for name in names]
    except UpstreamError as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    out = Path(settings.get("out") or Path("results") / "audit" / "recorded")
    out.mkdir(parents=True, exist_ok=True)
    (out / "recorded.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    text = markdown(results)
    (out / "recorded.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"audit: {out / 'recorded.md'}, {out / 'recorded.json'}")
    return 0


def ask_judge(settings: dict[str, str], items: list, info: object) -> dict[tuple[str, str], object]:
    """The judge's verdicts on the audit's agents' answers, asked beforehand ((gold, answer) -> verdict)."""
    import asyncio

    from react_bench.grading.audit import judge_triples
    from react_bench.grading.judge import ask, check_judge
    from react_bench.grading.verdicts import JudgeSettings, check_task

    judge = JudgeSettings.from_mapping(
        {
            "model": settings["judge"],
            "base_url": settings.get("judge.base_url"),
            "api_key_env": settings.get("judge.api_key_env"),
        }
    )
    if judge.kind != "judge":
        raise ConfigError("judge=<configs/model name>: the audit's rules run always; judge= adds a model")
    check_task(judge, info)
    check_judge(judge)
    triples = judge_triples(items)
    print(f"audit: {len(triples)} answer(s) of the null, oracle and candidate agents to judge={judge.model}")
    verdicts = asyncio.run(ask(judge, triples, batch=settings.get("batch", "false").lower() == "true"))
    failed = [v for v in verdicts if isinstance(v, str) and v not in ("CORRECT", "INCORRECT", "NOT_ATTEMPTED")]
    if failed:
        raise ConfigError(f"judge={judge.model}: {len(failed)} answer(s) not judged ({failed[0]}); nothing was guessed")
    return {(g, p): v for (_, g, p), v in zip(triples, verdicts, strict=True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("items", nargs="*", help="task=, n=, split=, data_dir=, out=DIR; or run folders")
    args = parser.parse_args(argv)
    quiet_console()
    settings = dict(a.split("=", 1) for a in args.items if "=" in a)
    paths = [Path(a) for a in args.items if "=" not in a]
    if "recorded" in settings:
        return recorded(settings)
    try:
        from react_bench.grading.audit import audit, grader_of, items_of, markdown, run_records
        from react_bench.record import RunHeader
        from react_bench.tasks import TaskConfig, load_task

        judge_keys = {"judge", "judge.base_url", "judge.api_key_env", "batch"}
        unknown = sorted(set(settings) - {"task", "n", "split", "out", "data_dir"} - judge_keys)
        if unknown:
            raise ConfigError(
                f"{unknown[0]}=: audit.py takes task=, n=, split=, data_dir=, out=, judge=<name> "
                "(judge.base_url=, judge.api_key_env=, batch=true)"
            )
        runs = _runs(paths)
        task_name = settings.get("task") or (RunHeader.read(runs[0]).task if runs else "hotpotqa")
        if runs and any(RunHeader.read(r).task != task_name for r in runs):
            raise ConfigError("the runs are of more than one task: audit one task's runs at a time")
        task = load_task(task_name)
        config = TaskConfig.from_mapping(
            {"name": task_name, **{k: settings[k] for k in ("split", "data_dir") if k in settings}}
            | ({"n": int(settings["n"])} if "n" in settings else {})
        )
        if runs and "n" not in settings:  # the runs' own examples
            ids = sorted({i for r in runs for i in RunHeader.read(r).example_ids})
            config = TaskConfig.from_mapping({"name": task_name, "ids": ids, "on_missing": "skip"})
        examples = task.examples(config)
        prompt_text = None
        if task.info.answers:
            texts = []
            for style in STYLES:
                try:
                    spec = task.prompt(style, None, None, None)
                except ConfigError:
                    continue
                texts += [spec.instruction, spec.exemplars, *(v for _, v in spec.variants)]
            prompt_text = "\n".join(texts)
        items = items_of(examples)
        judged = ask_judge(settings, items, task.info) if settings.get("judge") else None
        report = audit(items, grader_of(task, judged), prompt_text, run_records(runs) if runs else None)
    except (ConfigError, DataError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    out = Path(settings.get("out") or (runs[0].parent.parent if runs else Path("results") / "audit" / task_name))
    out.mkdir(parents=True, exist_ok=True)
    report["task"] = task_name
    (out / "audit.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    text = markdown(report, f"{task_name}, {len(examples)} examples" + (f", {len(runs)} run(s)" if runs else ""))
    (out / "audit.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"audit: {out / 'audit.md'}, {out / 'audit.json'}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
