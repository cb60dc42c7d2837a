"""Benchmark tasks: their data, the paper's sample, environments, text formats, scoring.

``load_task(name)`` gives a ``Task``; ``task.examples(TaskConfig(...))`` the ordered examples
(``task.coverage`` then says how many of those requested were found); ``task.score(pred,
gold, reward)`` a dict of floats whose ``task.info.primary_metric`` key means "correct";
``task_info(name)`` the facts of a task (metrics, the paper's figures) without loading it.

Where a task comes from (``TASKS``, a registry like the methods', read once, on first use):
1. the package: every module of ``react_bench/tasks/`` that defines ``TASKS`` (a tuple of task
   classes, each with its ``info``); a task written in a new module here is found without editing
   this one. The paper's benchmarks come first, in its tables' order (``ORDER``);
2. an installed distribution's entry point in the group ``react_bench.tasks``, e.g.::

       [project.entry-points."react_bench.tasks"]
       toyworld = "my_package.module:ToyTask"

   The object it names is a task class, a sequence of them, or a callable returning either. Its
   config node (``configs/task/<name>.yaml`` for the package's own) is the class's ``config_node``
   (default ``{"name": <name>}``), put in Hydra's ConfigStore by ``scripts/eval.py``.

A name given twice, an entry point that does not load or names something else, is a ConfigError
naming it; an unknown task is one naming the choices.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, MutableMapping, Sequence
from importlib.metadata import entry_points
from typing import Any

from react_bench.errors import ConfigError
from react_bench.metrics import protocol_fingerprint
from react_bench.tasks.base import (
    PAPER500,
    Coverage,
    DataError,
    DataFormatError,
    Example,
    MissingExamplesError,
    Task,
    TaskClass,
    TaskConfig,
    TaskInfo,
    paper_indices,
)
from react_bench.tasks.data import DataUnavailableError, resolve_data_dir
from react_bench.tasks.fever import FEVER_EXEMPLAR_IDS_FILE, FeverTask
from react_bench.tasks.hotpotqa import HotpotQATask

GROUP = "react_bench.tasks"
ORDER = ("hotpotqa", "fever", "synthwiki", "synthwiki_claims", "webshop", "alfworld")  # the paper's tables'


class TaskRegistry(MutableMapping[str, TaskClass]):
    """Every task class by name (the module docstring: where they come from), loaded on first use;
    a test may add one (``monkeypatch.setitem``)."""

    def __init__(self) -> None:
        self._found: dict[str, TaskClass] | None = None
        self._origin: dict[str, str] = {}

    def _load(self) -> dict[str, TaskClass]:
        if self._found is None:
            found: dict[str, TaskClass] = {}
            modules = sorted(m.name for m in pkgutil.iter_modules(__path__))
            for name in modules:
                module = importlib.import_module(f"{__name__}.{name}")
                self._add(found, getattr(module, "TASKS", ()), f"{__name__}.{name}")
            found = {n: found[n] for n in ORDER if n in found} | found
            for point in entry_points(group=GROUP):
                where = f"entry point {point.name} = {point.value}"
                try:
                    loaded = point.load()
                    if callable(loaded) and not _is_task_class(loaded):
                        loaded = loaded()
                except Exception as exc:  # a plugin's fault is said, with its name, not a traceback
                    raise ConfigError(f"{GROUP}: {where} does not load: {type(exc).__name__}: {exc}") from exc
                self._add(found, loaded, where)
            self._found = found
        return self._found

    def _add(self, found: dict[str, TaskClass], given: Any, where: str) -> None:
        items = [given] if _is_task_class(given) else given
        if not isinstance(items, Sequence) or not all(_is_task_class(t) for t in items):
            raise ConfigError(f"{GROUP}: {where} gives {type(given).__name__}, not a task class or a sequence of them")
        for cls in items:
            name = cls.info.name
            if name in found:
                raise ConfigError(f"task={name} is given twice: by {self._origin[name]} and by {where}")
            found[name], self._origin[name] = cls, where

    def __getitem__(self, name: str) -> TaskClass:
        return self._load()[name]

    def __setitem__(self, name: str, cls: TaskClass) -> None:
        self._load()[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())


def _is_task_class(value: Any) -> bool:
    return isinstance(value, type) and isinstance(getattr(value, "info", None), TaskInfo)


TASKS = TaskRegistry()


def config_node(name: str) -> dict[str, Any]:
    """The ``task`` group node of the task ``name``: its class's ``config_node``, else its name alone."""
    cls = _task_class(name)
    node = getattr(cls, "config_node", None)
    return {"name": name, **(dict(node) if node else {})}


def _task_class(name: str) -> TaskClass:
    try:
        return TASKS[name]
    except KeyError:
        raise ConfigError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}") from None


def load_task(name: str) -> Task:
    return _task_class(name)()


def task_info(name: str) -> TaskInfo:
    return _task_class(name).info


__all__ = [
    "FEVER_EXEMPLAR_IDS_FILE",
    "PAPER500",
    "TASKS",
    "Coverage",
    "DataError",
    "DataFormatError",
    "DataUnavailableError",
    "Example",
    "FeverTask",
    "HotpotQATask",
    "MissingExamplesError",
    "Task",
    "TaskConfig",
    "TaskInfo",
    "TaskRegistry",
    "config_node",
    "load_task",
    "paper_indices",
    "protocol_fingerprint",
    "resolve_data_dir",
    "task_info",
]
