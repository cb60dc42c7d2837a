"""The typed configuration of one run, built from the plain dict that Hydra composes.

Hydra stops at ``scripts/``: ``RunConfig.from_mapping`` takes an ordinary dict (what
``OmegaConf.to_container`` returns) and every setting is checked here, with errors that
name the setting. A run's config is composed of the configs of its parts, each built by
its own ``from_mapping``: ``TaskConfig`` (the ``task`` group plus the top-level example
selection), the task's environment config (the task's ``env_group``: ``WikiConfig`` from the
``wiki`` group for the Wikipedia tasks), ``SolveSettings`` (mode, runner, decoding); the model
stays a plain mapping until ``models.make_model`` types it for its provider.

``protocol=paper`` (the default) fixes what the paper fixes: parser ``paper``, 7 steps,
``give_up`` at the cap, temperature 0, 100 new tokens per step, 21 CoT-SC samples at 0.7, with a
task's own protocol on top (``TaskInfo.protocol``: e.g. ALFWorld's 50 steps). A mode the task
does not run (Standard or CoT where examples have no reference answers) is refused here.
Asking for something else under ``protocol=paper`` is an error; ``protocol=custom`` allows
it, and the run's fingerprint records every setting either way. ``on_limit=backoff`` (hand
the example to CoT-SC at the cap) is the mode ``react_cot_sc``, and is read as that mode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

from react_bench.console import Show, check_show
from react_bench.context import ContextConfig
from react_bench.errors import ConfigError, check_known, settings_of
from react_bench.grading.verdicts import JudgeSettings, check_task
from react_bench.loop import LoopConfig
from react_bench.methods.core import ModeSpec, SolveSettings
from react_bench.methods.registry import get_method, methods, settle
from react_bench.models.base import ThinkingConfig, operational
from react_bench.models.cache import CacheMode
from react_bench.models.stack import ROUTE_SETTINGS, ModelSpec, provider_config_class, route_of
from react_bench.paths import CONFIGS
from react_bench.redact import signed_here, without_userinfo
from react_bench.rundir import StoredRun, check_run_id
from react_bench.settings import SECTIONS, SETTINGS, default
from react_bench.tasks import TASKS, task_info
from react_bench.tasks.base import TaskConfig, TaskInfo

_SOLVE, _LOOP = SolveSettings(), LoopConfig()
# The paper's protocol: the settings' own defaults, read from the dataclasses (written once there).
PAPER = {
    "parser": _SOLVE.parser,
    "max_steps": _LOOP.max_steps,
    "on_limit": _LOOP.on_limit,
    "temperature": _SOLVE.temperature,
    "max_tokens": _SOLVE.max_tokens,
    "cot_sc_samples": _SOLVE.cot_sc_samples,
    "cot_sc_temperature": _SOLVE.cot_sc_temperature,
}
CUSTOM_DEFAULTS = dict(PAPER, parser="robust")
# Top-level keys of configs/eval.yaml that select a task's examples (TaskConfig fields).
SELECTION_KEYS = ("split", "n", "offset", "ids", "on_missing", "data_dir")


Executor = Literal["local", "ray"]
Protocol = Literal["paper", "custom"]
PromptSource = Literal["own", "paper"]
PROTOCOLS: tuple[str, ...] = get_args(Protocol)


@dataclass(frozen=True)
class RaySettings:
    """``executor=ray``: where the cluster is and how the run's episodes use it (``executors/ray.py``)."""

    address: str | None = default("ray.address")  # auto | host:port | None: a Ray instance of this machine
    workers: int | None = default("ray.workers")  # episode workers (Ray actors); None: as the cluster's CPUs allow
    num_cpus: float = float(default("ray.num_cpus"))  # CPUs each worker reserves (an ALFWorld engine: one core)

    @staticmethod
    def from_mapping(values: Mapping[str, Any]) -> RaySettings:
        check_known(values, (f.name for f in fields(RaySettings)), "ray")
        address = values.get("address")
        workers = _int(values, "workers", 0) or None
        num_cpus = values.get("num_cpus", default("ray.num_cpus"))
        try:
            num_cpus = float(num_cpus)
        except (TypeError, ValueError):
            raise ConfigError(f"ray.num_cpus={num_cpus!r}: expected a number") from None
        if workers is not None and workers < 1 or num_cpus < 0:
            raise ConfigError(f"ray.workers={workers}, ray.num_cpus={num_cpus}: must be positive")
        return RaySettings(None if address in (None, "") else str(address), workers, num_cpus)


