"""Few-shot prompts: the project's own exemplars (``hotpotqa.json``, ``fever.json`` here; a task
may generate its own, e.g. SynthWiki from its train split), or any prompt file loaded by path
and key (e.g. the paper's own prompt files, for an exact reproduction; they are never copied
into this repository).

A prompt file of ours is JSON: ``{"label": "Question", "instructions": {style: text},
"exemplars": {style: text}}`` with styles ``react``, ``act``, ``cot``, ``standard`` (and
``tool_use`` / ``tool_use_act`` instructions for the native runner); the task reads it
(``Task.own_prompts``) and hands it to ``load_prompt``. A prompt may hold one exemplar text per
group of examples (``variants``, keyed by an example's ``metadata[variant_key]``: ALFWorld's
exemplars are of the game's task type); ``for_example`` picks the example's. A foreign file is JSON
``{key: exemplars}`` (the paper's layout); its instruction is ours unless one is given
(``load_instruction``: the paper's notebooks' instructions are a JSON file of ``{task: text}``;
FEVER's is empty, its exemplars open with their own instruction). With both, the first
prompt is byte for byte the original's ``instruction + examples + "Question: q\n"``.
The prompt text is hashed into the run's protocol fingerprint.

``prompt=paper`` (``PaperPrompts``, one per task in its ``TaskInfo``) takes each style's prompt from
the authors' own files, as their notebooks build it: the file and key, or the text a notebook
assigns to a name, and the instruction the notebook puts in front (``react_bench.upstream`` fetches
them, pinned). A style the paper published none for (ReAct-IM, the tool-use runner, Reflexion's
reflections, LATS's value prompt) is the project's own, said by the run and named in run.json.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from react_bench.errors import ConfigError

PROMPT_DIR = Path(__file__).resolve().parent
STYLES = ("react", "act", "cot", "standard")
PAPER_SOURCE = "paper: "  # how a PromptSpec's source begins when the paper's files gave it


@dataclass(frozen=True)
class PaperPrompts:
    """A task's prompts as the paper's code builds them: ``keys`` (style -> key of the pinned JSON
    file ``file``; None: the task's own key scheme, ALFWorld's per-type pairs), ``texts`` (style ->
    a pinned text, WebShop's notebook prompts), ``instruction`` (a pinned text; ``""`` none; None
    the task's own words, which are the notebook's: ALFWorld's opening line)."""

    file: str | None = None
    keys: Mapping[str, str | None] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)
    instruction: str | None = ""

    @property
    def styles(self) -> tuple[str, ...]:
        return (*self.keys, *self.texts)


@dataclass(frozen=True)
class PromptSpec:
    instruction: str
    exemplars: str
    source: str  # "react_bench:hotpotqa/react" or "<path>#<key>"
    variants: tuple[tuple[str, str], ...] = ()  # (group, exemplars): one exemplar text per group
    variant_key: str | None = None  # the example metadata that names its group

    @property
    def sha256(self) -> str:
        text = json.dumps([self.instruction, self.exemplars, list(self.variants), self.variant_key])
        return hashlib.sha256(text.encode()).hexdigest()

    def for_example(self, example: Any, probe: bool = False) -> PromptSpec:
        """The prompt of one example: its group's exemplars where the prompt has variants
        (``probe``: a request built only to see its shape, with the first group's where the
        example names none)."""
        if self.variant_key is None:
            return self
        group = str((example.metadata or {}).get(self.variant_key))
        if probe and group not in dict(self.variants) and self.variants:
            group = self.variants[0][0]
        chosen = dict(self.variants).get(group)
        if chosen is None:
            raise ConfigError(f"prompt {self.source} has no exemplars for {self.variant_key}={group!r}")
        return replace(self, exemplars=chosen, variants=(), variant_key=None, source=f"{self.source}/{group}")


ZERO_SHOT_SOURCE = "zero-shot"
ZERO_SHOT = PromptSpec("", "", ZERO_SHOT_SOURCE)  # the bare format: the opening alone (shots=0, text runner)


