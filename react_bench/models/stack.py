"""The model of a run: a typed spec (``ModelSpec``) and the one place its layers are stacked.

``ModelSpec.from_mapping`` reads a model config group file (``configs/model/*.yaml``) as parsed
by Hydra: ``provider`` selects the module, ``label`` names the model in result paths,
``default_n`` is how many examples a run takes when ``n`` is not given (the tiny local model:
a handful), ``max_retries`` / ``retry_backoff_s`` configure the retry layer, and
``requests_per_minute`` / ``tokens_per_minute`` the rate limiter inside it; every other key is
a field of the provider's config dataclass (checked when the client is built).

``build_stack`` assembles, for every run::

    RecordingModel(CachedModel(RetryingModel(LimitedModel(provider client))))

the retry and rate-limit layers around the network providers only, the request cache around
the providers worth caching (network and local models; not scripted or replayed ones) unless
``cache=false``. The ``ModelStack`` it returns names each piece, so what needs one (the batch
executor needs the cache and the provider's batch API, the dry run the provider's wire body)
takes it from the stack instead of reaching through the layers.

Fields marked ``operational`` may change when a run is resumed or replayed: they cannot change
an answer (how patiently and how fast the model is asked, where its script lies).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from react_bench.errors import ConfigError
from react_bench.models.base import OPERATIONAL, AttemptModel, ModelClient, operational
from react_bench.models.cache import CachedModel, CacheMode, Pacer

Provider = Literal["local", "anthropic", "openai", "replay", "scripted"]
PROVIDERS: tuple[str, ...] = get_args(Provider)
NETWORK: tuple[str, ...] = ("anthropic", "openai")
CACHED: tuple[str, ...] = ("anthropic", "openai", "local")  # providers whose answers the request cache keeps


@dataclass(frozen=True)
class ModelSpec:
    provider: Provider
    settings: Mapping[str, Any] = field(default_factory=dict)  # the provider config's fields
    label: str | None = field(default=None, metadata=OPERATIONAL)
    default_n: int | None = field(default=None, metadata=OPERATIONAL)
    max_retries: int = field(default=4, metadata=OPERATIONAL)
    retry_backoff_s: float = field(default=1.0, metadata=OPERATIONAL)
    requests_per_minute: float | None = field(default=None, metadata=OPERATIONAL)
    tokens_per_minute: float | None = field(default=None, metadata=OPERATIONAL)
    # a fine-tuned model's training data (a scripts/finetune_data.py folder): Table 1 marks its runs
    finetuned_on: str | None = field(default=None, metadata=OPERATIONAL)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ModelSpec:
        provider = values.get("provider")
        if provider not in PROVIDERS:
            raise ConfigError(f"unknown model provider {provider!r}; one of {', '.join(PROVIDERS)}")
        own = {f.name for f in dataclasses.fields(cls)} - {"provider", "settings"}
        kwargs: dict[str, Any] = {k: values[k] for k in own if values.get(k) is not None}
        try:
            if "max_retries" in kwargs:
                kwargs["max_retries"] = int(kwargs["max_retries"])
            for key in ("retry_backoff_s", "requests_per_minute", "tokens_per_minute"):
                if key in kwargs:
                    kwargs[key] = float(kwargs[key])
            if "default_n" in kwargs:
                kwargs["default_n"] = int(kwargs["default_n"])
        except (TypeError, ValueError):
            raise ConfigError(f"model settings: expected numbers, got {dict(values)}") from None
        if kwargs.get("max_retries", 0) < 0:
            raise ConfigError(f"model.max_retries={kwargs['max_retries']}: must be >= 0")
        settings = {k: v for k, v in values.items() if k not in own | {"provider"}}
        return cls(provider=provider, settings=settings, **kwargs)

    def to_mapping(self) -> dict[str, Any]:
        """The flat mapping it was read from (a model group file's layout)."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "settings"}
        return {**{k: v for k, v in own.items() if v is not None}, **self.settings}

    @property
    def name(self) -> str | None:
        value = self.settings.get("name")
        return None if value is None else str(value)

    @property
    def display_label(self) -> str:
        return str(self.label or self.name or self.provider)

    def is_operational(self, key: str) -> bool:
        """Whether setting ``key`` (``max_retries``, ``timeout_s``, ...) may change on resume."""
        if key in {f.name for f in dataclasses.fields(self)}:
            return operational(type(self), key)
        config = provider_config_class(self.provider)
        return config is not None and operational(config, key)

    def fingerprint(self) -> dict[str, Any]:
        """The settings that can change an answer (the run's protocol fingerprint): not the
        operational ones, nor where the requests go and which variable holds the key (a resumed
        run takes those from the user's own config: ``runconfig.own_route``)."""
        return {k: v for k, v in self.to_mapping().items() if not self.is_operational(k) and k not in ROUTE_SETTINGS}


ROUTE_SETTINGS = ("base_url", "api_key_env", "key_env")  # where requests go, and which variable's secret goes along


def route_of(model: Mapping[str, Any]) -> dict[str, Any]:
    """A model mapping's route: its provider and those of ``ROUTE_SETTINGS`` it sets."""
    return {"provider": model.get("provider"), **{k: model[k] for k in ROUTE_SETTINGS if k in model}}


@contextmanager
def _placeholder_key(spec: ModelSpec) -> Iterator[None]:
    """The key's variable set to a placeholder while a client that will send nothing is built,
    where it is unset (the SDKs want a key to construct); the environment as it was after."""
    var = spec.settings.get("api_key_env") or spec.settings.get("key_env")
    if not var or os.environ.get(str(var), "").strip():
        yield
        return
    os.environ[str(var)] = "dry-run-placeholder-never-sent"
    try:
        yield
    finally:
        os.environ.pop(str(var), None)


def provider_config_class(provider: str) -> type | None:
    """The provider's config dataclass (its fields are the model file's other keys)."""
    if provider == "anthropic":
        from react_bench.models.anthropic import AnthropicConfig

        return AnthropicConfig
    if provider == "openai":
        from react_bench.models.openai_compat import OpenAIConfig

        return OpenAIConfig
    if provider == "local":
        from react_bench.models.local import LocalConfig

        return LocalConfig
    if provider == "replay":
        from react_bench.models.replay import ReplayConfig

        return ReplayConfig
    from react_bench.models.scripted import ScriptedConfig

    return ScriptedConfig


@dataclass(frozen=True)
class ModelStack:
    """A run's model: ``top`` is what the run calls; the pieces beneath, by name."""

    top: ModelClient
    client: ModelClient  # the provider's own
    cache: CachedModel | None = None  # the request cache layer, where there is one

    async def aclose(self) -> None:
        await self.client.aclose()  # the HTTP client of a network model


def build_stack(
    spec: ModelSpec,
    *,
    request_cache: CacheMode = "on",
    client: ModelClient | None = None,
    record: bool = True,
    pacer: Pacer | None = None,
    sends: bool = True,
) -> ModelStack:
    """The run's layers around ``client`` (built from ``spec`` unless given: a benchmark's or a
    notebook's own); see the module docstring for the order. ``record=False``: no recording
    layer (a model used outside a run's examples). ``pacer``: the rate limiter's queue when it is
    shared beyond this process (``executors/ray.py``)."""
    from react_bench.models.cache import LimitedModel
    from react_bench.models.providers import make_client
    from react_bench.models.replay import RecordingModel
    from react_bench.models.retrying import RetryingModel

    if client is not None:
        own = client
    elif sends:
        own = make_client(spec.provider, spec.settings)
    else:  # a dry run sends nothing: it needs no key, only the client's own rules to build requests
        with _placeholder_key(spec):
            own = make_client(spec.provider, spec.settings)
    model: ModelClient = own
    if client is None and spec.provider in NETWORK:
        if spec.requests_per_minute or spec.tokens_per_minute:  # inside the retries: every attempt is paced
            model = LimitedModel(model, spec.requests_per_minute, spec.tokens_per_minute, pacer)
        model = RetryingModel(model, max_retries=spec.max_retries, backoff_s=spec.retry_backoff_s)
    cache = None
    if request_cache != "off" and spec.provider in CACHED:
        model = cache = CachedModel(model, client=own, mode=request_cache)
    # a run's examples: recorded, and each attempt's requests stamped with it (epochs)
    return ModelStack(AttemptModel(RecordingModel(model)) if record else model, own, cache)
