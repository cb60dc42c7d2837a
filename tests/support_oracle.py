"""An oracle for the Messages API server: it answers HotpotQA questions right, in two steps
(a search, then the gold answer), through either runner's protocol. Shared by the fault and
kill-and-resume tests; it reads only the request body, as a real model would
(``react_bench.testing.walker``, a walk of two steps)."""

from __future__ import annotations

from collections.abc import Mapping

from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.walker import Walk, WalkResponder, question_of, turns_after_question

__all__ = ["Oracle", "gold_answers", "question_of", "turns_after_question"]


def gold_answers(n: int, task: str = "hotpotqa") -> dict[str, str]:
    """Question (or claim) -> gold answer for the first ``n`` offline examples of ``task``."""
    return {e.question.strip(): e.gold for e in load_task(task).examples(TaskConfig(name=task, n=n))}


def Oracle(golds: Mapping[str, str]) -> WalkResponder:  # noqa: N802 - used like the class it was
    """``responder`` for ``MessagesServer``: a search first, then the gold answer."""
    return WalkResponder(Walk(steps=2, answers=dict(golds)))
