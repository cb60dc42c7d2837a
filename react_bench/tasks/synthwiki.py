"""``task=synthwiki``: multi-hop questions over a generated world (``react_bench/synthwiki.py``).

The world is generated on first use for ``task.seed`` and ``task.size`` and cached; its own
offline wiki serves the environment (``wiki=local``). ``split=offline`` / ``all``: the test
questions (the train questions make the few-shot exemplars); ``paper500`` does not apply.
Scoring is HotpotQA's (EM, F1). The metadata carry the question type, the supporting titles
and the gold path.
"""

from __future__ import annotations

from pathlib import Path

from react_bench.errors import ConfigError
from react_bench.metrics import exact_match, f1_score, fever_correct, map_fever_label
from react_bench.tasks.base import Coverage, Example, Pool, TaskConfig, select


class SynthWikiTask:
    name = "synthwiki"
    primary_metric = "em"
    input_label = "Question"
    kinds: tuple[str, ...] = ("bridge2", "bridge3", "comparison_yes_no", "comparison_which")

    def __init__(self) -> None:
        self.coverage: Coverage | None = None

    def folder(self, config: TaskConfig) -> Path:
        from react_bench.synthwiki import ensure_world

        return ensure_world(config.seed, config.size)

    def examples(self, config: TaskConfig) -> list[Example]:
        from react_bench.synthwiki import read_questions

        if config.split == "paper500":
            raise ConfigError("task=synthwiki has no paper500 split: use split=offline (its test questions)")
        folder = self.folder(config)
        examples = [
            Example(q["id"], q["question"], q["answer"],
                    {"type": q["type"], "supporting_titles": q["supporting_titles"], "path": q["path"]})
            for q in read_questions(folder)
            if q["split"] == "test" and q["type"] in self.kinds
        ]  # fmt: skip
        chosen, self.coverage = select(Pool.of(str(folder / "questions.jsonl"), examples), config)
        return chosen

    def local_wiki(self, config: TaskConfig) -> Path:
        from react_bench.synthwiki import ensure_wiki

        return ensure_wiki(self.folder(config))

    def score(self, prediction: str, gold: str) -> dict[str, float]:
        return {"em": exact_match(prediction, gold), "f1": f1_score(prediction, gold)}


class SynthWikiClaimsTask(SynthWikiTask):
    """``task=synthwiki_claims``: FEVER-style claims over the same world, scored as FEVER is."""

    name = "synthwiki_claims"
    primary_metric = "accuracy"
    input_label = "Claim"
    kinds = ("claim",)

    def score(self, prediction: str, gold: str) -> dict[str, float]:
        return {
            "accuracy": fever_correct(prediction, gold),
            "in_label_set": float(map_fever_label(prediction) is not None),
        }
