"""Judge a finished or received run afterwards (react_bench/grading/judge.py says how):

    python scripts/judge.py RUN_DIR judge=claude-sonnet-4-6             # SimpleQA's grader, one call a miss
    python scripts/judge.py RUN_DIR judge=claude-sonnet-4-6 batch=true  # through the Message Batches API
    python scripts/judge.py RUN_DIR judge=rules                         # the rule tier: a heuristic, no model
    python scripts/judge.py RUN_DIR judge=<name> judge.base_url=URL judge.api_key_env=VAR judge.all=true

The verdicts go to judged.jsonl (rules.jsonl) beside the run, and metrics.json is written again
with ``judged`` (``rules``) in it; examples.jsonl is never rewritten. The same command again sends
nothing already answered. Exit codes: 0 every example judged; 2 a setting or the folder is unusable
(one line, no request sent); 3 some examples are left unjudged (the judge could not be reached):
the same command judges the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.tasks import DataError  # noqa: E402

KEYS = ("judge", "judge.model", "judge.all", "judge.base_url", "judge.api_key_env", "batch", "batch_poll_s", "cache")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, help="the run's folder")
    parser.add_argument("settings", nargs="*", help="judge=<name>|rules, judge.<key>=..., batch=true, batch_poll_s=S")
    args = parser.parse_args(argv)
    quiet_console()
    run_dir: Path = args.run_dir
    if not (run_dir / "run.json").is_file() or not (run_dir / "examples.jsonl").is_file():
        print(f"error: {run_dir} is not a run folder (no run.json and examples.jsonl)", file=sys.stderr)
        return 2
    try:
        values: dict[str, str] = {}
        for setting in args.settings:
            key, sep, value = setting.partition("=")
            if not sep or key not in KEYS:
                raise ConfigError(f"{setting}: judge.py takes {', '.join(k + '=' for k in KEYS)}")
            values["judge.model" if key == "judge" else key] = value
        from react_bench.grading.judge import check_judge, judge_line, judge_run
        from react_bench.grading.verdicts import JudgeSettings, check_task
        from react_bench.record import RunHeader
        from react_bench.tasks import task_info

        settings = JudgeSettings.from_mapping(
            {k.removeprefix("judge."): v for k, v in values.items() if k.startswith("judge.")}
            | {"all": values.get("judge.all", "false").lower() in ("true", "1", "yes")}
        )
        if settings.kind is None:
            raise ConfigError("judge=<configs/model name> or judge=rules: which judge")
        check_task(settings, task_info(RunHeader.read(run_dir).task))
        if settings.kind == "judge":
            check_judge(settings)
        batch = values.get("batch", "false").lower() in ("true", "1", "yes")
        cache = values.get("cache", "true").lower()
        done = asyncio.run(
            judge_run(
                run_dir,
                settings,
                batch=batch,
                poll_s=float(values.get("batch_poll_s") or 30),
                request_cache="off" if cache in ("false", "0", "no") else ("refresh" if cache == "refresh" else "on"),
            )
        )
    except (ConfigError, DataError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    import json

    from react_bench.record import RunMetrics

    metrics = RunMetrics.from_dict(json.loads((run_dir / "metrics.json").read_text(encoding="utf-8")))
    print(judge_line(metrics))
    print(
        f"judge: {done.written} verdict(s) written to {run_dir / settings.file} ({done.calls} call(s) sent, "
        f"{done.from_cache} from the request cache, {done.replayed} from the replayed run)"
    )
    if done.unjudged:
        why = "; ".join(done.errors) or "no answer"
        print(
            f"{done.unjudged} example(s) not judged ({why}); nothing was guessed for them. "
            f"Judge the rest with the same command.",
            file=sys.stderr,
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
