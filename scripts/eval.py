"""Run a benchmark: ``python scripts/eval.py task=hotpotqa mode=react runner=text model=local``.

A thin Hydra entry point: it composes ``configs/eval.yaml`` and its groups (task, mode,
runner, model, wiki), resolves resume and replay against the recorded run
(``runconfig.resolve_settings``), turns the result into a typed ``RunConfig`` and calls
``evaluate``.

Exit codes: 0 all examples answered (right or wrong); 2 a setting or the data is unusable
(one line naming it, nothing written); 3 the run finished but some examples ended in an
error (a fault that outlived the retries): the line printed last reruns exactly those;
4 the budget (``max_cost_usd``) stopped the run before every example: the line printed
finishes it; 130 interrupted (Ctrl-C): the line printed resumes the run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
GROUPS = tuple(sorted(p.name for p in CONFIGS.iterdir() if p.is_dir()))  # every config group, context included


def _python() -> str:
    """The interpreter running this, as a command to copy: ``.venv/bin/python`` from the repo root."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return str(exe)


PYTHON = _python()  # in the commands printed to resume or rerun a run (bare ``python`` may not be the venv's)


def settings_help() -> str:
    """``--help``: the config groups with their choices and every setting with its default and its
    one-line meaning (``react_bench.settings``, the table configs/eval.yaml is written from)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from react_bench.settings import help_lines

    lines = [
        f"usage: {PYTHON} scripts/eval.py [setting=value ...]   (a sweep: -m mode=react,act ...)",
        "",
        "config groups (group=choice):",
    ]
    for group in GROUPS:
        choices = sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))
        lines.append(f"  {group:<11} {', '.join(choices)}")
    lines += ["", "settings (default, meaning):", *help_lines()]
    lines += [
        "",
        "a model's own settings: model.<key>=... (see configs/model/<choice>.yaml); the guide: docs/guide.md",
        "Hydra's own options: --hydra-help",
    ]
    return "\n".join(lines)


if __name__ == "__main__" and any(a in ("--help", "-h") for a in sys.argv[1:]):
    print(settings_help())  # before the run's imports: --help answers at once
    sys.exit(0)

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.console import quiet_console  # noqa: E402
from react_bench.errors import ConfigError  # noqa: E402
from react_bench.evaluate import evaluate, new_run_id, run_dir_for  # noqa: E402
from react_bench.models.scripted import ScriptError  # noqa: E402
from react_bench.results import format_table  # noqa: E402
from react_bench.runconfig import CHOICES, SELECTION_KEYS, RunConfig, find_run, resolve_settings  # noqa: E402
from react_bench.rundir import StoredRun  # noqa: E402
from react_bench.shared_rounds import collect  # noqa: E402
from react_bench.sweep import SWEEP_ENV  # noqa: E402
from react_bench.tasks import DataError, task_info  # noqa: E402

LOCAL_NOTE = (
    "note: model=local is a tiny embedded model ({name}) for checking the pipeline end to end; "
    "its scores mean nothing. For real results choose e.g. model=claude-sonnet-5-5 "
    "(needs ANTHROPIC_API_KEY) or model=openai with your own server."
)


def fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def sweeping() -> bool:
    from hydra.types import RunMode

    return HydraConfig.get().mode == RunMode.MULTIRUN


def recorded_choices(argv: list[str]) -> list[str]:
    """``resume=<run dir>`` (or ``run_id=<id> resume=true``): the recorded run's config group
    choices (``model=scripted``, ...), put before the command line's own, so that Hydra composes
    the same group files and ``model.script=...`` / ``model.max_retries=...`` find their keys."""
    given = dict(arg.split("=", 1) for arg in argv if "=" in arg and not arg.startswith(("+", "~")))
    resume = given.get("resume")
    if resume is None or resume.lower() == "false":
        return []
    try:
        if resume.lower() == "true":
            if "run_id" not in given:
                return []  # resolve_settings says what is missing
            run_dir = find_run(Path(given.get("results_dir", "results")), given["run_id"])
        else:
            run_dir = Path(resume)
        choices = StoredRun.read(run_dir).composed().get(CHOICES) or {}
    except ConfigError:
        return []  # reported, in one line, once the settings are resolved
    return [f"{g}={c}" for g, c in choices.items() if g in GROUPS and g not in given and c and g != "experiment"]


def store_installed(argv: list[str]) -> set[tuple[str, str]]:
    """``mode=<name>`` of a method, or ``task=<name>`` of a task, installed from outside the package
    (the entry point groups ``react_bench.methods`` and ``react_bench.tasks``) has no ``configs/``
    file: its group node (``Method.mode_node``; ``tasks.config_node``) is put in Hydra's
    ConfigStore, where plugins keep theirs. The (group, name) pairs stored; a plugin that does not
    load is one line (exit 2)."""
    wanted = {
        (g, c)
        for a in argv
        for g in ("mode", "task")
        if a.startswith(f"{g}=")
        for c in a.partition("=")[2].split(",")
        if c
    }
    missing = sorted((g, c) for g, c in wanted if not (CONFIGS / g / f"{c}.yaml").is_file())
    if not missing:
        return set()
    from hydra.core.config_store import ConfigStore

    from react_bench.methods.registry import find_method
    from react_bench.tasks import TASKS, config_node

    stored = set()
    for group, name in missing:
        try:
            node = (
                (m.mode_node() if (m := find_method(name)) is not None else None)
                if group == "mode"
                else (config_node(name) if name in TASKS else None)
            )
        except ConfigError as exc:
            fail(str(exc))
        if node is not None:
            ConfigStore.instance().store(group=group, name=name, node=node)
            stored.add((group, name))
    return stored


def check_group_choices(argv: list[str], installed: set[tuple[str, str]] = frozenset()) -> None:  # type: ignore[assignment]
    """An unknown group option is one line naming the choices (Hydra would print a screenful);
    ``installed``: the (group, name) of methods and tasks installed from outside the package (no
    group file)."""
    for arg in argv:
        key, _, value = arg.partition("=")
        if key not in GROUPS or not value:
            continue
        for choice in value.split(","):  # a sweep lists several: mode=react,act
            if (key, choice) in installed:
                continue
            if not (CONFIGS / key / f"{choice}.yaml").is_file():
                choices = ", ".join(sorted(p.stem for p in (CONFIGS / key).glob("*.yaml")))
                hint = ""
                if key == "model" and not choice.startswith(("claude", "gemma", "smollm")):
                    hint = f" (an OpenAI or OpenAI-compatible model: model=openai model.name={choice})"
                fail(f"{key}={choice}: no such {key}{hint}; choose one of {choices}")


def check_selection_keys(argv: list[str]) -> None:
    """Which examples (``split``, ``n``, ``offset``, ``ids``, ``on_missing``, ``data_dir``) is set
    in one place, at the top level: ``task.data_dir=`` is one line saying so (Hydra would answer
    "not in struct" and a hint to append a key nothing reads)."""
    for arg in argv:
        key, _, value = arg.lstrip("+~").partition("=")
        if key.startswith("task.") and key.removeprefix("task.") in SELECTION_KEYS:
            name = key.removeprefix("task.")
            fail(f"{key}={value}: {name} is a top-level setting, for every task: write {name}={value}")


def check_known_keys(argv: list[str]) -> None:
    """A top-level key that is no setting and no group is one line naming the closest setting
    (Hydra would answer "not in struct" and a hint to append a key nothing reads)."""
    import difflib

    from react_bench.settings import SETTINGS

    known = {s.key.split(".")[0] for s in SETTINGS} | set(GROUPS) | {"hydra"}
    for arg in argv:
        key, _, value = arg.lstrip("~").partition("=")
        if arg.startswith(("+", "-")) or "=" not in arg or "." in key or "/" in key or key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1)
        fail(f"{key}={value}: no such setting{f' (did you mean {close[0]}?)' if close else ''}; --help lists them")


def _group_keys(group: str, choice: str) -> dict:
    """The settings a group's choice has: its file's keys, with eval.yaml's own block of that name
    (composed over it) and, for a model, the model spec's own settings (``spec_overrides``)."""
    import dataclasses

    import yaml

    loaded = yaml.safe_load((CONFIGS / group / f"{choice}.yaml").read_text(encoding="utf-8")) or {}
    keys = {k: v for k, v in loaded.items() if k != "defaults"} if isinstance(loaded, dict) else {}
    top = yaml.safe_load((CONFIGS / "eval.yaml").read_text(encoding="utf-8")).get(group)
    if isinstance(top, dict):
        keys |= top
    if group == "model":
        from react_bench.models.stack import ModelSpec

        for own in dataclasses.fields(ModelSpec):
            keys.setdefault(own.name, None)
    return keys


