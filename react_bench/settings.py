"""Every run setting of ``configs/eval.yaml``, written once: its key, its default and its one-line
meaning. A ground floor (it imports nothing of the package), so ``eval.py --help`` answers at once.

One table, three readers:
- ``configs/eval.yaml`` is written from it (``python -m react_bench.settings > configs/eval.yaml``;
  a test holds the file to the table): Hydra composes that file, users read it;
- ``scripts/eval.py --help`` lists it (with the config groups' choices);
- the typed configs take their defaults from it (``default("concurrency")``: ``RunConfig``,
  ``RaySettings``, ``WebShopConfig``, ``AlfworldConfig``), so a default is never written twice.

The type of each setting is its typed config's field (``runconfig.RunConfig`` and the section
dataclasses), which check every value and name the setting in their errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    key: str  # dotted for a section's: "webshop.url"
    default: Any
    help: str
    before: str = ""  # a comment block written above it in eval.yaml (a blank line first)
    section: str = ""  # the first setting of a section: the comment on the section's own line


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "split",
        "offline",
        "offline (its wiki is offline) | paper500 (the paper's 500) | all | lats100 (HotpotQA: LATS's 100 train "
        "questions, from the hub)",
        before="Examples: split = offline (default; its wiki is offline) | paper500 | all | lats100.",
    ),
    Setting("n", None, "null: the model's default_n (local: 5), else the whole split"),
    Setting("offset", 0, "skip the first examples of the split"),
    Setting("ids", None, "explicit example ids (list or one id)"),
    Setting("on_missing", "error", "error | skip (report coverage) when the split's file lacks examples"),
    Setting(
        "epochs",
        1,
        "attempts per example (a line each): pass@k and pass^k for k <= epochs; each attempt its "
        "own cache keys and seeds",
    ),
    Setting("data_dir", None, "else $REACT_BENCH_DATA_DIR, ./data, ../shared/data"),
    Setting(
        "protocol",
        "paper",
        "paper: the paper's fixed settings | custom: change them",
        before="protocol=paper fixes parser, max_steps, on_limit, temperature, max_tokens and CoT-SC\n"
        "settings to the paper's; protocol=custom lets you change them (robust parser by default).",
    ),
    Setting("parser", None, "paper | robust"),
    Setting("max_steps", None, "paper: 7"),
    Setting("on_limit", None, "give_up | wrap_up | backoff"),
    Setting("temperature", None, "paper: 0 (CoT-SC samples: cot_sc_temperature)"),
    Setting("max_tokens", None, "output tokens per call (paper: per task)"),
    Setting("cot_sc_samples", None, "paper: 21"),
    Setting("cot_sc_temperature", None, "paper: 0.7"),
    Setting(
        "webshop.url",
        None,
        "a WebShop server (github:princeton-nlp/WebShop), e.g. http://localhost:3000; null: the project's own",
        before=" ",
        section="task=webshop",
    ),
    Setting("webshop.seed", 0, "the project's own server: its generated catalog"),
    Setting("webshop.products", 2000, "the project's own server: catalog size"),
    Setting("webshop.goals", 500, "the project's own server: goals fixed_0 ... fixed_499"),
    Setting("webshop.timeout_s", 30, "per page"),
    Setting(
        "webshop.clicks",
        None,
        "null: the protocol's | notebook (a click the instruction page or a sub-page "
        "does not offer shows it again) | strict (Invalid action!)",
    ),
    Setting(
        "alfworld.split",
        "valid_unseen",
        "valid_unseen (the paper's 134 unseen games) | valid_seen | train (the official data: data_dir=)",
        before=" ",
        section="task=alfworld",
    ),
    Setting("alfworld.games", 134, "generated eval games, when no official data is given"),
    Setting("alfworld.train_games", 60, "generated train games (the project's exemplars)"),
    Setting("alfworld.seed", 0, "generated games"),
    Setting(
        "alfworld.skip_bad_games",
        False,
        "true: run without game folders whose files cannot be read (else: exit 2, naming the first)",
    ),
    Setting(
        "reflexion.trials",
        None,
        "trials per example at most; null: the task's protocol (alfworld 12, as Reflexion; else 5)",
        before=" ",
        section="mode=reflexion (react_bench/methods/reflexion.py)",
    ),
    Setting("reflexion.memory", 3, "reflections kept in the prompt (the last ones)"),
    Setting(
        "reflexion.evaluator",
        "auto",
        "auto (env where the environment scores, else oracle) | env | oracle (the gold: oracle feedback) "
        "| heuristic | judge",
    ),
    Setting("reflexion.halt", None, "the heuristic halt ends a trial; null: the task's protocol (alfworld true)"),
    Setting("reflexion.max_repeats", 3, "halt: the same action answered the same way more than this many times"),
    Setting("reflexion.max_actions", 30, "halt: more than this many actions"),
    Setting("reflexion.judge", None, "evaluator=judge: a configs/model/<name> as the judge; null: the run's model"),
    Setting("reflexion.max_tokens", 256, "output tokens of a reflection"),
    Setting(
        "lats.n",
        5,
        "children sampled per expansion (LATS: --n_generate_sample 5)",
        before=" ",
        section="mode=lats (react_bench/methods/lats.py: where each default comes from)",
    ),
    Setting("lats.iterations", 30, "search iterations at most (LATS: --iterations 30)"),
    Setting("lats.exploration", 1.4142135623730951, "UCT's exploration weight (LATS: sqrt(2))"),
    Setting("lats.temperature", 1.0, "of the samples and the value calls (LATS: 1.0)"),
    Setting("lats.value_samples", 1, "value calls per node, averaged (LATS: --n_evaluate_sample 1)"),
    Setting("lats.sc_weight", 0.0, "share of the self-consistency term in a node's value (LATS's code: 0)"),
    Setting("lats.reflections", 3, "reflections on failed trajectories at most (LATS: 3)"),
    Setting(
        "lats.feedback",
        "honest",
        "honest (the environment's reward, else the value function) | oracle (the gold answer ends the "
        "search: oracle feedback, LATS's HotpotQA setting)",
    ),
    Setting(
        "lats.select",
        "reward",
        "reward (the answer is the best-rewarded finished node: on WebShop and ALFWorld the environment's "
        "reward, scored against the hidden goal, chooses it, and every table says so) | value (the value "
        "function rates finished nodes too; the environment's reward is only measured)",
    ),
    Setting("lats.value_max_tokens", 100, "output tokens of a value call"),
    Setting("lats.reflection_max_tokens", 256, "output tokens of a reflection"),
    Setting("lats.live_envs", 4, "environments kept at their node (the others are rebuilt by replaying actions)"),
    Setting(
        "lats.protocol",
        "project",
        "project (this harness's search) | official (LATS's own HotpotQA or WebShop code at 853d816, its "
        "prompts and quirks, byte for byte: methods/lats_official.py, lats_official_webshop.py)",
    ),
    Setting("prompt.file", None, "a prompt JSON file by path (e.g. the paper's), with key", before=" "),
    Setting("prompt.key", None, "the key of the prompt in prompt.file"),
    Setting(
        "prompt.instruction_file",
        None,
        "with file: a JSON file of instructions by path (the paper's), with instruction_key",
    ),
    Setting("prompt.instruction_key", None, "null: the project's own instruction goes before the foreign exemplars"),
    Setting(
        "prompt.pair",
        None,
        "task=alfworld: which two of the three exemplars per task type, in order (null: [1,0], the notebook's)",
    ),
    Setting(
        "results_dir", "results", "where runs go: <results_dir>/<task>/<model>/<mode>-<runner>/<run id>/", before=" "
    ),
    Setting(
        "run_id",
        None,
        "default: a UTC timestamp (-2, -3 ... if that folder is taken); a plain name (letters, digits, . _ -)",
    ),
    Setting("resume", False, "true (with run_id) or a run folder: continue that run with its own settings"),
    Setting("retry_errors", False, "with resume: run again the examples that ended in an error"),
    Setting("concurrency", 1, "examples at once (capped at 256); executor=ray: at least one per worker"),
    Setting("executor", "local", "local: this process | ray: the episodes on Ray workers, this process the one writer"),
    Setting(
        "ray.address",
        None,
        "auto | <host:port> of a running cluster | null: a Ray instance of this machine for the run",
        section="executor=ray (and the sweeps of hydra/launcher=ray)",
    ),
    Setting("ray.workers", None, "episode workers (Ray actors); null: as many as the cluster's free CPUs / num_cpus"),
    Setting("ray.num_cpus", 1, "CPUs each worker reserves"),
    Setting(
        "dry_run",
        False,
        "true: no model call; the first request (dry_run_request.json) and the estimated tokens and cost",
    ),
    Setting("max_cost_usd", None, "a budget in USD: no example starts once spend + in-flight estimates would pass it"),
    Setting(
        "judge.model",
        None,
        "judge=<configs/model name>: an LLM judges each answered miss (SimpleQA's grader) | rules (a heuristic, "
        "no model) | null: exact match alone, the paper's",
        section="judge=<name> (react_bench/grading/judge.py): a second reading beside exact match; free-text tasks",
    ),
    Setting("judge.all", False, "true: exact-match hits are sent to the judge too"),
    Setting("judge.base_url", None, "the judge model's endpoint, where not its file's"),
    Setting("judge.api_key_env", None, "the NAME of the variable holding the judge's key, where not its file's"),
    Setting(
        "trace.endpoint",
        None,
        "an OTLP/HTTP collector (Phoenix: http://localhost:6006): each example a trace as the run goes; "
        "null: $OTEL_EXPORTER_OTLP_ENDPOINT, else none",
        section="trace (react_bench/tracing): OpenTelemetry GenAI spans, live (docs/traces.md)",
    ),
    Setting(
        "trace.content",
        False,
        "true: the questions, responses, actions and observations go into the spans too (else sizes only)",
    ),
    Setting("batch", False, "true: every model request through the Message Batches API in rounds, half price"),
    Setting("batch_poll_s", 30, "seconds between polls of a batch"),
    Setting("cache", True, "request cache: a rerun makes no model call; false: bypass; refresh: ask again, overwrite"),
    Setting(
        "shots",
        None,
        "exemplars: k the first k (tool_use: as native turns); 0 zero-shot (text: the bare format, no "
        "instruction, as fine-tuned models are sent; their default)",
    ),
    Setting("progress", True, "the progress bar (false: none)"),
    Setting(
        "show", "summary", "summary (bar + table) | trajectories (every step as it happens) | none (results line only)"
    ),
)

_BY_KEY = {s.key: s for s in SETTINGS}


# Each section of eval.yaml by name, in order, with the comment on its line (a setting's ``section``).
SECTIONS: dict[str, str] = {}
for _setting in SETTINGS:
    if "." in _setting.key:
        _head = _setting.key.partition(".")[0]
        SECTIONS[_head] = _setting.section or SECTIONS.get(_head, "")


def default(key: str) -> Any:
    """The default of a setting (``"concurrency"``, ``"webshop.products"``)."""
    return _BY_KEY[key].default


# What eval.yaml holds besides the settings: the groups' defaults, and Hydra's own section.
_HEAD = """\
# Written by `python -m react_bench.settings > configs/eval.yaml` from react_bench/settings.py:
# change a setting there (its default and its meaning), then write this file again.
# python scripts/eval.py task=hotpotqa mode=react runner=text model=local wiki=local
defaults:
  - task: hotpotqa
  - mode: react
  - runner: text
  - model: local
  - wiki: local
  - context: full
  - prompt: own
  - optional experiment: null
  - _self_
  - override hydra/job_logging: stdout  # no eval.log file in the working folder
