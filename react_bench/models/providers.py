"""The provider clients, built from a ``ModelSpec``: one module per provider, imported lazily
so that a missing optional dependency (llama-cpp-python) only matters when it is chosen."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError, settings_of
from react_bench.models.base import ModelCapabilities, ModelClient


def typed_config(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls(**values)`` with unknown keys reported by name (``errors.settings_of``, group ``model``)."""
    return settings_of(cls, values, "model")


def make_client(provider: str, settings: Mapping[str, Any]) -> ModelClient:
    """The provider's own client, from its config's fields (``ModelSpec.settings``; no layers)."""
    values = dict(settings)
    match provider:
        case "anthropic":
            from react_bench.models.anthropic import AnthropicClient, AnthropicConfig

            return AnthropicClient(typed_config(AnthropicConfig, values))
        case "openai":
            from react_bench.models.openai_compat import OpenAICompatClient, OpenAIConfig

            return OpenAICompatClient(typed_config(OpenAIConfig, values))
        case "local":
            from react_bench.models.local import LocalConfig, LocalModel

            return LocalModel(typed_config(LocalConfig, values))
        case "replay":
            from react_bench.models.replay import ReplayConfig, ReplayModel

            cassette = typed_config(ReplayConfig, values).cassette
            if not cassette:
                raise ConfigError("model=replay needs model.cassette=<run dir>/calls.jsonl")
            return ReplayModel(cassette, capabilities=recorded_capabilities(Path(cassette)))
        case "scripted":
            from react_bench.models.scripted import ScriptedConfig, ScriptedModel

            config = typed_config(ScriptedConfig, values)
            return ScriptedModel(_script(config.script), name=config.name)
    raise ConfigError(f"unknown model provider {provider!r}")  # ModelSpec names the choices


def _script(path: Any) -> list[Any]:
    usage = "model=scripted needs model.script=<JSON file: a list of completion texts>"
    if not path:
        raise ConfigError(usage)
    try:
        script = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"model.script={path}: cannot read it ({type(exc).__name__}: {exc}); {usage}") from None
    if not isinstance(script, list) or not all(isinstance(step, str) for step in script):
        bad = script if not isinstance(script, list) else next(s for s in script if not isinstance(s, str))
        raise ConfigError(f"model.script={path}: every entry must be a completion text; found {bad!r}")
    return script


def recorded_capabilities(cassette: Path) -> ModelCapabilities:
    """The recorded model's capabilities (from the run.json beside the cassette), so that a
    replay takes the same text path (raw completion, prefill, instruction) as the original."""
    run_json = cassette.parent / "run.json"
    if not run_json.is_file():
        # Guessing would change the text path (prefill, prefix stripping) and so the predictions.
        raise ConfigError(
            f"no run.json beside {cassette}: replay needs the recorded model's capabilities; "
            "keep the cassette in its run folder (or copy that run's run.json beside it)"
        )
    caps = json.loads(run_json.read_text(encoding="utf-8")).get("model_capabilities") or {}
    caps = {k: v for k, v in caps.items() if k in {f.name for f in dataclasses.fields(ModelCapabilities)}}
    if "thinking_modes" in caps:
        caps["thinking_modes"] = frozenset(caps["thinking_modes"])
    return ModelCapabilities(**caps)


def capabilities_to_dict(caps: ModelCapabilities) -> dict[str, Any]:
    data = dataclasses.asdict(caps)
    data["thinking_modes"] = sorted(caps.thinking_modes)
    return data
