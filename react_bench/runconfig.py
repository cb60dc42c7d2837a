"""The typed configuration of one run, built from the plain dict that Hydra composes.

Hydra stops at ``scripts/``: ``RunConfig.from_mapping`` takes an ordinary dict (what
``OmegaConf.to_container`` returns) and every setting is checked here, with errors that
name the setting.

``protocol=paper`` (the default) fixes what the paper fixes: parser ``paper``, 7 steps,
``give_up`` at the cap, temperature 0, 100 new tokens per step, 21 CoT-SC samples at 0.7.
Asking for something else under ``protocol=paper`` is an error; ``protocol=custom`` allows
it, and the run's fingerprint records every setting either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.loop import LoopConfig
from react_bench.models.base import ConfigError, ThinkingConfig
from react_bench.modes import SolveSettings

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


@dataclass(frozen=True)
class RunConfig:
    task: str
    model: dict[str, Any]
    solve: SolveSettings
    split: str = "offline"
    n: int | None = None
    offset: int = 0
    ids: tuple[str, ...] | None = None
    on_missing: str = "error"
    data_dir: str | None = None
    data_file: str | None = None
    source: str = "auto"
    wiki: dict[str, Any] = field(default_factory=dict)
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
        chosen = _protocol_settings(cfg, protocol)
        runner = _section(cfg, "runner")
        mode = _section(cfg, "mode")
        thinking = runner.get("thinking")
        solve = SolveSettings(
            mode=str(mode.get("name", "react")),
            runner=runner.get("name", "text"),
            parser=chosen["parser"],
            loop=LoopConfig(max_steps=int(chosen["max_steps"]), on_limit=chosen["on_limit"]),
            max_tokens=int(chosen["max_tokens"]),
            temperature=chosen["temperature"],
            cot_sc_samples=int(chosen["cot_sc_samples"]),
            cot_sc_temperature=float(chosen["cot_sc_temperature"]),
            thinking=ThinkingConfig(**thinking) if thinking else None,
            tool_max_tokens=int(runner.get("max_tokens", 1024)),
        )
        task = _section(cfg, "task")
        prompt = cfg.get("prompt") or {}
        ids = cfg.get("ids")
        concurrency = int(cfg.get("concurrency") or 1)
        if concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        return RunConfig(
            task=str(task.get("name")),
            model=dict(_section(cfg, "model")),
            solve=solve,
            split=str(cfg.get("split") or "offline"),
            n=None if cfg.get("n") is None else int(cfg["n"]),
            offset=int(cfg.get("offset") or 0),
            ids=None if ids is None else tuple(str(i) for i in ([ids] if isinstance(ids, str | int) else ids)),
            on_missing=str(cfg.get("on_missing") or "error"),
            data_dir=cfg.get("data_dir"),
            data_file=task.get("data_file"),
            source=str(task.get("source") or "auto"),
            wiki=dict(cfg.get("wiki") or {}),
            protocol=protocol,
            prompt_file=prompt.get("file"),
            prompt_key=prompt.get("key"),
            results_dir=Path(cfg.get("results_dir") or "results"),
            run_id=cfg.get("run_id"),
            resume=bool(cfg.get("resume", False)),
            concurrency=concurrency,
            progress=bool(cfg.get("progress", True)),
        )


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