def with_shots(prompt: PromptSpec, shots: int | None, starts: Callable[[str], list[int]]) -> PromptSpec:
    """The text runner's ``shots``: None the prompt as it is; ``k`` its instruction and its first
    ``k`` exemplar episodes (``starts``: where each begins, the task's text format's
    ``exemplar_starts``; text before the first, such as an instruction the exemplars open with,
    is kept); ``0`` the bare format: no instruction and no exemplars, the opening alone, as a model
    fine-tuned on the ``paper`` rows of ``scripts/finetune_data.py`` was trained (docs/finetuning.md)."""
    if shots is None:
        return prompt
    if shots < 0:
        raise ConfigError(f"shots={shots}: give 0 (zero-shot) or a number of exemplars")
    if shots == 0:
        return replace(ZERO_SHOT, source=f"{prompt.source} ({ZERO_SHOT_SOURCE})")

    def cut(text: str) -> str:
        begins = starts(text)
        return text[: begins[shots]] if shots < len(begins) else text

    return replace(
        prompt,
        exemplars=cut(prompt.exemplars),
        variants=tuple((group, cut(text)) for group, text in prompt.variants),
        source=f"{prompt.source} (shots={shots})",
    )


@cache
def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"prompt.file: not found: {path}") from None


def own_prompt_file(name: str) -> dict[str, Any]:
    """One of the project's prompt files here (``hotpotqa``, ``fever``)."""
    return _read(PROMPT_DIR / f"{name}.json")


def task_exemplars(name: str, task: str, mode: str) -> PromptSpec:
    """A mode's prompt of its own (``<name>.json`` here: ``instruction``, ``exemplars`` per task
    family, ``aliases`` of the tasks that share a family's): ``task``'s (Reflexion's reflections,
    LATS's value function)."""
    own = own_prompt_file(name)
    key = own["aliases"].get(task, task)
    if key not in own["exemplars"]:
        raise ConfigError(f"mode={mode}: no {name} exemplars for task={task} (prompts/{name}.json)")
    return PromptSpec(own["instruction"], own["exemplars"][key], f"react_bench:{name}/{key}")


def refuse_pair(task: str, pair: tuple[int, int] | None) -> None:
    if pair is not None:
        raise ConfigError(
            f"prompt.pair chooses two of three exemplars per task type (task=alfworld); task={task} has none"
        )


class OneGroupPrompts:
    """``prompt()`` of a task whose exemplars are one group (so no ``prompt.pair``): the task's own
    (``own_prompts()``, a prompt file's mapping) or a file by path."""

    info: ClassVar[Any]  # the task's TaskInfo

    def own_prompts(self) -> dict[str, Any]:
        raise NotImplementedError

    def prompt(
        self,
        style: str,
        file: str | None,
        key: str | None,
        instruction: str | None,
        pair: tuple[int, int] | None = None,
    ) -> PromptSpec:
        refuse_pair(self.info.name, pair)
        return load_prompt(self.own_prompts(), style, file, key, instruction, name=self.info.name)


def load_instruction(file: str | Path, key: str | None) -> str:
    """An instruction text from a JSON file of ``{key: text}`` (e.g. the paper's notebooks')."""
    instructions = _read(Path(file).expanduser().resolve())
    if key not in instructions or not isinstance(instructions[key], str):
        raise ConfigError(f"prompt.instruction_key: {file} has no text under {key!r}; it has {sorted(instructions)}")
    return instructions[key]


def load_prompt(
    own: Mapping[str, Any],
    style: str,
    file: str | Path | None = None,
    key: str | None = None,
    instruction: str | None = None,
    name: str = "own",
) -> PromptSpec:
    """The prompt of ``style`` from the task ``name``'s own prompt file ``own``; ``file``+``key`` load
    foreign exemplars (with our instruction, unless ``instruction`` is given)."""
    if style not in (*STYLES, "tool_use", "tool_use_act"):
        raise ConfigError(f"unknown prompt style {style!r}; one of {STYLES}")
    own_instruction = own["instructions"][style]
    if file is None:
        # the tool-use runner converts the text exemplars into native turns (runners/tool_use.py)
        exemplars = own["exemplars"].get({"tool_use": "react", "tool_use_act": "act"}.get(style, style), "")
        source = f"react_bench:{name}/{style}"
    else:
        foreign = _read(Path(file).expanduser().resolve())
        if key not in foreign:
            raise ConfigError(f"prompt.key: {file} has no key {key!r}; it has {sorted(foreign)}")
        exemplars = foreign[key]
        source = f"{file}#{key}"
    return PromptSpec(
        instruction=own_instruction if instruction is None else instruction,
        exemplars=exemplars,
        source=source,
    )
