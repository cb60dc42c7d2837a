"""What every task shares: the facts a task declares, examples, the typed config, the paper's
sample, selection.

A task (the ``Task`` protocol) is examples + an environment factory + a text format + metrics
and the paper's figures (``TaskInfo``). Results, studies, export and the notebooks read a
task's facts from ``TaskInfo``; nothing re-derives them from the task's name.

Decisions a next engineer needs:

- The paper's sample (DESIGN 5): ``idxs = list(range(7405)); random.Random(233).shuffle(idxs)``,
  first 500, as row indices into the dev set in its original order. FEVER reuses the same 500
  indices into ``paper_dev.jsonl`` (the original code reused ``range(7405)``).
- A split names WHICH examples (``offline``: the whole offline file; ``all``: the whole dev
  set; ``paper500``: the 500 indices above); ``data_file`` may name another file to draw them
  from. Requested examples are located by dev-set row (``metadata["dev_index"]``) for
  ``paper500`` and by example id for explicit ``ids`` (where ``dev-<row>`` also names the
  example at that dev-set row, so the paper's questions can be asked for by row in any file).
- Order of operations: requested list (split order, or the ``ids`` in the order given) ->
  excluded ids dropped (FEVER few-shot exemplars) -> ``offset`` / ``n`` slice -> missing
  check. Slicing before the missing check keeps ``paper500 n=50`` meaning the paper's first 50
  questions whatever file they are drawn from. Missing examples stop the run
  (``MissingExamplesError``) unless ``on_missing="skip"``; either way the ``Coverage`` says
  how many of the requested were found.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, Protocol, assert_never, get_args, runtime_checkable

from react_bench.environment import EnvFactory, Example
from react_bench.errors import ConfigError, check_known
from react_bench.prompts import PaperPrompts
from react_bench.settings import default

if TYPE_CHECKING:
    from react_bench.prompts import PromptSpec
    from react_bench.runners.formats import TextFormat

log = logging.getLogger(__name__)

Split = Literal["offline", "paper500", "all", "lats100"]
Source = Literal["local", "hub", "auto"]
OnMissing = Literal["error", "skip"]
SPLITS: tuple[str, ...] = get_args(Split)
SOURCES: tuple[str, ...] = get_args(Source)
__all__ = ["Example"]  # re-exported: examples are the environment seam's type

PAPER_SEED = 233
PAPER_POOL = 7405  # HotpotQA dev size; FEVER reused the same range
PAPER_N = 500


def paper_indices(n: int = PAPER_N) -> tuple[int, ...]:
    """The paper's sample: dev-set row indices in the order the original code ran them."""
    idxs = list(range(PAPER_POOL))
    random.Random(PAPER_SEED).shuffle(idxs)
    return tuple(idxs[:n])


PAPER500: tuple[int, ...] = paper_indices()


class DataError(RuntimeError):
    """Task data that cannot be used: missing, unreachable or malformed."""


class DataFormatError(DataError):
    """A malformed record; the message names the file and the line."""

    def __init__(self, path: str, line: int | None, reason: str):
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {reason}")
        self.path, self.line, self.reason = path, line, reason


class MissingExamplesError(DataError):
    """Requested examples that the chosen file does not hold (``on_missing="error"``)."""

    def __init__(self, coverage: Coverage):
        shown = ", ".join(coverage.missing[:5]) + (", ..." if len(coverage.missing) > 5 else "")
        super().__init__(
            f"{coverage.summary()}. Missing: {shown}. Choose a file that holds them, or set "
            f"on_missing=skip to run the {coverage.found} that are there."
        )
        self.coverage = coverage


def _tuple_of_str(value: Any, key: str) -> tuple[str, ...] | None:
    match value:
        case None:
            return None
        case str():
            return tuple(part.strip() for part in value.split(",") if part.strip())
        case int():
            return (str(value),)
        case list() | tuple():
            return tuple(str(item) for item in value)
        case _:
            raise ConfigError(f"task.{key}: expected a list of ids, got {type(value).__name__}")


