"""What the Wikipedia tasks share (HotpotQA, FEVER, SynthWiki): the wiki environment, the paper's
numbered text format, the project's prompt files, and the paper's protocol for them.

A Wikipedia task names the file its offline wiki is built from (``wiki_source``); the wiki
package builds and caches it (``envs.wiki.build.ensure_wiki``) and knows no task. The ``wiki``
config group (``WikiConfig``) chooses the backend; under ``protocol=paper`` live Wikipedia is
read as the paper's code read it (``fidelity=paper``), else through the API (``clean``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from react_bench.envs.wiki import WikiConfig, WikiEnvFactory, make_env_factory
from react_bench.envs.wiki.env import wiki_format
from react_bench.prompts import OneGroupPrompts, own_prompt_file
from react_bench.runners.formats import NumberedFormat
from react_bench.tasks.base import Coverage, TaskConfig, TaskInfo

# Table 1 of the paper (PaLM-540B), HotpotQA EM and FEVER accuracy, in percent; GPT-3
# (text-davinci-002) ReAct with the official code (DESIGN 5).
PAPER_TABLE1 = "Yao et al. (2022), Table 1 (PaLM-540B); GPT-3: text-davinci-002 ReAct, the official code"
PALM_HOTPOTQA = {
    "standard": 28.7,
    "cot": 29.4,
    "cot_sc": 33.4,
    "act": 25.7,
    "react": 27.4,
    "cot_sc_react": 34.2,
    "react_cot_sc": 35.1,
}
PALM_FEVER = {
    "standard": 57.1,
    "cot": 56.3,
    "cot_sc": 60.4,
    "act": 58.9,
    "react": 60.9,
    "cot_sc_react": 64.6,
    "react_cot_sc": 62.0,
}


class WikiTask(OneGroupPrompts):
    """The shared part of the Wikipedia tasks; a subclass gives ``info``, its examples and scores."""

    info: ClassVar[TaskInfo]
    env_group: ClassVar[str | None] = "wiki"
    label: ClassVar[str] = "Question"  # how the prompt introduces an example
    prompt_file: ClassVar[str] = "hotpotqa"  # the project's prompt file (react_bench/prompts/<name>.json)

    def __init__(self) -> None:
        self.coverage: Coverage | None = None

    def text_format(self) -> NumberedFormat:
        return wiki_format(self.label)

    def own_prompts(self) -> dict[str, Any]:
        return own_prompt_file(self.prompt_file)

    def env_config(self, values: Mapping[str, Any], protocol: str) -> WikiConfig:
        wiki = WikiConfig.from_mapping(values)
        if wiki.backend == "local":
            return replace(wiki, fidelity=None)  # the offline wiki has no HTML to read
        if wiki.fidelity is None:  # live Wikipedia as the paper saw it, unless the protocol is custom
            return replace(wiki, fidelity="paper" if protocol == "paper" else "clean")
        return wiki

    def local_wiki(self, config: TaskConfig, cache_dir: Path | None = None) -> Path:
        raise NotImplementedError

    def data_notes(self, config: TaskConfig, env_config: WikiConfig | None, examples: list[Any]) -> list[str]:
        """A split drawn from the whole dev set, read on the offline wiki (built from the offline
        questions' pages): how many of its questions the wiki was built for (every supporting page
        there, where the data names them); the others cannot be answered from it."""
        if env_config is None or env_config.backend != "local" or config.split == "offline" or not examples:
            return []
        kept = self.coverage  # examples() records the coverage of the run's own selection
        try:
            offline = self.examples(replace(config, split="offline", n=None, offset=0, ids=None))  # type: ignore[attr-defined]
        finally:
            self.coverage = kept
        built_for = {e.question.strip() for e in offline}
        covered = sum(1 for e in examples if e.question.strip() in built_for)
        return [
            f"split={config.split} on the offline wiki: {covered} of {len(examples)} questions "
            f"({100 * covered / len(examples):.0f}%) are among the offline questions whose pages it holds; the "
            "others will mostly find nothing (wiki=live reads Wikipedia)"
        ]

    def environment(self, config: TaskConfig, env_config: WikiConfig) -> WikiEnvFactory:
        return make_env_factory(env_config, local_wiki=lambda: self.local_wiki(config))
