"""Model clients, one module per provider (``providers.make_client`` builds the provider's own
from a ``ModelSpec``), and ``stack.build_stack``, the one place a run's layers are put around it;
``make_model`` is both for a plain mapping (tests, notebooks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from react_bench.models.base import ModelClient
from react_bench.models.providers import capabilities_to_dict, make_client, recorded_capabilities, typed_config
from react_bench.models.stack import PROVIDERS, ModelSpec, ModelStack, build_stack

__all__ = [
    "PROVIDERS",
    "ModelSpec",
    "ModelStack",
    "build_stack",
    "capabilities_to_dict",
    "make_client",
    "make_model",
    "recorded_capabilities",
    "typed_config",
]


def make_model(config: Mapping[str, Any]) -> ModelClient:
    """A model from a model group file's mapping, with the layers a run puts around it
    (retries and rate limits for network providers; no request cache)."""
    return build_stack(ModelSpec.from_mapping(config), request_cache="off", record=False).top