@dataclass(frozen=True)
class TraceSettings:
    """``trace``: where a run's spans go while it runs (``react_bench.tracing``); never in the fingerprint."""

    endpoint: str | None = default("trace.endpoint")  # None: $OTEL_EXPORTER_OTLP_ENDPOINT, else no tracing
    content: bool = default("trace.content")

    @staticmethod
    def from_mapping(values: Mapping[str, Any]) -> TraceSettings:
        check_known(values, (f.name for f in fields(TraceSettings)), "trace")
        endpoint = values.get("endpoint")
        if endpoint not in (None, "") and not str(endpoint).startswith(("http://", "https://")):
            raise ConfigError(f"trace.endpoint={endpoint!r}: an OTLP/HTTP URL (http://host:4318), or null")
        return TraceSettings(None if endpoint in (None, "") else str(endpoint), _bool(values, "content"))


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig
    model: ModelSpec  # a plain mapping (a model group file's) is read into one
    solve: SolveSettings
    env: Any = None  # the task's environment config (WikiConfig for the Wikipedia tasks); None: none
    protocol: Protocol = default("protocol")
    prompt_source: PromptSource = "own"  # prompt=own | paper: the project's exemplars or the paper's own files
    prompt_file: str | None = None
    prompt_key: str | None = None
    instruction_file: str | None = None  # with prompt.file: the instruction put before its exemplars
    instruction_key: str | None = None
    prompt_pair: tuple[int, int] | None = None  # ALFWorld: which two of three exemplars per task type, in order
    results_dir: Path = Path(default("results_dir"))
    run_dir: Path | None = None  # the folder itself (a resumed run, wherever it lies); None: results_dir's layout
    # The defaults are the settings table's (react_bench/settings.py), each written once there.
    run_id: str | None = default("run_id")
    resume: bool = default("resume")
    retry_errors: bool = default("retry_errors")  # with resume: run the examples that ended in an error again
    concurrency: int = default("concurrency")
    epochs: int = default("epochs")  # attempts per example (pass@k, pass^k)
    progress: bool = default("progress")
    show: Show = default("show")  # summary | trajectories | none (console.py)
    dry_run: bool = default("dry_run")  # no model call: the first request and the run's estimate (estimate.py)
    max_cost_usd: float | None = default("max_cost_usd")  # a budget: no example starts once it would be passed
    batch: bool = default("batch")  # every request through the Message Batches API, in rounds (executors/rounds.py)
    judge: JudgeSettings = JudgeSettings()  # judge=: a second reading of the answers beside exact match (grading.judge)
    batch_poll_s: float = float(default("batch_poll_s"))
    request_cache: CacheMode = "on" if default("cache") is True else "off"  # `cache`: true | false | refresh
    executor: Executor = default("executor")  # local: this process | ray: the episodes on a Ray cluster
    ray: RaySettings = RaySettings()
    trace: TraceSettings = TraceSettings()
    composed: dict[str, Any] = field(default_factory=dict, compare=False)  # the mapping this was built from

    def __post_init__(self) -> None:
        if isinstance(self.model, Mapping):
            object.__setattr__(self, "model", ModelSpec.from_mapping(self.model))
        info = task_info(self.task.name)  # the method's settings made whole and checked, once
        object.__setattr__(self, "solve", settle(self.solve, info.name, info.answers, info.protocol))
        check_task(self.judge, info)
        if self.executor == "ray" and not get_method(self.solve.mode).distributable:
            raise ConfigError(
                f"mode={self.solve.mode} with executor=ray: it keeps files of the run in the run's own process "
                "(e.g. a trial log to resume mid-example); run it with executor=local"
            )

    @staticmethod
    def from_mapping(cfg: Mapping[str, Any]) -> RunConfig:
        _check_sections(cfg)
        protocol = cast(Protocol, cfg.get("protocol", default("protocol")))
        if protocol not in PROTOCOLS:
            raise ConfigError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        model = ModelSpec.from_mapping(_section(cfg, "model"))
        prompt = cfg.get("prompt") or {}
        concurrency = _int(cfg, "concurrency", default("concurrency"))
        if concurrency < 1:
            raise ConfigError(f"concurrency={concurrency}: must be at least 1")
        epochs = _int(cfg, "epochs", default("epochs"))
        if epochs < 1:
            raise ConfigError(f"epochs={epochs}: must be at least 1 (attempts per example)")

        task = _task_config(cfg, model)
        info = task_info(task.name)
        solve = _solve_settings(cfg, protocol, info)
        env_group = TASKS[task.name].env_group
        return RunConfig(
            task=task,
            model=model,
            solve=solve,
            env=TASKS[task.name]().env_config(cfg.get(env_group) or {}, protocol) if env_group else None,
            protocol=protocol,
            prompt_source=_prompt_source(prompt),
            prompt_file=prompt.get("file"),
            prompt_key=prompt.get("key"),
            instruction_file=prompt.get("instruction_file"),
            instruction_key=prompt.get("instruction_key"),
            prompt_pair=_pair(prompt.get("pair")),
            results_dir=Path(cfg.get("results_dir") or default("results_dir")),
            run_dir=None if cfg.get("run_dir") is None else Path(str(cfg["run_dir"])),
            run_id=None if cfg.get("run_id") is None else check_run_id(str(cfg["run_id"])),
            resume=_bool(cfg, "resume"),
            retry_errors=_bool(cfg, "retry_errors"),
            concurrency=concurrency,
            epochs=epochs,
            progress=_bool(cfg, "progress", default("progress")),
            show=check_show(str(cfg.get("show") or default("show"))),
            request_cache=_cache_mode(cfg.get("cache", default("cache"))),
            dry_run=_bool(cfg, "dry_run"),
            batch=_bool(cfg, "batch"),
            judge=JudgeSettings.from_mapping(cfg.get("judge")),
            batch_poll_s=float(cfg.get("batch_poll_s") or default("batch_poll_s")),
            max_cost_usd=_budget(cfg.get("max_cost_usd")),
            executor=_executor(cfg),
            ray=RaySettings.from_mapping(cfg.get("ray") or {}),
            trace=TraceSettings.from_mapping(cfg.get("trace") or {}),
            composed=json.loads(json.dumps(dict(cfg), default=str)),
        )