def check_group_keys(argv: list[str]) -> None:
    """A key a group or a settings section does not have (``mode.kk=2``, ``lats.nn=2``, also with
    ``+``) is one line naming it and the group's nearest keys (Hydra would answer "not in struct",
    or with ``+`` add a key nothing reads). The group's choice is the command's (or the resumed
    run's, in ``argv`` first), else eval.yaml's default; with an experiment, whose file may choose
    another, a group the command does not choose is left to Hydra."""
    import difflib

    import yaml

    composed = yaml.safe_load((CONFIGS / "eval.yaml").read_text(encoding="utf-8"))
    defaults = {k: v for d in composed["defaults"] if isinstance(d, dict) for k, v in d.items()}
    chosen = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in argv if a.split("=", 1)[0] in GROUPS and "=" in a}
    experiment = any(a.lstrip("+").startswith("experiment=") for a in argv)
    for arg in argv:
        key, _, value = arg.lstrip("+~").partition("=")
        head, _, rest = key.partition(".")
        if arg.startswith(("++", "~")) or "=" not in arg or not rest or "/" in key or head == "hydra":
            continue
        if head in GROUPS:
            if head not in chosen and experiment:
                continue
            choices = [c for c in str(chosen.get(head, defaults.get(head)) or "").split(",") if c]
            files = [
                c for c in choices if (CONFIGS / head / f"{c}.yaml").is_file()
            ]  # (an installed mode or task has none)
            tables = [(f"{head}={c}", _group_keys(head, c)) for c in files]
        elif isinstance(composed.get(head), dict):
            tables = [(head, composed[head])]
        else:
            continue
        for owner, table in tables:
            node: Any = table
            for part in rest.split("."):
                if not isinstance(node, dict) or part not in node:
                    known = sorted(node) if isinstance(node, dict) else []
                    near = difflib.get_close_matches(part, known, n=3, cutoff=0.4) or known[:8]
                    hint = f"; nearest: {', '.join(near)}" if near else ""
                    fail(f"{arg}: {owner} has no setting {part!r}{hint} (--help lists the settings)")
                node = node[part]


