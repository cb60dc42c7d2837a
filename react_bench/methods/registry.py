"""The methods by name: what the run, the record, the studies and the dry run ask about a method.

Where a method comes from:
1. the package: every module of ``react_bench/methods/`` that defines ``METHODS`` (a tuple of
   ``core.Method``), the paper's modes (``core.py``) first, then the others in module order. A
   method written in a new module here is found without editing this one;
2. an installed distribution's entry point in the group ``react_bench.methods`` (as pytest and
   inspect_ai load plugins), e.g. in its pyproject.toml::

       [project.entry-points."react_bench.methods"]
       my_method = "my_package.module:METHOD"

   The object it names is a ``Method``, a sequence of them, or a callable returning either.

A name given twice, an entry point that does not load or names something else, a method with a
``solve`` of its own and no ``costing`` (its price and batch rounds), is a ConfigError that names
it: a run never starts with a method other than the one asked for. Everything is read once per
process, on first use.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any

import react_bench.methods as package
from react_bench.errors import ConfigError
from react_bench.methods.core import Method, SolveSettings

GROUP = "react_bench.methods"
_LOADED: dict[str, Method] | None = None
_ORIGIN: dict[str, str] = {}


def methods() -> dict[str, Method]:
    """Every method by name, in the order their choices are listed."""
    global _LOADED
    if _LOADED is None:
        found: dict[str, Method] = {}
        origin: dict[str, str] = {}
        modules = ["core"] + sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name != "core")
        for name in modules:
            module = importlib.import_module(f"{package.__name__}.{name}")
            _add(found, origin, getattr(module, "METHODS", ()), f"{package.__name__}.{name}")
        for point in entry_points(group=GROUP):
            where = f"entry point {point.name} = {point.value}"
            try:
                loaded = point.load()
                if callable(loaded) and not isinstance(loaded, Method):
                    loaded = loaded()
            except Exception as exc:  # a plugin's fault is said, with its name, not a traceback
                raise ConfigError(f"{GROUP}: {where} does not load: {type(exc).__name__}: {exc}") from exc
            _add(found, origin, loaded, where)
        _ORIGIN.clear()
        _ORIGIN.update(origin)
        _LOADED = found
    return _LOADED


def _add(found: dict[str, Method], origin: dict[str, str], given: Any, where: str) -> None:
    items = [given] if isinstance(given, Method) else given
    if not isinstance(items, Sequence) or not all(isinstance(m, Method) for m in items):
        raise ConfigError(f"{GROUP}: {where} gives {type(given).__name__}, not a Method or a sequence of them")
    for method in items:
        if not method.of_parts and method.costing is None:
            raise ConfigError(
                f"mode={method.name} ({where}) solves its own way but says nothing of how it is priced and "
                "batched: give it a costing (methods.core.Costing)"
            )
        if method.name in found:
            raise ConfigError(f"mode={method.name} is given twice: by {origin[method.name]} and by {where}")
        found[method.name], origin[method.name] = method, where


def origin(name: str) -> str:
    """Where the method ``name`` comes from: a module of the package, or an entry point."""
    methods()
    return _ORIGIN[name]


def find_method(name: str) -> Method | None:
    """The method ``name``, or None (a run of a method this process does not have: its records
    still load, without what the method adds to its summary)."""
    return methods().get(name)


def get_method(name: object) -> Method:
    """The method ``name``; an unknown one is a ConfigError naming the choices (and the closest)."""
    known = methods()
    if isinstance(name, str) and name in known:
        return known[name]
    close = difflib.get_close_matches(str(name), list(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"unknown mode {name!r}{hint}; one of {', '.join(known)}")


def settle(solve: SolveSettings, task: str, answers: bool, protocol: Mapping[str, Any]) -> SolveSettings:
    """``solve`` made whole and checked for ``task`` by its method (``Method.settle``), once; a
    method that answers without acting, on a task without reference answers, names those that fit."""
    method = get_method(solve.mode)
    if method.spec.needs_answers and not answers:  # (a method defined for other tasks: its spec says so)
        fits = [
            m.name
            for m in methods().values()
            if not m.spec.needs_answers and (not m.spec.tasks or task in m.spec.tasks)
        ]
        raise ConfigError(
            f"task={task} does not run mode={solve.mode} (its examples have no reference answers to give "
            f"without acting); choose one of {', '.join(fits)}"
        )
    return method.settle(solve, task, answers, protocol)