def _executor(cfg: Mapping[str, Any]) -> Executor:
    executor = str(cfg.get("executor") or default("executor"))
    if executor not in ("local", "ray"):
        raise ConfigError(f"executor={executor}: choose local (this process) or ray (a Ray cluster: ray.address)")
    if executor == "ray" and _bool(cfg, "batch"):
        raise ConfigError(
            "executor=ray with batch=true: a batch is one request to the Batches API from this "
            "process; run it with executor=local"
        )
    return "ray" if executor == "ray" else "local"


def _task_config(cfg: Mapping[str, Any], model: ModelSpec) -> TaskConfig:
    values = dict(_section(cfg, "task"))
    values.update({key: cfg[key] for key in SELECTION_KEYS if cfg.get(key) is not None})
    if values.get("n") is None and model.default_n is not None:
        values["n"] = model.default_n  # the tiny local model runs a handful unless told otherwise
    for key in ("n", "offset"):
        if values.get(key) is not None:
            values[key] = _int(values, key, 0)
    return TaskConfig.from_mapping(values)


def _solve_settings(cfg: Mapping[str, Any], protocol: Protocol, info: TaskInfo) -> SolveSettings:
    chosen = _protocol_settings(cfg, protocol, info)
    runner = _section(cfg, "runner")
    group = _section(cfg, "mode")
    method = get_method(str(group.get("name", _SOLVE.mode)))
    own = {k: v for k, v in group.items() if k != "name" and k not in PAPER}  # (PAPER's: the protocol's)
    options = method.parse({**cfg, "mode": own}, info.protocol)
    on_limit = chosen["on_limit"]
    if on_limit == "backoff":
        method, on_limit = _with_backoff(method.name, method.spec), "give_up"
    mode = method.name
    thinking = runner.get("thinking")
    return SolveSettings(
        mode=mode,
        runner=runner.get("name", "text"),
        parser=chosen["parser"],
        loop=LoopConfig(
            max_steps=_int(chosen, "max_steps", _LOOP.max_steps),
            on_limit=on_limit,
            # a task whose paper loop never ran the action decided at its cap (WebShop's notebook)
            act_at_cap=protocol != "paper" or info.protocol.get("act_at_cap", True) is not False,
        ),
        max_tokens=_int(chosen, "max_tokens", _SOLVE.max_tokens),
        temperature=chosen["temperature"],
        cot_sc_samples=_int(chosen, "cot_sc_samples", _SOLVE.cot_sc_samples),
        cot_sc_temperature=float(chosen["cot_sc_temperature"]),
        thinking=ThinkingConfig(**thinking) if thinking else None,
        tool_max_tokens=_int(runner, "max_tokens", _SOLVE.tool_max_tokens),
        shots=None if cfg.get("shots") is None else _int(cfg, "shots", 0),
        context=_task_context(_context(cfg.get("context") or {}), protocol, info),
        options=options,
    )


