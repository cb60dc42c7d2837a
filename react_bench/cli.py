"""``react-bench <command> [arguments]``: the project's scripts under one console command.

    react-bench eval task=hotpotqa mode=react     # = python scripts/eval.py task=hotpotqa mode=react
    react-bench compare results/                  # = python scripts/compare.py results/
    react-bench export RUN_DIR --to csv           # = python scripts/export.py RUN_DIR --to csv

Each command runs ``scripts/<command>.py`` of this checkout as that script's own ``__main__``
(its arguments, its exit code, its ``--help``). The scripts stay the one implementation, and they
read the checkout's ``configs/`` and data beside them: the command needs the project installed
from its source (``pip install -e .``, as ``make setup`` does), not a bare wheel, and it says so
when the scripts are not there. The top floor of the house: nothing imports it.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
COMMANDS = {
    "eval": "run a benchmark (Hydra settings: react-bench eval --help)",
    "compare": "Table 1, paired tests, diffs, the report of several runs",
    "export": "a run folder to inspect_ai's log, CSV or Parquet",
    "finetune-data": "fine-tuning data from runs' correct trajectories (the paper's Figure 3)",
    "annotate": "label trajectories for the paper's error analysis (Table 2)",
    "fork": "a recorded trajectory forked at a step with an edited thought (the paper's Figure 5)",
    "drift": "a recorded run's examples again against the model as it answers now: what changed",
    "judge": "a run's answers read again beside exact match: an LLM judge (SimpleQA's grader) or the rules",
    "audit": "the grader's own checks: null and oracle agents, candidate lists, gold isolation, label errors",
    "plan": "from a pilot run, the examples and trials needed to detect a difference, and their price",
    "search": "the best configuration for a budget: models, modes and settings raced, the dominated dropped early",
    "traces": "a run's examples as OpenTelemetry GenAI traces: to a collector (Phoenix) or a file",
    "build-wiki": "an offline wiki file for wiki=local",
    "webshop-server": "the project's WebShop server, over HTTP",
    "make-exemplars": "the project's few-shot exemplars, regenerated",
    "make-synthwiki": "the synthetic wiki task's data, regenerated",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: react-bench <command> [arguments]   (react-bench <command> --help for its own)", ""]
    lines += [f"  {name:<{width}}  {what}" for name, what in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"error: react-bench {command}: no such command\n\n{usage()}", file=sys.stderr)
        return 2
    script = SCRIPTS / f"{command.replace('-', '_')}.py"
    if not script.is_file():
        print(
            f"error: {script} is missing: react-bench runs the scripts of a source checkout "
            "(git clone, then pip install -e . or make setup)",
            file=sys.stderr,
        )
        return 2
    sys.argv = [str(script), *rest]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if isinstance(code, str):  # sys.exit("message"): said as Python would say it
            print(code, file=sys.stderr)
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