@dataclass(frozen=True)
class TaskConfig:
    """Which task, and which of its examples (the Hydra group ``task`` plus the top-level
    selection keys ``split``, ``n``, ``offset``, ``ids``, ``on_missing``, ``data_dir``)."""

    name: str = "hotpotqa"
    split: Split = default("split")  # the selection's defaults: react_bench/settings.py
    n: int | None = default("n")
    offset: int = default("offset")
    ids: tuple[str, ...] | None = default("ids")
    on_missing: OnMissing = default("on_missing")
    data_dir: str | None = default("data_dir")
    data_file: str | None = None  # another file to draw the split from (relative to data_dir)
    source: Source = "auto"
    exclude_ids: tuple[str, ...] = ()
    seed: int = 0  # task=synthwiki: the generated world's seed and size
    size: int = 800

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ConfigError(f"split={self.split!r}: choose one of {', '.join(SPLITS)}")
        if self.source not in SOURCES:
            raise ConfigError(f"task.source={self.source!r}: choose one of {', '.join(SOURCES)}")
        if self.on_missing not in get_args(OnMissing):
            raise ConfigError(f"task.on_missing={self.on_missing!r}: choose error or skip")
        if self.n is not None and self.n < 0:
            raise ConfigError(f"n={self.n}: must be >= 0 (or null for all)")
        if self.offset < 0:
            raise ConfigError(f"offset={self.offset}: must be >= 0")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TaskConfig:
        """From a plain mapping; an unknown key is an error naming it."""
        known = {f.name for f in fields(cls)}
        check_known(values, known, "task")
        kwargs = {k: v for k, v in values.items() if k in known}
        for key in ("ids", "exclude_ids"):
            if key in kwargs:
                kwargs[key] = _tuple_of_str(kwargs[key], key)
        if kwargs.get("exclude_ids") is None:
            kwargs.pop("exclude_ids", None)
        return cls(**kwargs)


@dataclass(frozen=True)
class Coverage:
    """How many requested examples the chosen file held."""

    split: str
    source: str  # the file (or hub dataset) drawn from
    requested: int
    found: int
    missing: tuple[str, ...] = ()  # dev indices ("dev-3687") or ids, in requested order
    excluded: int = 0  # left out as few-shot exemplars
    left_out: tuple[str, ...] = ()  # unreadable examples skipped on request (each: the file and why)
    origin: Mapping[str, Any] | None = None  # a file built from the hub: its source, revision, counts

    def summary(self) -> str:
        if self.split == "ids":
            text = f"{self.found} of the {self.requested} ids asked for found in {self.source}"
        else:
            text = f"{self.found} of the {self.requested} examples of split {self.split} found in {self.source}"
        text += f" ({self.excluded} exemplar ids left out)" if self.excluded else ""
        if self.left_out:
            text += f"; {len(self.left_out)} unreadable left out, the first: {self.left_out[0]}"
        return text


@dataclass(frozen=True)
class Pool:
    """The examples of one file (or hub split), with the two lookups selection needs."""

    source: str
    examples: tuple[Example, ...]
    by_id: Mapping[str, Example]
    by_dev_index: Mapping[int, Example]
    origin: Mapping[str, Any] | None = None  # a file built from the hub: its record (tasks.hubdata)

    def lookup(self, id_: str) -> Example | None:
        """By id; ``dev-<row>`` also finds the example at that dev-set row, whatever its id."""
        if id_ in self.by_id:
            return self.by_id[id_]
        prefix, _, row = id_.partition("-")
        return self.by_dev_index.get(int(row)) if prefix == "dev" and row.isdigit() else None

    @classmethod
    def of(cls, source: str, examples: list[Example]) -> Pool:
        by_id: dict[str, Example] = {}
        by_dev: dict[int, Example] = {}
        for example in examples:
            if example.id in by_id:
                raise DataError(f"{source}: duplicate example id {example.id!r}")
            by_id[example.id] = example
            dev_index = example.metadata.get("dev_index")
            if dev_index is not None:
                by_dev[dev_index] = example
        return cls(source, tuple(examples), by_id, by_dev)