def interrupted(run_dir: Path | None, code: int = 130, what: str = "interrupted") -> NoReturn:
    """Ctrl-C (130) or SIGTERM (143): say what was kept and how to resume, then exit at once.
    Finished examples are already on disk (fsynced as each finishes); a native call still running
    in a worker thread (llama.cpp evaluating a long prompt takes tens of seconds and cannot be
    interrupted) must not hold the process until it returns, so the process ends without waiting
    for its threads. An example in flight is simply run again on resume."""
    if run_dir is None:
        print(f"\n{what} before the run started: nothing was written", file=sys.stderr)
    else:
        print(
            f"\n{what}: finished examples are kept in {run_dir}; resume with:\n"
            f"  {PYTHON} scripts/eval.py resume={run_dir}",
            file=sys.stderr,
        )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


RUN_DIR: list[Path] = []  # the run folder, once known (SIGTERM's handler reads it)


def on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's stop, ``kill``): handled as Ctrl-C is, exit 143."""
    interrupted(RUN_DIR[0] if RUN_DIR else None, 143, "terminated")


@hydra.main(config_path="../configs", config_name="eval", version_base="1.3")
def main(cfg: DictConfig) -> None:
    quiet_console()
    started_in = HydraConfig.get().runtime.cwd  # where the command ran: a sweep's job on a Ray worker starts
    if os.getcwd() != started_in and os.path.isdir(started_in):  # elsewhere; its relative paths mean the
        os.chdir(started_in)  # command's (data, results): the same paths on every node, or a shared filesystem
    run_dir = None  # known once the settings are resolved; Ctrl-C may come before
    try:
        composed = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(composed, dict)
        composed[CHOICES] = {g: HydraConfig.get().runtime.choices.get(g) for g in GROUPS}  # for a later resume
        asked = [o for o in HydraConfig.get().overrides.task if o not in RECORDED]  # the user's own settings
        settings = resolve_settings(composed, asked)  # type: ignore[arg-type]
        run_cfg = RunConfig.from_mapping(settings)
        sweep_id = os.environ.get(SWEEP_ENV)  # every job of a sweep shares one run id (react_bench/sweep.py)
        if sweep_id and run_cfg.prompt_pair is not None:  # jobs of one task, model, mode, runner differ by pair
            sweep_id += "-pair{}{}".format(*run_cfg.prompt_pair)
        run_cfg = replace(run_cfg, run_id=run_cfg.run_id or sweep_id or new_run_id(run_cfg))
        run_dir = run_dir_for(run_cfg, run_cfg.run_id or "")
        if collect(run_cfg):  # a sweep under batch=true: its launcher runs the jobs together (shared rounds)
            return
        RUN_DIR[:] = [run_dir]
        if run_cfg.model.provider == "local":
            print(LOCAL_NOTE.format(name=run_cfg.model.display_label), flush=True)
        result = asyncio.run(evaluate(run_cfg))
    except (ConfigError, DataError, ScriptError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    except OSError as exc:  # the disk or the file system refused (permissions, space, a path): one line
        where = f" ({exc.filename})" if exc.filename else ""
        if run_dir is not None and (run_dir / "run.json").exists():
            fail(
                f"{exc.strerror or exc}{where} writing under {run_dir}; the finished examples are kept there: "
                f"free the space, then resume with {PYTHON} scripts/eval.py resume={run_dir}"
            )
        fail(f"{exc.strerror or exc}{where}")
    except KeyboardInterrupt:
        interrupted(run_dir)
    metrics = result.summary
    if metrics is None:  # a dry run: it printed its estimate
        return
    if run_cfg.show != "none":
        print()
        print(format_table(metrics, task_info(run_cfg.task.name)))
    print(f"\nresults: {result.run_dir}  ({result.n_new} new example(s); examples.jsonl, calls.jsonl, metrics.json)")
    if result.n_over_budget:
        spent = metrics.cost.spent
        spent_text = "an unknown amount" if spent is None else f"${spent:.4f}"
        print(
            f"\nbudget: {spent_text} spent of max_cost_usd={run_cfg.max_cost_usd}; {result.n_over_budget} example(s) "
            f"not started (the next would have passed it); finish them with:\n"
            f"  {PYTHON} scripts/eval.py resume={result.run_dir} max_cost_usd=<more>",
            file=sys.stderr,
        )
        sys.exit(0 if sweeping() else 4)
    if metrics.errors:
        print(
            f"\n{metrics.errors} example(s) ended in an error (see examples.jsonl, reason 'error'); "
            f"rerun exactly those with:\n  {PYTHON} scripts/eval.py resume={result.run_dir} retry_errors=true",
            file=sys.stderr,
        )
        sys.exit(0 if sweeping() else 3)  # a sweep goes on to its next job
    if metrics.judge:
        from react_bench.grading.judge import judge_line

        print(judge_line(metrics))
        if metrics.judge.get("unjudged"):
            why = "; ".join(result.judged.errors) if result.judged is not None and result.judged.errors else "see above"
            print(
                f"\n{metrics.judge['unjudged']} example(s) not judged ({why}); nothing was guessed for them. "
                f"Judge the rest with:\n  {PYTHON} scripts/judge.py {result.run_dir} judge={run_cfg.judge.model}",
                file=sys.stderr,
            )
            sys.exit(0 if sweeping() else 3)


def judge_choice(argv: list[str]) -> list[str]:
    """``judge=<name>`` is ``judge.model=<name>`` (the judge block's other keys: judge.all=, ...)."""
    return [f"judge.model={a.split('=', 1)[1]}" if a.startswith("judge=") else a for a in argv]


RECORDED: list[str] = []  # the group choices taken from a resumed run (not the user's settings)


def shared_rounds(argv: list[str]) -> list[str]:
    """A sweep under ``batch=true`` runs its jobs at once, their requests in shared batch rounds
    (Hydra's launcher ``rounds``: react_bench/shared_rounds.py), unless a launcher is given; a
    single run takes no launcher, so this changes nothing there."""
    batched = any(a.lower() in ("batch=true", "batch=1", "batch=yes") for a in argv)
    chosen = any(a.startswith(("hydra/launcher=", "+hydra/launcher=")) for a in argv)
    return ["hydra/launcher=rounds"] if batched and not chosen else []


def spec_overrides(argv: list[str]) -> list[str]:
    """``model.max_retries=4`` (and the model spec's other own settings: retry backoff, rate limits,
    label, default n) works for every model, whether or not its group file spells the key out:
    given to Hydra as add-or-override (``++``)."""
    import dataclasses

    from react_bench.models.stack import ModelSpec

    own = {f.name for f in dataclasses.fields(ModelSpec)} - {"provider", "settings"}
    return [
        f"++{a}" if a.split("=", 1)[0].removeprefix("model.") in own and a.startswith("model.") else a for a in argv
    ]


if __name__ == "__main__":
    import atexit
    import gc

    # Last of the exit handlers (registered first): what is left is frozen, so the interpreter's
    # final collection does not walk the ~300k objects of the SDK, the data and the wiki one last
    # time (0.35 s of every run's fixed cost). Every file of the run is closed and fsynced by
    # then; standard streams are flushed by the interpreter whatever the collector does.
    atexit.register(gc.freeze)
    signal.signal(signal.SIGTERM, on_sigterm)
    sys.argv[1:] = judge_choice(sys.argv[1:])
    installed = store_installed(sys.argv[1:])
    check_group_choices(sys.argv[1:], installed)
    if "experiment=paper" in sys.argv[1:]:  # every part of the paper, one run after another (or priced)
        from react_bench.paper import main as paper

        sys.exit(paper(sys.argv[1:]))
    check_selection_keys(sys.argv[1:])
    check_known_keys(sys.argv[1:])
    RECORDED[:] = recorded_choices(sys.argv[1:])
    check_group_keys(RECORDED + sys.argv[1:])
    sys.argv[1:] = RECORDED + spec_overrides(sys.argv[1:]) + shared_rounds(sys.argv[1:])
    main()
