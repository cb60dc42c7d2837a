"""Benchmark tasks: their data, the paper's sample, environments, text formats, scoring.

``load_task(name)`` gives a ``Task``; ``task.examples(TaskConfig(...))`` the ordered examples
(``task.coverage`` then says how many of those requested were found); ``task.score(pred,
gold, reward)`` a dict of floats whose ``task.info.primary_metric`` key means "correct";
``task_info(name)`` the facts of a task (metrics, the paper's figures) without loading it.
"""

from __future__ import annotations

from react_bench.errors import ConfigError
from react_bench.metrics import protocol_fingerprint
from react_bench.tasks.alfworld import AlfworldTask
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
from react_bench.tasks.synthwiki import SynthWikiClaimsTask, SynthWikiTask
from react_bench.tasks.webshop import WebShopTask

TASKS: dict[str, TaskClass] = {
    "hotpotqa": HotpotQATask,
    "fever": FeverTask,
    "synthwiki": SynthWikiTask,
    "synthwiki_claims": SynthWikiClaimsTask,
    "webshop": WebShopTask,
    "alfworld": AlfworldTask,
}


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
    "load_task",
    "paper_indices",
    "protocol_fingerprint",
    "resolve_data_dir",
    "task_info",
]
