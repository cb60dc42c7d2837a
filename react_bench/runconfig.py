"""The typed configuration of one run, built from the plain dict that Hydra composes.

Hydra stops at ``scripts/``: ``RunConfig.from_mapping`` takes an ordinary dict (what
``OmegaConf.to_container`` returns) and every setting is checked here, with errors that
name the setting. A run's config is composed of the configs of its parts, each built by
its own ``from_mapping``: ``TaskConfig`` (the ``task`` group plus the top-level example
selection), ``WikiConfig`` (the ``wiki`` group), ``SolveSettings`` (mode, runner, decoding);
the model stays a plain mapping until ``models.make_model`` types it for its provider.

``protocol=paper`` (the default) fixes what the paper fixes: parser ``paper``, 7 steps,
``give_up`` at the cap, temperature 0, 100 new tokens per step, 21 CoT-SC samples at 0.7.
Asking for something else under ``protocol=paper`` is an error; ``protocol=custom`` allows
it, and the run's fingerprint records every setting either way. ``on_limit=backoff`` (hand
the example to CoT-SC at the cap) is the mode ``react_cot_sc``, and is read as that mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.loop import LoopConfig
from react_bench.models.base import ThinkingConfig
from react_bench.modes import SolveSettings
from react_bench.tasks.base import TaskConfig
from react_bench.wiki import WikiConfig

PAPER = {
    "parser": "paper",
    "max_steps": 7,
    "on_limit": "give_up",
    "temperature": 0.0,
    "max_tokens": 100,
    "cot_sc_samples": 21,
    "cot_sc_temperature": 0.7,
}
CUSTOM_DEFAULTS = dict(PAPER, parser="robust")
# Top-level keys of configs/eval.yaml that select a task's examples (TaskConfig fields).
SELECTION_KEYS = ("split", "n", "offset", "ids", "on_missing", "data_dir")


@dataclass(frozen=True)
class RunConfig:
    task: TaskConfig
    model: dict[str, Any]
    solve: SolveSettings
    wiki: WikiConfig = WikiConfig()
    protocol: str = "paper"
    prompt_file: str | None = None
    prompt_key: str | None = None
    results_dir: Path = Path("results")
    run_id: str | None = None
    resume: bool = False
    concurrency: int = 1
    progress: bool = True

    @property
    def model_label(self) -> str:
        return str(self.model.get("label") or self.model.get("name") or self.model.get("provider"))

    @staticmethod
    def from_mapping(cfg: Mapping[str, Any]) -> RunConfig:
        protocol = cfg.get("protocol", "paper")
        if protocol not in ("paper", "custom"):
            raise ConfigError(f"protocol must be paper or custom, got {protocol!r}")
        model = dict(_section(cfg, "model"))
        prompt = cfg.get("prompt") or {}
        concurrency = _int(cfg, "concurrency", 1)
        if concurrency < 1:
            raise ConfigError(f"concurrency={concurrency}: must be at least 1")
        return RunConfig(
            task=_task_config(cfg, model),
            model=model,
            solve=_solve_settings(cfg, protocol),
            wiki=WikiConfig.from_mapping(cfg.get("wiki") or {}),
            protocol=protocol,
            prompt_file=prompt.get("file"),
            prompt_key=prompt.get("key"),
            results_dir=Path(cfg.get("results_dir") or "results"),
            run_id=None if cfg.get("run_id") is None else str(cfg["run_id"]),
            resume=bool(cfg.get("resume", False)),
            concurrency=concurrency,
            progress=bool(cfg.get("progress", True)),
        )


def _task_config(cfg: Mapping[str, Any], model: Mapping[str, Any]) -> TaskConfig:
    values = dict(_section(cfg, "task"))
    values.update({key: cfg[key] for key in SELECTION_KEYS if cfg.get(key) is not None})
    if values.get("n") is None and model.get("default_n") is not None:
        values["n"] = model["default_n"]  # the tiny local model runs a handful unless told otherwise
    for key in ("n", "offset"):
        if values.get(key) is not None:
            values[key] = _int(values, key, 0)
    return TaskConfig.from_mapping(values)


def _solve_settings(cfg: Mapping[str, Any], protocol: str) -> SolveSettings:
    chosen = _protocol_settings(cfg, protocol)
    runner = _section(cfg, "runner")
    mode = str(_section(cfg, "mode").get("name", "react"))
    on_limit = chosen["on_limit"]
    if on_limit == "backoff":
        if mode not in ("react", "react_cot_sc"):
            raise ConfigError(
                f"on_limit=backoff hands ReAct's unanswered examples to CoT-SC; mode={mode} has no such backoff"
            )
        mode, on_limit = "react_cot_sc", "give_up"
    thinking = runner.get("thinking")
    return SolveSettings(
        mode=mode,
        runner=runner.get("name", "text"),
        parser=chosen["parser"],
        loop=LoopConfig(max_steps=_int(chosen, "max_steps", 7), on_limit=on_limit),
        max_tokens=_int(chosen, "max_tokens", 100),
        temperature=chosen["temperature"],
        cot_sc_samples=_int(chosen, "cot_sc_samples", 21),
        cot_sc_temperature=float(chosen["cot_sc_temperature"]),
        thinking=ThinkingConfig(**thinking) if thinking else None,
        tool_max_tokens=_int(runner, "max_tokens", 1024),
    )


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


def _section(cfg: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = cfg.get(name)
    if not isinstance(value, Mapping):
        raise ConfigError(f"missing config group {name!r} (e.g. {name}=...)")
    return value


def _protocol_settings(cfg: Mapping[str, Any], protocol: str) -> dict[str, Any]:
    base = PAPER if protocol == "paper" else CUSTOM_DEFAULTS
    mode = cfg.get("mode") or {}
    chosen = dict(base)
    for key in base:
        value = cfg.get(key, mode.get(key) if isinstance(mode, Mapping) else None)
        if value is None:
            continue
        if protocol == "paper" and value != base[key]:
            raise ConfigError(
                f"protocol=paper fixes {key}={base[key]!r}; you asked for {key}={value!r}. "
                f"Add protocol=custom to run outside the paper's protocol."
            )
        chosen[key] = value
    return chosen
