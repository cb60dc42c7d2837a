"""``task=synthwiki``: multi-hop questions over a generated world (``react_bench/envs/wiki/generate.py``).

The world is generated on first use for ``task.seed`` and ``task.size`` and cached; its own
offline wiki serves the environment (``wiki=local``). ``split=offline`` / ``all``: the test
questions (the train questions make the few-shot exemplars); ``paper500`` does not apply.
Scoring is HotpotQA's (EM, F1). The metadata carry the question type, the supporting titles
and the gold path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.metrics import exact_match, f1_score
from react_bench.tasks.base import Example, Pool, TaskConfig, TaskInfo, select
from react_bench.tasks.fever import score_claim
from react_bench.tasks.wikitask import WikiTask


class SynthWikiTask(WikiTask):
    info = TaskInfo(
        grounded_answers=True,
        name="synthwiki",
        title="SynthWiki",
        metrics=("em", "f1"),
        primary_metric="em",
        column="SynthWiki EM",
        groups=("type",),
    )
    kinds: tuple[str, ...] = ("bridge2", "bridge3", "comparison_yes_no", "comparison_which")

    def folder(self, config: TaskConfig) -> Path:
        from react_bench.envs.wiki.generate import ensure_world

        return ensure_world(config.seed, config.size)

    def examples(self, config: TaskConfig, env_config: Any = None) -> list[Example]:
        from react_bench.envs.wiki.generate import read_questions

        if config.split in ("paper500", "lats100"):
            raise ConfigError(
                f"task={self.info.name} has no {config.split} split: use split=offline (its test questions)"
            )
        folder = self.folder(config)
        examples = [
            Example(
                q["id"],
                q["question"],
                q["answer"],
                {"type": q["type"], "supporting_titles": q["supporting_titles"], "path": q["path"]},
            )
            for q in read_questions(folder)
            if q["split"] == "test" and q["type"] in self.kinds
        ]
        chosen, self.coverage = select(Pool.of(str(folder / "questions.jsonl"), examples), config)
        return chosen

    def own_prompts(self) -> dict[str, Any]:
        """Generated with the world: exemplars from its train split (``synthwiki.prompt_file``)."""
        from react_bench.envs.wiki.generate import ensure_world, prompt_file

        return prompt_file(ensure_world(), super().own_prompts(), self.label)

    def local_wiki(self, config: TaskConfig, cache_dir: Path | None = None) -> Path:
        from react_bench.envs.wiki.generate import ensure_wiki

        return ensure_wiki(self.folder(config))

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return {"em": exact_match(prediction, gold), "f1": f1_score(prediction, gold)}


class SynthWikiClaimsTask(SynthWikiTask):
    """``task=synthwiki_claims``: FEVER-style claims over the same world, scored as FEVER is."""

    info = TaskInfo(
        name="synthwiki_claims",
        title="SynthWiki claims",
        metrics=("accuracy",),
        primary_metric="accuracy",
        column="SynthWiki claims acc",
        groups=("type",),
    )
    label = "Claim"
    prompt_file = "fever"
    kinds = ("claim",)

    def score(self, prediction: str, gold: str, reward: float | None = None) -> dict[str, float]:
        return score_claim(prediction, gold)


TASKS = (
    SynthWikiTask,
    SynthWikiClaimsTask,
)  # the registry's (``react_bench.tasks.TASKS``)
