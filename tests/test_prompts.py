"""The project's own few-shot prompts (react_bench/prompts/*.json, made by scripts/make_exemplars.py).

What must hold: exemplars never leak evaluation data (no HotpotQA dev question, no FEVER
paper_dev claim), they are in exactly the format the text runner produces and parses, their
answers are the gold ones, their observations are what the current environment returns, and
none of their text is taken from the paper's prompt files.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from react_bench.envs.wiki.env import action_to_call
from react_bench.metrics import normalize_answer
from react_bench.prompts import PROMPT_DIR, STYLES
from react_bench.runners.parsing import extract_answer, parse_step
from react_bench.runners.text import base_prompt
from react_bench.tasks import load_task

REPO = Path(__file__).resolve().parents[1]
TASKS = {"hotpotqa": "Question", "fever": "Claim"}
COUNTS = {"hotpotqa": 6, "fever": 3}
# the exemplars' material: HotpotQA train questions that only a prepared data folder holds
TRAIN_200 = "hotpotqa/hotpot_train_distractor_200.json"
# Split so that the repo itself never holds these strings of the paper's prompts.
_STEP_LABEL = re.compile(r"^(Thought|Action|Observation) (\d+): ", re.MULTILINE)


def _file(task: str) -> dict:
    return json.loads((PROMPT_DIR / f"{task}.json").read_text(encoding="utf-8"))


def _examples(task: str, style: str) -> list[str]:
    """The exemplar text of one style, cut into examples at each line-initial label."""
    text = _file(task)["exemplars"][style]
    parts = re.split(rf"\n(?={TASKS[task]}: )", text)
    assert parts[0].strip() == "", "the exemplar text must start with an example"
    return [p for p in parts[1:]]


def _question(example: str, label: str) -> str:
    first = example.split("\n", 1)[0]
    assert first.startswith(f"{label}: ")
    return first[len(label) + 2 :]


def _steps(example: str) -> list[tuple[str, int, str]]:
    """(kind, number, content) of each Thought / Action / Observation of one example."""
    body = example.split("\n", 1)[1]
    pieces = _STEP_LABEL.split(body)
    assert pieces[0] == "", f"text before the first step: {pieces[0]!r}"
    return [(pieces[i], int(pieces[i + 1]), pieces[i + 2]) for i in range(1, len(pieces), 3)]


def _norm_space(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def hotpot_train(data_file) -> dict[str, str]:
    rows = json.loads(data_file(TRAIN_200).read_text(encoding="utf-8"))
    return {_norm_space(r["question"]): r["answer"] for r in rows}


@pytest.fixture(scope="module")
def fever_claims(data_file) -> dict[str, dict]:
    with open(data_file("fever/paper_test_with_evidence.jsonl"), encoding="utf-8") as f:
        return {str(r["id"]): r for r in map(json.loads, f)}


def gold(task: str, question: str, hotpot_train: dict[str, str], fever_claims: dict[str, dict]) -> str:
    if task == "hotpotqa":
        return hotpot_train[_norm_space(question)]
    (label,) = {r["label"] for r in fever_claims.values() if r["question"] == question}
    return label


# --- no evaluation data among the exemplars ---------------------------------------------------


def test_hotpotqa_exemplars_are_train_questions_and_never_dev(data_file, hotpot_train: dict) -> None:
    simplified = json.loads(data_file("hotpotqa/hotpot_dev_v1_simplified.json").read_text(encoding="utf-8"))
    dev = {_norm_space(r["question"]) for r in simplified}
    assert len(dev) > 7000  # the check is against the whole dev set (7,405 questions)
    per_style = {style: [_question(e, "Question") for e in _examples("hotpotqa", style)] for style in STYLES}
    questions = per_style["react"]
    assert len(questions) == COUNTS["hotpotqa"] == len(set(questions))
    assert all(qs == questions for qs in per_style.values()), "every style uses the same questions"
    for question in questions:
        assert _norm_space(question) in hotpot_train, question
        assert _norm_space(question) not in dev, question


def test_fever_exemplar_ids_are_paper_test_claims_never_dev(data_file, fever_claims: dict) -> None:
    ids = json.loads((PROMPT_DIR / "fever_exemplar_ids.json").read_text(encoding="utf-8"))
    assert ids == _file("fever")["exemplar_ids"] and all(isinstance(i, str) for i in ids)
    with open(data_file("fever/paper_dev.jsonl"), encoding="utf-8") as f:
        dev_rows = [json.loads(line) for line in f if line.strip()]
    dev_ids, dev_claims = {str(r["id"]) for r in dev_rows}, {r["claim"] for r in dev_rows}
    assert len(ids) == COUNTS["fever"]
    assert all(i in fever_claims and i not in dev_ids for i in ids)
    for style in STYLES:
        claims = [_question(e, "Claim") for e in _examples("fever", style)]
        assert claims == [fever_claims[i]["question"] for i in ids], style
        assert not set(claims) & dev_claims
    assert sorted(fever_claims[i]["label"] for i in ids) == ["NOT ENOUGH INFO", "REFUTES", "SUPPORTS"]


def test_fever_task_leaves_the_exemplars_out() -> None:
    from react_bench.tasks.fever import exemplar_ids

    assert exemplar_ids() == frozenset(json.loads((PROMPT_DIR / "fever_exemplar_ids.json").read_text()))


# --- format: what the text runner produces and parses --------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_react_exemplars_are_runner_scratchpads_ending_in_the_gold_finish(
    task: str, hotpot_train: dict, fever_claims: dict
) -> None:
    examples = _examples(task, "react")
    assert len(examples) == COUNTS[task]
    names_used: set[str] = set()
    for example in examples:
        steps = _steps(example)
        n = len(steps) // 3 + 1
        expected = [(k, i) for i in range(1, n + 1) for k in ("Thought", "Action", "Observation")][:-1]
        assert [(k, i) for k, i, _ in steps] == expected, example
        calls = []
        for i in range(1, n + 1):
            thought, action = steps[3 * (i - 1)][2], steps[3 * (i - 1) + 1][2]
            # What a model imitating this step would complete after "Thought {i}:".
            parsed = parse_step(f" {thought}Action {i}: {action}", i, "paper")
            assert (parsed.thought, parsed.action) == (thought.strip(), action.strip())
            call = action_to_call(action.strip())
            assert call is not None, action
            calls.append(call)
        assert [name for name, _ in calls[:-1]] and all(name != "finish" for name, _ in calls[:-1])
        assert calls[-1][0] == "finish"
        names_used |= {name for name, _ in calls}
        answer = gold(task, _question(example, TASKS[task]), hotpot_train, fever_claims)
        assert normalize_answer(calls[-1][1]) == normalize_answer(answer)
        if task == "fever":
            assert calls[-1][1] == answer  # labels exactly as the environment's finish takes them
    assert names_used == {"search", "lookup", "finish"}


@pytest.mark.parametrize("task", TASKS)
def test_act_exemplars_are_the_react_ones_without_thoughts(task: str) -> None:
    for react, act in zip(_examples(task, "react"), _examples(task, "act"), strict=True):
        react_steps = [s for s in _steps(react) if s[0] != "Thought"]
        assert _steps(act) == react_steps
        assert react.split("\n", 1)[0] == act.split("\n", 1)[0]


@pytest.mark.parametrize("task", TASKS)
def test_cot_and_standard_answers_are_read_back_as_gold(task: str, hotpot_train: dict, fever_claims: dict) -> None:
    label = TASKS[task]
    for cot, standard in zip(_examples(task, "cot"), _examples(task, "standard"), strict=True):
        question = _question(cot, label)
        answer = gold(task, question, hotpot_train, fever_claims)
        # The runner's prompt ends in "Thought:" (CoT) / "Answer:" (Standard); extract as it does.
        cot_body = cot.split("\n", 1)[1]
        assert cot_body.startswith("Thought: ") and len(cot_body.rstrip("\n").split("\n")) == 2
        extracted = extract_answer(cot_body[len("Thought:") :])
        assert extracted is not None and extracted.source == "answer_label"
        assert normalize_answer(extracted.answer) == normalize_answer(answer)
        assert standard == f"{label}: {question}\nAnswer: {cot_body.split('Answer: ')[1]}"


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("style", (*STYLES, "tool_use", "tool_use_act"))
def test_prompt_layout(task: str, style: str) -> None:
    spec = load_task(task).prompt(style, None, None, None)
    label = TASKS[task]
    assert load_task(task).text_format().label == label and spec.instruction.strip()
    prompt = base_prompt(spec, load_task(task).text_format().opening("QQQ"))
    if style in STYLES:
        assert spec.instruction.endswith("\n") and not spec.instruction.endswith("\n\n")
        assert spec.exemplars.startswith(f"\n{label}: ") and spec.exemplars.endswith("\n\n")
        assert prompt.endswith(f"]\n\n{label}: QQQ\n" if style in ("react", "act") else f"\n\n{label}: QQQ\n")
    else:
        # the tool-use runner gets the text exemplars, turned into native turns by the runner
        text_style = {"tool_use": "react", "tool_use_act": "act"}[style]
        assert spec.exemplars == load_task(task).prompt(text_style, None, None, None).exemplars
        assert "finish" in spec.instruction
    if style in ("react", "act"):
        assert all(action in spec.instruction for action in ("Search[entity]", "Lookup[keyword]", "Finish["))
    if style == "tool_use_act":
        assert "write no text" in spec.instruction
    if task == "fever" and style != "tool_use_act":
        assert all(lab in spec.instruction for lab in ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"))


# --- provenance -------------------------------------------------------------------------------


def test_nothing_is_taken_from_the_paper_prompts(data_file) -> None:
    paper = "\n".join(
        text
        for name in ("react_hotpotqa_prompts.json", "react_fever_prompts.json")
        for text in json.loads(data_file(f"prompts/{name}").read_text(encoding="utf-8")).values()
    )
    # the paper's exemplar questions and claims, read from its files (never written into this repo)
    forbidden = [line.split(": ", 1)[1] for line in paper.splitlines() if line.startswith(("Question: ", "Claim: "))]
    assert len(forbidden) > 10
    for task in TASKS:
        raw = (PROMPT_DIR / f"{task}.json").read_text(encoding="utf-8")
        assert not [s for s in forbidden if s in raw]
        data = _file(task)
        # Observations are the environment's text, not ours: only authored lines are checked.
        lines = [line for text in data["exemplars"].values() for line in text.split("\n")]
        lines = [line for line in lines if not line.startswith("Observation ")]
        lines += [s for text in data["instructions"].values() for s in re.split(r"(?<=[.:])\s", text)]
        copied = [line for line in lines if len(line) > 30 and line.strip() in paper]
        assert not copied, copied


def test_shipped_files_are_what_the_generator_makes_now(data_file, tmp_path: Path) -> None:
    """Observations equal what the current WikiEnv returns, and the generator is deterministic."""
    shared_data = data_file(TRAIN_200).parents[1]  # the generator reads a prepared folder (train and dev files)
    script = REPO / "scripts" / "make_exemplars.py"
    for out in (tmp_path / "a", tmp_path / "b"):
        done = subprocess.run(
            [sys.executable, str(script), "--data-dir", str(shared_data), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    for name in ("hotpotqa.json", "fever.json", "fever_exemplar_ids.json"):
        made = (tmp_path / "a" / name).read_bytes()
        assert made == (tmp_path / "b" / name).read_bytes(), f"{name}: two runs differ"
        assert made == (PROMPT_DIR / name).read_bytes(), (
            f"{name} is stale: run `python scripts/make_exemplars.py` and commit the result"
        )


def _generator():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_exemplars", REPO / "scripts" / "make_exemplars.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_generator_refuses_inconsistent_plans(data_file, monkeypatch: pytest.MonkeyPatch) -> None:
    shared_data = data_file(TRAIN_200).parents[1]
    gen = _generator()
    first = gen.HOTPOT_PLANS[0]
    wrong_answer = gen.plan(
        first.id,
        first.reasoning,
        *[(s.thought, s.action) for s in first.steps[:-1]],
        ("A guess.", "Finish[Royal Society of Chemistry]"),
    )
    monkeypatch.setattr(gen, "HOTPOT_PLANS", (wrong_answer,))
    with pytest.raises(ValueError, match="is not the gold"):
        gen.hotpotqa_items(shared_data)
    dev_claim = gen.plan("91198", "", ("t", "Finish[NOT ENOUGH INFO]"))  # a paper_dev claim id
    monkeypatch.setattr(gen, "FEVER_PLANS", (dev_claim,))
    with pytest.raises(ValueError, match="paper_dev"):
        gen.fever_items(shared_data)
    early_finish = gen.plan("x", "", ("t", "Finish[yes]"), ("t", "Search[Spike Slawson]"))
    bad_action = gen.plan("y", "", ("t", "Search Spike Slawson"), ("t", "Finish[yes]"))
    for bad, message in ((early_finish, "Finish must be the last"), (bad_action, "would not execute")):
        with pytest.raises(ValueError, match=message):
            gen.asyncio.run(gen.observe(_NoWiki(), bad))


class _NoWiki:
    """A backend that is never reached: the plans above fail before any search."""

    name = "none"

    def search(self, entity: str):  # pragma: no cover - must not be called
        raise AssertionError(f"unexpected search for {entity!r}")


@pytest.mark.parametrize("task", TASKS)
def test_tool_use_exemplars_become_native_turns(task: str) -> None:
    from react_bench.envs.wiki.env import WIKI_TOOLS
    from react_bench.runners.tool_use import exemplar_conversation
    from react_bench.types import TextBlock, ToolResultBlock, ToolUseBlock

    spec = load_task(task).prompt("tool_use", None, None, None)
    fmt = load_task(task).text_format()
    turns = exemplar_conversation(spec, "react", None, fmt, WIKI_TOOLS)
    text_actions = re.findall(r"^Action \d+: (\w+)\[", spec.exemplars, re.MULTILINE)
    calls = [b for m in turns for b in m.content if isinstance(b, ToolUseBlock)]
    assert [c.name for c in calls] == [a.lower() for a in text_actions]  # every action, in order
    results = {b.tool_use_id: b.content for m in turns for b in m.content if isinstance(b, ToolResultBlock)}
    assert set(results) == {c.id for c in calls} and all(results.values())  # each paired, none empty
    assert [m.role for m in turns] == ["user", "assistant"] * (len(turns) // 2) + ["user"] * (len(turns) % 2)
    questions = [b.text for m in turns for b in m.content if isinstance(b, TextBlock) and m.role == "user"]
    assert len(questions) == COUNTS[task] and all(q.startswith(f"{TASKS[task]}: ") for q in questions)
    assert exemplar_conversation(spec, "react", 0, fmt, WIKI_TOOLS) == ()
    two = exemplar_conversation(spec, "react", 2, fmt, WIKI_TOOLS)
    assert sum(1 for m in two for b in m.content if isinstance(b, TextBlock) and m.role == "user") == 2