def compose(overrides: Sequence[str]) -> dict[str, Any]:
    """configs/eval.yaml composed with ``overrides`` as plain data, as ``scripts/eval.py`` composes it
    (for the code that builds runs itself: ``experiment=paper``, ``react-bench search``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = hydra_compose(config_name="eval", overrides=list(overrides))
    composed = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(composed, dict)
    return composed  # type: ignore[return-value]


def _with_backoff(mode: str, spec: ModeSpec) -> Any:
    """``on_limit=backoff``: the mode of parts that runs ``mode``'s first part with CoT-SC as its
    backoff (ReAct -> ``react_cot_sc``); a mode with no such counterpart is a ConfigError."""
    wanted = replace(spec, backoff="cot_sc")
    for method in methods().values():
        if method.spec == wanted and method.of_parts:
            return method
    raise ConfigError(f"on_limit=backoff hands ReAct's unanswered examples to CoT-SC; mode={mode} has no such backoff")


def _task_context(context: ContextConfig, protocol: Protocol, info: TaskInfo) -> ContextConfig:
    """A task whose paper protocol has its own context remedy (WebShop's notebook: ``window``)
    gets it under ``protocol=paper`` in place of the default ``full``; another remedy needs
    ``protocol=custom``."""
    fixed = info.protocol.get("context")
    if protocol != "paper" or fixed is None or context.name == fixed:
        return context
    if context.name != "full":
        raise ConfigError(
            f"protocol=paper fixes context={fixed} for task={info.name}; you asked for context={context.name}. "
            "Add protocol=custom to run outside the paper's protocol."
        )
    return replace(context, name=fixed)


def _context(values: Mapping[str, Any]) -> ContextConfig:
    return settings_of(ContextConfig, values, "context")


def _prompt_source(prompt: Mapping[str, Any]) -> PromptSource:
    """``prompt=own|paper`` (configs/prompt/); ``prompt.file`` names other exemplars, so not with ``paper``."""
    source = prompt.get("source") or "own"
    if source not in get_args(PromptSource):
        raise ConfigError(f"prompt={source}: one of {', '.join(get_args(PromptSource))}")
    if source == "paper" and prompt.get("file"):
        raise ConfigError("prompt=paper takes the paper's own files; prompt.file names another: give one of the two")
    return cast(PromptSource, source)


def _pair(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        first, second = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"prompt.pair={value!r}: expected two exemplar numbers, e.g. [1,0]") from None
    if first == second or not {first, second} <= {0, 1, 2}:
        raise ConfigError(f"prompt.pair={value!r}: two different exemplars of 0, 1, 2")
    return first, second


def _budget(value: Any) -> float | None:
    if value is None:
        return None
    try:
        budget = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"max_cost_usd={value!r}: expected an amount in USD") from None
    if not budget > 0:
        raise ConfigError(f"max_cost_usd={value!r}: must be more than 0")
    return budget


def _cache_mode(value: Any) -> CacheMode:
    match value:
        case True | "on":
            return "on"
        case False | "off":
            return "off"
        case "refresh":
            return "refresh"
        case _:
            raise ConfigError(f"cache={value!r}: choose true, false or refresh")


def _bool(values: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = values.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={value!r}: expected true or false")
    return value


def _int(values: Mapping[str, Any], key: str, default: int) -> int:
    value = values.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key}={value!r}: expected a whole number")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key}={value!r}: expected a whole number") from None


MAX_CONCURRENCY = 256  # examples at once; more is capped with a note (evaluate): every API's rate limit is nearer


def _section(cfg: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = cfg.get(name)
    if not isinstance(value, Mapping):
        raise ConfigError(f"missing config group {name!r} (e.g. {name}=...)")
    return value


def _check_sections(cfg: Mapping[str, Any]) -> None:
    """A value given where a group of settings stands (``ray=5``, ``lats=3``) is a bad setting,
    whatever the mode or executor: said in one line, naming the group's settings."""
    for name in SECTIONS:
        value = cfg.get(name)
        if value is not None and not isinstance(value, Mapping):
            keys = [s.key for s in SETTINGS if s.key.startswith(f"{name}.")]
            raise ConfigError(
                f"{name}={value}: {name} is a group of settings, not a value; set them one by one, "
                f"e.g. {keys[0]}=... (its settings: {', '.join(keys)})"
            )


def _also_invalid(key: str, value: Any) -> str:
    """What a value is wrong for beyond the protocol (said with the protocol's message)."""
    at_least = {"max_steps": 1, "cot_sc_samples": 1}
    if key in at_least and isinstance(value, int | float) and value < at_least[key]:
        return f", and {key} must be at least {at_least[key]}"
    return ""


def _protocol_settings(cfg: Mapping[str, Any], protocol: Protocol, info: TaskInfo) -> dict[str, Any]:
    base = {
        **(PAPER if protocol == "paper" else CUSTOM_DEFAULTS),
        **{k: v for k, v in info.protocol.items() if k in PAPER},
    }
    mode = cfg.get("mode") or {}
    chosen = dict(base)
    for key in base:
        value = cfg.get(key, mode.get(key) if isinstance(mode, Mapping) else None)
        if value is None:
            continue
        if protocol == "paper" and value != base[key]:
            also = _also_invalid(key, value)  # both fixes at once: protocol=custom alone would not do
            raise ConfigError(
                f"protocol=paper fixes {key}={base[key]!r} for task={info.name}; you asked for {key}={value!r}. "
                f"Add protocol=custom to run outside the paper's protocol{also}."
            )
        chosen[key] = value
    return chosen


# ------------------------------------------------------------ resume and replay take a run's settings

# Settings of how a run is carried out, never of what it computes: a resume may change them.
RUN_KEYS = frozenset(
    {"resume", "run_id", "run_dir", "results_dir", "retry_errors", "progress", "concurrency", "show", "cache"}
    | {"dry_run", "max_cost_usd", "batch", "batch_poll_s", "executor", "ray", "judge"}
)
# Of those, how the run was started (batched or live, its budget, its concurrency): a resume goes on
# as the run started unless this command line restates one (``resume=<dir>`` alone of a batched run
# stays batched, never live at full price). The rest are this invocation's own, and where episodes
# run (executor, ray) is this machine's: a run folder does not choose a cluster to connect to.
CARRIED_KEYS = frozenset({"concurrency", "max_cost_usd", "batch", "batch_poll_s"})


def is_operational(key: str, stored: Mapping[str, Any]) -> bool:
    """Whether the dotted setting ``key`` may differ from the recorded run's (``stored``): a
    field its config class marks operational (``models.base.OPERATIONAL``): the model's
    (``model.timeout_s``, ``model.max_retries``) or the task's environment's (``wiki.timeout_s``)."""
    top, _, rest = key.partition(".")
    name = rest.split(".")[0]
    if not name:
        return False
    if top == "model":
        return ModelSpec.from_mapping(stored.get("model") or {}).is_operational(name)
    task = TASKS.get(str((stored.get("task") or {}).get("name")))
    if task is None or task.env_group != top:
        return False
    env = task().env_config(stored.get(top) or {}, str(stored.get("protocol") or "paper"))
    return env is not None and operational(type(env), name)


REQUESTED = "requested"  # in a resolved mapping: what the command asked for, before resolution
CHOICES = "choices"  # in a composed mapping: the config group files chosen (model=scripted, ...)


def override_keys(overrides: Sequence[str]) -> list[str]:
    """The dotted keys that Hydra command-line overrides set (``+a.b=1`` -> ``a.b``)."""
    return [o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o]


def _at(mapping: Mapping[str, Any], dotted: str) -> Any:
    value: Any = mapping
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _refuse_changes(
    current: Mapping[str, Any], stored: Mapping[str, Any], keys: Sequence[str], allowed: frozenset[str], what: str
) -> None:
    for key in keys:
        if key.split(".")[0] in allowed or is_operational(key, stored):
            continue
        now, then = _at(current, key), _at(stored, key)
        # the same value as the recorded run's own command asked for is no change either
        if now != then and now != _at(stored.get(REQUESTED) or {}, key):
            shown = then.get("name", then.get("backend", then)) if isinstance(then, Mapping) else then
            raise ConfigError(
                f"{what}: {key} differs from the recorded run's ({shown!r}); drop {key}=... from the command"
            )


def own_route(
    current: Mapping[str, Any], stored: Mapping[str, Any], restated: Sequence[str], run_dir: Path, signature: object
) -> dict:
    """The resumed run's model settings, its endpoint and key variable the user's own.

    A run folder may come from someone else, and its run.json names a server and a variable: a
    resumed run must not send the value of a variable the folder chose to a server the folder
    chose. So the folder's route is kept whole where this user signed it (``redact.signed_here``:
    a run made on this machine by this user); otherwise each of ``ROUTE_SETTINGS`` is kept only
    where it is what the user's own model config gives (the same provider composed now, or the
    provider's default: ``api.anthropic.com`` with ``ANTHROPIC_API_KEY``), or where this command
    restates it (``restated``, e.g. ``model.base_url=...``); else resume stops with one line."""
    model = dict(stored.get("model") or {})
    signed = signed_here(route_of(model), signature)
    own = current.get("model") or {}
    config_class = provider_config_class(str(model.get("provider")))
    defaults = {f.name: f.default for f in fields(config_class)} if config_class is not None else {}
    same_provider = own.get("provider") == model.get("provider")
    differ = []
    for name in ROUTE_SETTINGS:
        if f"model.{name}" in restated:
            model[name] = own.get(name)
            continue
        if signed or (name not in model and name not in defaults):
            continue
        value = model.get(name, defaults.get(name))
        if (same_provider and own.get(name, defaults.get(name)) == value) or value == defaults.get(name, MISSING):
            continue
        differ.append(f"model.{name}={without_userinfo(str(value))}")
    if differ:
        raise ConfigError(
            f"resume: {run_dir} sends its requests with {' '.join(differ)}, which your model config does not: "
            "a run folder does not choose where your keys go; restate them on the command line to resume "
            f"there ({' '.join(d.split('=')[0] + '=...' for d in differ)})"
        )
    return model


def find_run(results_dir: Path, run_id: str) -> Path:
    """The folder of run ``run_id`` under ``results_dir`` (any task, model, mode, runner)."""
    found = sorted(p.parent for p in results_dir.glob(f"*/*/*/{check_run_id(run_id)}/run.json"))
    if not found:
        raise ConfigError(f"resume: no run {run_id!r} under {results_dir}/ (give resume=<run dir> to point at it)")
    if len(found) > 1:
        raise ConfigError(f"resume: {len(found)} runs are called {run_id!r}: give one as resume=<run dir>: {found}")
    return found[0]


def resolve_settings(current: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """The settings a run really uses. Plain runs: ``current``. ``resume=<run dir>`` (or
    ``run_id=<id> resume=true``): the recorded run's settings, any differing setting given on
    the command line refused by name. ``model=replay``: the recorded run's task, mode, runner,
    protocol and exact examples, with the replay model."""
    keys = override_keys(overrides)
    requested = {k: v for k, v in current.items() if k != REQUESTED}
    resolved = _resolve(current, keys)
    return {**resolved, REQUESTED: requested}


def _resolve(current: Mapping[str, Any], keys: list[str]) -> dict[str, Any]:
    resume = current.get("resume")
    model = current.get("model") or {}
    if resume not in (None, False):
        if resume is True:
            if current.get("run_id") is None:
                raise ConfigError("resume=true needs run_id=<id>, or give the run folder: resume=<run dir>")
            run_dir = find_run(Path(current.get("results_dir") or "results"), str(current["run_id"]))
        else:
            run_dir = Path(str(resume))
        recorded = StoredRun.read(run_dir)
        stored = recorded.composed()
        route = [k for k in keys if k.startswith("model.") and k.split(".", 1)[1] in ROUTE_SETTINGS]
        _refuse_changes(current, stored, [k for k in keys if k not in route], RUN_KEYS, "resume")
        stored["model"] = own_route(current, stored, route, run_dir, recorded.data.get("route_signature"))
        given = {k.split(".")[0] for k in keys}
        kept = {
            k: current[k] for k in RUN_KEYS if k in current and (k not in CARRIED_KEYS or k in given or k not in stored)
        }
        stored.pop(REQUESTED, None)
        # operational settings given on this command line (a longer timeout, say) apply
        resolved = {**stored, **kept, "resume": True, "run_id": run_dir.name, "run_dir": str(run_dir)}
        for key in keys:
            if key.split(".")[0] not in RUN_KEYS and is_operational(key, stored):
                group, _, name = key.partition(".")
                resolved[group] = {**(resolved.get(group) or {}), name: _at(current, key)}
        return resolved
    if isinstance(model, Mapping) and model.get("provider") == "replay" and model.get("cassette"):
        recorded = StoredRun.read(Path(str(model["cassette"])).parent)
        stored = recorded.composed()
        env_group = TASKS[recorded.task].env_group if recorded.task in TASKS else None
        replaced = RUN_KEYS | {"model"} | ({env_group} if env_group else set())
        _refuse_changes(current, stored, keys, replaced, "replay")
        kept = {k: current[k] for k in replaced if k in current}
        return {**stored, **kept, "ids": recorded.example_ids, "n": None, "offset": 0}
    return dict(current)
