"""Model clients, one module per provider; ``make_model`` builds one from a plain mapping.

The mapping is a model config group file (``configs/model/*.yaml``) as a dict: ``provider``
selects the module, ``label`` names the model in result paths, ``default_n`` is how many
examples a run takes when ``n`` is not given (the tiny local model: a handful),
``max_retries`` / ``retry_backoff_s`` configure the retry layer that wraps the network
providers, ``requests_per_minute`` / ``tokens_per_minute`` the rate limiter inside it
(``RetryingModel(LimitedModel(AnthropicClient))``; the request cache goes around it all, in
``evaluate``), and the other keys are the provider config dataclass's fields; an unknown key
is an error.
Provider modules are imported lazily, so a missing optional dependency (llama-cpp-python)
only matters when that provider is chosen.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.models.base import ModelCapabilities, ModelClient

PROVIDERS = ("local", "anthropic", "openai", "replay", "scripted")
META_KEYS = ("provider", "label", "default_n")
# the model layers' settings (retries, rate limits), not the provider's
RETRY_KEYS = ("max_retries", "retry_backoff_s", "requests_per_minute", "tokens_per_minute")


def typed_config(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls(**values)`` with unknown keys reported by name instead of a TypeError."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} setting(s) {unknown}; known: {sorted(known)}")
    return cls(**values)


def make_model(config: Mapping[str, Any]) -> ModelClient:
    provider = config.get("provider")
    values = {k: v for k, v in config.items() if k not in META_KEYS + RETRY_KEYS}
    if provider in ("anthropic", "openai"):
        from react_bench.models.cache import LimitedModel
        from react_bench.models.retrying import RetryingModel

        client = _network_client(provider, values)
        rpm, tpm = config.get("requests_per_minute"), config.get("tokens_per_minute")
        if rpm or tpm:  # inside the retries: every attempt is paced
            client = LimitedModel(client, float(rpm) if rpm else None, float(tpm) if tpm else None)
        return RetryingModel(
            client, max_retries=int(config.get("max_retries", 4)), backoff_s=float(config.get("retry_backoff_s", 1.0))
        )
    if provider == "local":
        from react_bench.models.local import LocalConfig, LocalModel

        return LocalModel(typed_config(LocalConfig, values))
    if provider == "replay":
        from react_bench.models.replay import ReplayModel

        cassette = values.get("cassette")
        if not cassette:
            raise ConfigError("model=replay needs model.cassette=<run dir>/calls.jsonl")
        return ReplayModel(cassette, capabilities=recorded_capabilities(Path(cassette)))
    if provider == "scripted":
        from react_bench.models.scripted import ScriptedModel

        return ScriptedModel(_script(values.get("script")))
    raise ConfigError(f"unknown model provider {provider!r}; one of {PROVIDERS}")


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


def _network_client(provider: str, values: Mapping[str, Any]) -> ModelClient:
    if provider == "anthropic":
        from react_bench.models.anthropic import AnthropicClient, AnthropicConfig

        return AnthropicClient(typed_config(AnthropicConfig, values))
    from react_bench.models.openai_compat import OpenAICompatClient, OpenAIConfig

    return OpenAICompatClient(typed_config(OpenAIConfig, values))


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
