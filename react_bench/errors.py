"""The project's own error types that cross module boundaries.

``ConfigError``: a setting that cannot work (unknown model, missing key variable, a value out
of range). The entry point prints it as one line and exits with code 2; it never becomes a
wrong answer. Tasks, wiki, models and the run configuration all raise it, so it lives
here rather than in any one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A setting that cannot work (missing key variable, unknown model, missing extra)."""


def check_known(values: Mapping[str, Any], known: Iterable[str], group: str) -> None:
    """The one unknown-key check of every settings group: an unknown key is a ConfigError naming
    the group's known settings (``group``: as the config names it, e.g. ``webshop``, ``model``)."""
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"unknown {group} settings {unknown}; known: {sorted(known)}")


def settings_of(cls: type[T], values: Mapping[str, Any], group: str) -> T:
    """``cls(**values)`` for a dataclass of settings, its keys checked (``check_known``)."""
    check_known(values, (f.name for f in fields(cls)), group)  # type: ignore[arg-type]
    return cls(**dict(values))
