"""An oracle for the Messages API server: it answers HotpotQA questions right, in two steps
(a search, then the gold answer), through either runner's protocol. Shared by the fault and
kill-and-resume tests; it reads only the request body, as a real model would."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from react_bench.tasks import TaskConfig, load_task
from react_bench.testing.messages_server import Reply
from react_bench.types import TextBlock, ToolUseBlock

_STEP = re.compile(r"Begin your reply with `(?:Thought|Action) (\d+):")


def gold_answers(n: int) -> dict[str, str]:
    """Question -> gold answer for the first ``n`` offline HotpotQA questions."""
    return {e.question.strip(): e.gold for e in load_task("hotpotqa").examples(TaskConfig(name="hotpotqa", n=n))}


def _text(block: Any) -> str:
    return block.get("text", "") if isinstance(block, Mapping) else ""


def _first_user_text(body: Mapping[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(_text(b) for b in content)


def _question_message(body: Mapping[str, Any]) -> int:
    """Index of the message that asks the question (after any few-shot exemplar turns)."""
    found = 0
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        texts = [content] if isinstance(content, str) else [_text(b) for b in content]
        if message["role"] == "user" and any("Question: " in t for t in texts):
            found = i
    return found


def turns_after_question(body: Mapping[str, Any]) -> int:
    return len(body["messages"]) - 1 - _question_message(body)


def question_of(body: Mapping[str, Any]) -> str:
    content = body["messages"][_question_message(body)]["content"]
    text = content if isinstance(content, str) else "".join(_text(b) for b in content)
    return text.rsplit("Question: ", 1)[1].split("\n", 1)[0].strip()


class Oracle:
    """``responder`` for ``MessagesServer``: a search first, then the gold answer."""

    def __init__(self, golds: Mapping[str, str]):
        self.golds = dict(golds)

    def __call__(self, body: dict[str, Any]) -> Reply:
        question = question_of(body)
        gold = self.golds[question]
        if body.get("tools"):  # the tool-use runner
            if turns_after_question(body) == 0:
                return Reply((TextBlock("Let me look."), ToolUseBlock("", "search", {"entity": question[:30]})))
            return Reply((ToolUseBlock("", "finish", {"answer": gold}),))
        match = _STEP.search(_first_user_text(body))
        step = int(match.group(1)) if match else 1
        if step == 1:
            return Reply.text(f"Thought 1: I search first.\nAction 1: Search[{question[:30]}]")
        return Reply.text(f"Thought {step}: Found it.\nAction {step}: Finish[{gold}]")
