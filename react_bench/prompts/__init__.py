"""Few-shot prompts: the project's own exemplars (``hotpotqa.json``, ``fever.json`` here),
or any prompt file loaded by path and key (e.g. the paper's own prompt files, for an exact
reproduction; they are never copied into this repository).

A prompt file of ours is JSON: ``{"label": "Question", "instructions": {style: text},
"exemplars": {style: text}}`` with styles ``react``, ``act``, ``cot``, ``standard`` (and
``tool_use`` / ``tool_use_act`` instructions for the native runner). A foreign file is JSON
``{key: exemplars}`` (the paper's layout); its instruction is ours unless one is given
(``load_instruction``: the paper's notebooks' instructions are a JSON file of ``{task: text}``;
FEVER's is empty, its exemplars open with their own instruction). With both, the first
prompt is byte for byte the original's ``instruction + examples + "Question: q\n"``.
The prompt text is hashed into the run's protocol fingerprint.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from react_bench.errors import ConfigError

PROMPT_DIR = Path(__file__).resolve().parent
STYLES = ("react", "act", "cot", "standard")


@dataclass(frozen=True)
class PromptSpec:
    instruction: str
    exemplars: str
    label: str  # "Question" (HotpotQA) or "Claim" (FEVER)
    source: str  # "react_bench:hotpotqa/react" or "<path>#<key>"

    @property
    def sha256(self) -> str:
        text = json.dumps([self.instruction, self.exemplars, self.label])
        return hashlib.sha256(text.encode()).hexdigest()


@cache
def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"prompt.file: not found: {path}") from None


def _own(task: str) -> dict:
    if task in ("synthwiki", "synthwiki_claims"):  # generated with its world: exemplars from its train split
        from react_bench.synthwiki import ensure_world, prompt_file

        return prompt_file(ensure_world(), "Claim" if task == "synthwiki_claims" else "Question")
    return _read(PROMPT_DIR / f"{task}.json")


def load_instruction(file: str | Path, key: str | None) -> str:
    """An instruction text from a JSON file of ``{key: text}`` (e.g. the paper's notebooks')."""
    instructions = _read(Path(file).expanduser().resolve())
    if key not in instructions or not isinstance(instructions[key], str):
        raise ConfigError(f"prompt.instruction_key: {file} has no text under {key!r}; it has {sorted(instructions)}")
    return instructions[key]


def load_prompt(
    task: str,
    style: str,
    file: str | Path | None = None,
    key: str | None = None,
    instruction: str | None = None,
) -> PromptSpec:
    """The prompt for ``task`` and ``style``; ``file``+``key`` load foreign exemplars."""
    if style not in (*STYLES, "tool_use", "tool_use_act"):
        raise ConfigError(f"unknown prompt style {style!r}; one of {STYLES}")
    own = _own(task)
    own_instruction = own["instructions"][style]
    if file is None:
        # the tool-use runner converts the text exemplars into native turns (runners/tool_use.py)
        exemplars = own["exemplars"].get({"tool_use": "react", "tool_use_act": "act"}.get(style, style), "")
        source = f"react_bench:{task}/{style}"
    else:
        foreign = _read(Path(file).expanduser().resolve())
        if key not in foreign:
            raise ConfigError(f"prompt.key: {file} has no key {key!r}; it has {sorted(foreign)}")
        exemplars = foreign[key]
        source = f"{file}#{key}"
    return PromptSpec(
        instruction=own_instruction if instruction is None else instruction,
        exemplars=exemplars,
        label=own["label"],
        source=source,
    )