"""
_TAIL = """
hydra:
  run:
    dir: .
  sweep:            # a sweep keeps only its multirun.yaml here; jobs write no folders of their own
    dir: ${results_dir}/sweeps/${now:%Y%m%d-%H%M%S}
    subdir: .
  callbacks:
    combined_table:
      _target_: react_bench.sweep.CombinedTable
  output_subdir: null
  job:
    chdir: false
"""


def yaml_value(value: Any) -> str:
    """A default as YAML writes it (``null``, ``true``, ``30.0``, ``offline``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_yaml() -> str:
    """The text of ``configs/eval.yaml``."""
    lines = [_HEAD.rstrip("\n")]
    section = None
    for s in SETTINGS:
        head, _, leaf = s.key.rpartition(".")
        if s.before:
            lines.append("")
            lines += [f"# {line}" for line in s.before.splitlines() if line.strip()]
        if head != section:
            section = head or None
            if head:
                lines.append(f"{head + ':':<17}  # {SECTIONS[head]}" if SECTIONS[head] else f"{head}:")
        indent = "  " if head else ""
        lines.append(f"{indent}{leaf}: {yaml_value(s.default)}".ljust(17) + f"  # {s.help}")
    return "\n".join(lines) + "\n" + _TAIL


def help_lines() -> list[str]:
    """``--help``'s settings: ``key=default`` and the meaning, one line each."""
    return [f"  {s.key + '=' + yaml_value(s.default):<34} {s.help}" for s in SETTINGS]


if __name__ == "__main__":
    print(render_yaml(), end="")