def select(pool: Pool, config: TaskConfig, exclude: frozenset[str] = frozenset()) -> tuple[list[Example], Coverage]:
    """Apply the split, exclusions, offset / n and the missing-examples rule (module docstring)."""
    exclude = exclude | frozenset(config.exclude_ids)
    wanted: list[tuple[str, Example | None]]
    if config.ids is not None:
        asked = [i for i in config.ids if i in exclude]
        if asked:
            raise ConfigError(f"ids asks for few-shot exemplar ids {asked}: they are left out of every split")
        wanted = [(i, pool.lookup(i)) for i in config.ids]
        label = "ids"
    else:
        match config.split:
            case "paper500":
                wanted = [(f"dev-{i}", pool.by_dev_index.get(i)) for i in PAPER500]
            case "offline" | "all" | "lats100":  # lats100: a file of exactly those (HotpotQA's)
                wanted = [(e.id, e) for e in pool.examples]
            case _ as unreachable:
                assert_never(unreachable)
        label = config.split
    kept = [(key, ex) for key, ex in wanted if ex is None or ex.id not in exclude]
    excluded = len(wanted) - len(kept)
    if config.offset and config.offset >= len(kept):
        raise ConfigError(f"offset={config.offset} is beyond the {len(kept)} examples of split {config.split}")
    end = None if config.n is None else config.offset + config.n
    kept = kept[config.offset : end]
    examples = [ex for _, ex in kept if ex is not None]
    missing = tuple(key for key, ex in kept if ex is None)
    coverage = Coverage(label, pool.source, len(kept), len(examples), missing, excluded, origin=pool.origin)
    if missing and config.on_missing == "error":
        raise MissingExamplesError(coverage)
    if missing:
        log.warning("%s; %d skipped (on_missing=skip)", coverage.summary(), len(missing))
    return examples, coverage


@dataclass(frozen=True)
class TaskInfo:
    """The facts of a task that results, tables, studies and exports read."""

    name: str
    title: str  # "HotpotQA"
    metrics: tuple[str, ...]  # the per-example scores averaged in metrics.json, in table order
    primary_metric: str  # the score that means "correct" (>= 1 is right)
    column: str  # the primary metric's table heading: "HotpotQA EM"
    # The paper's figures beside ours, in percent: {source: {mode: figure}} ("PaLM-540B": ...).
    paper: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    paper_table: str = ""  # where they are from: "Yao et al. (2022), Table 1"
    answers: bool = True  # examples carry reference answers: the modes without actions apply
    # answers are names, dates, numbers an observation can contain: metrics give "grounded"
    # (FEVER's labels and the environments' rewards cannot be read in a page: None there)
    grounded_answers: bool = False
    groups: tuple[str, ...] = ()  # metadata keys of the breakdowns (question type, task type, ...)
    shown_groups: tuple[str, ...] = ()  # those the console's table shows, a row per value
    # The paper's per-task protocol: what ``protocol=paper`` fixes besides the shared settings.
    protocol: Mapping[str, Any] = field(default_factory=dict)
    # ``prompt=paper``: where the paper's own prompts are (None: it published none for this task)
    paper_prompts: PaperPrompts | None = None

    def paper_figure(self, mode: str, source: str | None = None) -> float | None:
        """The paper's figure for ``mode`` (the first source where none is named)."""
        sources = [source] if source is not None else list(self.paper)
        for name in sources:
            figure = (self.paper.get(name) or {}).get(mode)
            if figure is not None:
                return figure
        return None


@runtime_checkable
class Task(Protocol):
    """What the evaluator needs from a task."""

    coverage: Coverage | None  # of the last examples() call

    @property
    def info(self) -> TaskInfo: ...

    @property
    def env_group(self) -> str | None:
        """The config group of its environment's settings ("wiki"); None: no environment."""
        ...

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        """The examples ``config`` selects (``env_config``: the task's environment settings, where
        the examples come from the environment, e.g. a WebShop server's sessions)."""
        ...

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]: ...

    def text_format(self) -> TextFormat: ...

    def prompt(
        self,
        style: str,
        file: str | None,
        key: str | None,
        instruction: str | None,
        pair: tuple[int, int] | None = None,
    ) -> PromptSpec:
        """The prompt of ``style``: the task's own, or ``file`` + ``key`` by path; ``pair``: which two
        exemplars of a task whose prompt file holds three per group (ALFWorld), in order."""
        ...

    def env_config(self, values: Mapping[str, Any], protocol: str) -> Any: ...

    def environment(self, config: TaskConfig, env_config: Any) -> EnvFactory: ...

    def data_notes(self, config: TaskConfig, env_config: Any, examples: list[Example]) -> list[str]:
        """What the data cannot support for these examples (said before the run); most: nothing."""
        ...


class TaskClass(Protocol):
    """A task's class, as the registry holds it: its facts are readable without an instance."""

    info: TaskInfo
    env_group: str | None

    def __call__(self) -> Task: ...
