"""Generate the project's few-shot prompts: ``react_bench/prompts/{hotpotqa,fever}.json``.

    python scripts/make_exemplars.py [--data-dir ../shared/data] [--out react_bench/prompts]

Decisions a next engineer needs:
- The thoughts, actions and CoT reasoning below are written for this project (never copied
  from the paper's prompt files). Observations are never written by hand: every action of
  every plan is executed through ``WikiEnv`` on an offline wiki, and the exemplar shows what
  the environment returned, formatted exactly as the text runner formats its scratchpad
  (``paper_observation``, ``Observation {i}: ...\\n``; no observation after the final Finish,
  since the episode ends there). So a model sees at test time the format it was shown,
  quirks included (the doubled period at a page's end, ``No more results.`` with its newline).
- HotpotQA exemplars are **train** questions (``hotpot_train_distractor_200.json``), named by
  ``_id``; question text and gold answer come from that file, and the wiki is built from its
  context paragraphs. FEVER exemplars are claims of ``paper_test_with_evidence.jsonl`` (never
  ``paper_dev.jsonl``: checked) over the FEVER evidence wiki; their ids go to
  ``fever_exemplar_ids.json``, which the FEVER task leaves out of every split.
- The script refuses to write when a plan is inconsistent: an action the paper would not
  execute, an error observation, a Finish before the last step, or a final answer other than
  the gold answer (HotpotQA, after SQuAD normalisation) or the gold label (FEVER).
- Layout ``instruction + exemplars + "Question: ..."``: instructions end with a newline; the
  exemplar text starts with a blank line, separates examples by blank lines and ends with
  one, so the real question is set off like every example before it.
- Idempotent: wikis are built in a temporary directory and the JSON has a fixed key order,
  so the same data gives the same bytes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from react_bench.envs.wiki.build import build_from_distractor, build_from_fever  # noqa: E402
from react_bench.envs.wiki.env import (  # noqa: E402
    WikiBackend,
    WikiEnv,
    action_to_call,  # noqa: E402
)
from react_bench.envs.wiki.local import LocalWiki  # noqa: E402
from react_bench.metrics import normalize_answer  # noqa: E402
from react_bench.runners.formats import paper_observation  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "react_bench" / "prompts"
HOTPOT_TRAIN = "hotpotqa/hotpot_train_distractor_200.json"
FEVER_CLAIMS = "fever/paper_test_with_evidence.jsonl"
FEVER_DEV = "fever/paper_dev.jsonl"
FEVER_WIKI = "fever/wiki_pages_evidence_subset.jsonl"
FEVER_IDS_FILE = "fever_exemplar_ids.json"


@dataclass(frozen=True)
class Step:
    thought: str
    action: str


@dataclass(frozen=True)
class Plan:
    """One exemplar: a dataset id, its ReAct steps (Act drops the thoughts), its CoT reasoning."""

    id: str
    reasoning: str
    steps: tuple[Step, ...]

    @property
    def answer(self) -> str:
        call = action_to_call(self.steps[-1].action)
        if call is None or call[0] != "finish":
            raise ValueError(f"exemplar {self.id}: the last action must be Finish[...]")
        return call[1]


def plan(id_: str, reasoning: str, *steps: tuple[str, str]) -> Plan:
    return Plan(id_, reasoning, tuple(Step(thought, action) for thought, action in steps))


# --- HotpotQA: six train questions; three bridge, three comparison (one yes, one no) --------

HOTPOT_PLANS: tuple[Plan, ...] = (
    plan(
        "5adffc93554299025d62a39f",  # Teri W. Odom: the key sentence is past the first five
        "Teri W. Odom is on the editorial advisory board of ACS Nano, among other journals. "
        "ACS Nano was first published in 2007, by the American Chemical Society.",
        (
            "Two facts are needed: the journal Teri W. Odom is a member of, and who first published it in "
            "2007. I will start with her page.",
            "Search[Teri W. Odom]",
        ),
        (
            "The opening sentences name no journal. I can look for the word journal further down her page.",
            "Lookup[journal]",
        ),
        (
            "She is on the editorial advisory boards of ACS Nano, Chemical Physics Letters, Journal of Physical "
            "Chemistry and Nano Letters. I need the one that started in 2007; ACS Nano is the first to check.",
            "Search[ACS Nano]",
        ),
        (
            "ACS Nano was first published in August 2007 by the American Chemical Society. That is the "
            "publisher asked for.",
            "Finish[American Chemical Society]",
        ),
    ),
    plan(
        "5a77bd595542995d83181291",  # Clijsters / Pierce: comparison of dates
        "Kim Clijsters was born on 8 June 1983 and Mary Pierce on 15 January 1975. Pierce was born "
        "eight years earlier, so she is the older one.",
        ("To tell who is older I need both birth dates. First Kim Clijsters.", "Search[Kim Clijsters]"),
        ("Kim Clijsters was born on 8 June 1983. Now Mary Pierce.", "Search[Mary Pierce]"),
        (
            "Mary Pierce was born on 15 January 1975, eight years before Clijsters. Mary Pierce is older.",
            "Finish[Mary Pierce]",
        ),
    ),
    plan(
        "5ab728e45542992aa3b8c7b4",  # Thoen Stone: a failed search, then the title it suggests
        "The Thoen Stone is on display at the Adams Museum & House in Deadwood, South Dakota. "
        "Deadwood is the county seat of Lawrence County.",
        ("I need the museum that shows the Thoen Stone, then the county that museum is in.", "Search[Thoen Stone]"),
        (
            "The stone is displayed at the Adams Museum & House in Deadwood, South Dakota. Which county is "
            "Deadwood in?",
            "Search[Deadwood]",
        ),
        (
            "There is no page called just Deadwood, but Deadwood, South Dakota is among the similar titles.",
            "Search[Deadwood, South Dakota]",
        ),
        (
            "Deadwood is the county seat of Lawrence County, so the museum is in Lawrence County.",
            "Finish[Lawrence County]",
        ),
    ),
    plan(
        "5ac3ad225542995ef918c1da",  # gin and tonic / Paloma: a "no" comparison
        "A gin and tonic is made with gin, and only the Paloma is made with tequila. They are not both "
        "tequila cocktails.",
        ("I need the base spirit of each drink, beginning with the gin and tonic.", "Search[Gin and tonic]"),
        (
            "A gin and tonic is gin with tonic water, not tequila, so the answer is probably no. I will still "
            "check the Paloma.",
            "Search[Paloma]",
        ),
        ("The drink's page is Paloma (cocktail).", "Search[Paloma (cocktail)]"),
        (
            "The Paloma is based on tequila but the gin and tonic is based on gin, so they are not both "
            "tequila cocktails.",
            "Finish[no]",
        ),
    ),
    plan(
        "5a87390555429960ec39b769",  # Myra Kraft: a two-hop bridge
        "Myra Kraft was married to Robert Kraft, the owner of the New England Patriots and the New "
        "England Revolution. Both teams play at Gillette Stadium.",
        (
            "I should find out who Myra Kraft's husband was and which teams he owns, then where they play.",
            "Search[Myra Kraft]",
        ),
        (
            "Her husband is Robert Kraft, owner of the New England Patriots and the New England Revolution. "
            "His page should name their stadium.",
            "Search[Robert Kraft]",
        ),
        ("Both teams play at Gillette Stadium, which Kraft also owns.", "Finish[Gillette Stadium]"),
    ),
    plan(
        "5ae3345f55429928c4239682",  # McIlrath / Slawson: a "yes" comparison
        "Tim McIlrath, the singer of Rise Against, is an American punk rock musician, and so is Spike "
        "Slawson of Me First and the Gimme Gimmes.",
        ("I have to check each of them. Tim McIlrath first.", "Search[Tim McIlrath]"),
        (
            "Tim McIlrath is an American punk rock musician, the lead singer of Rise Against. Next Spike Slawson.",
            "Search[Spike Slawson]",
        ),
        ("Spike Slawson is an American punk rock musician too, so both are.", "Finish[yes]"),
    ),
)

# --- FEVER: three paper_test claims, one per label ------------------------------------------

FEVER_PLANS: tuple[Plan, ...] = (
    plan(
        "17840",
        "In February 2015 Food Network reached about 96.9 million pay television households, 83.3% of "
        "the households with television, which is what the claim states.",
        (
            "The claim is about Food Network's reach. Its page should give the share of households.",
            "Search[Food Network]",
        ),
        (
            "As of February 2015 Food Network was available to about 96,931,000 pay television households, "
            "83.3% of households with television. That matches the claim.",
            "Finish[SUPPORTS]",
        ),
    ),
    plan(
        "116464",
        "Watertown, Massachusetts lies in Middlesex County, not in Suffolk County.",
        ("I need the county that Watertown, Massachusetts is in.", "Search[Watertown, Massachusetts]"),
        ("Watertown is a city in Middlesex County, not Suffolk County, so the claim is false.", "Finish[REFUTES]"),
    ),
    plan(
        "89323",
        "Simon Pegg is an English actor, so the first half holds, but no source at hand gives his height, "
        "so whether he is tall cannot be settled.",
        (
            "The claim has two parts: that Simon Pegg is English and that he is tall. His page should help with both.",
            "Search[Simon Pegg]",
        ),
        (
            "He is an English actor, so the first part holds. The opening says nothing about his height; I "
            "will look for it on the page.",
            "Lookup[height]",
        ),
        (
            "The page confirms that he is English but says nothing about his height, so the evidence cannot "
            "decide the claim.",
            "Finish[NOT ENOUGH INFO]",
        ),
    ),
)

# --- instructions -------------------------------------------------------------------------

_TEXT_ACTIONS = (
    "Search[entity] opens the Wikipedia page whose title is exactly entity and shows its first five "
    "sentences; when there is no such page it lists similar titles that you can search instead.\n"
    "Lookup[keyword] shows the next sentence that contains keyword on the page opened by the last "
    "Search; repeat it for further matches.\n"
)
_SHORT = "a name, a date, a number, or yes / no"
_FEVER_TASK = "decide whether Wikipedia SUPPORTS a claim, REFUTES it, or gives NOT ENOUGH INFO to decide either way"
_FEVER_LABELS = "SUPPORTS, REFUTES or NOT ENOUGH INFO"
_EXAMPLES = "Solved examples follow.\n"

HOTPOT_INSTRUCTIONS = {
    "react": (
        "Answer a question by alternating Thought, Action and Observation steps. In a Thought, reason "
        "about what you have learned so far and what to do next. An Action is one of:\n"
        + _TEXT_ACTIONS
        + f"Finish[answer] gives the answer and ends the task; keep it short: {_SHORT}.\n"
        "Each Observation is what the Action returned. " + _EXAMPLES
    ),
    "act": (
        "Answer a question by taking Actions and reading the Observation that each one returns. An "
        "Action is one of:\n"
        + _TEXT_ACTIONS
        + f"Finish[answer] gives the answer and ends the task; keep it short: {_SHORT}.\n"
        + _EXAMPLES
    ),
    "cot": (
        "Answer a question. First write a Thought that works through the facts needed, one at a time; "
        f"then give the short answer ({_SHORT}) on its own line, after Answer:. " + _EXAMPLES
    ),
    "standard": (f"Answer a question with a short answer ({_SHORT}) after Answer:. " + _EXAMPLES),
    "tool_use": (
        "You answer questions that may need several facts from Wikipedia, using three tools: "
        "search(entity) shows the first five sentences of the page titled exactly entity, or similar titles "
        "to try when there is none; lookup(keyword) shows the next sentence containing keyword on the page "
        "of the last search; finish(answer) submits your answer and ends the task. Before each tool call, "
        "think briefly, in a sentence or two, about what you know and what you need next; then call the "
        f"tool. The answer must be short ({_SHORT}), not a sentence. Give the final answer by calling finish."
    ),
    "tool_use_act": (
        "You answer questions that may need several facts from Wikipedia, using three tools: "
        "search(entity), lookup(keyword) and finish(answer). Call tools only: write no text at all, neither "
        f"before nor between the calls. The answer must be short ({_SHORT}). Give the final answer by "
        "calling finish."
    ),
}

FEVER_INSTRUCTIONS = {
    "react": (
        f"Check a claim against Wikipedia: {_FEVER_TASK}. Alternate Thought, Action and Observation "
        "steps. In a Thought, reason about what the evidence so far shows and what to check next. An Action "
        "is one of:\n" + _TEXT_ACTIONS + f"Finish[label] gives the verdict, one of {_FEVER_LABELS}, and "
        "ends the task.\nEach Observation is what the Action returned. " + _EXAMPLES
    ),
    "act": (
        f"Check a claim against Wikipedia: {_FEVER_TASK}. Take Actions and read the Observation that "
        "each one returns. An Action is one of:\n"
        + _TEXT_ACTIONS
        + f"Finish[label] gives the verdict, one of {_FEVER_LABELS}, and ends the task.\n"
        + _EXAMPLES
    ),
    "cot": (
        f"Check a claim: {_FEVER_TASK}. First write a Thought that weighs what is known about it; "
        f"then give the verdict, one of {_FEVER_LABELS}, on its own line, after Answer:. " + _EXAMPLES
    ),
    "standard": (
        f"Check a claim: {_FEVER_TASK}. Give the verdict, one of {_FEVER_LABELS}, after Answer:. " + _EXAMPLES
    ),
    "tool_use": (
        f"You check claims against Wikipedia: {_FEVER_TASK}. Three tools: search(entity) shows "
        "the first five sentences of the page titled exactly entity, or similar titles to try when there is "
        "none; lookup(keyword) shows the next sentence containing keyword on the page of the last search; "
        "finish(answer) submits your verdict and ends the task. Before each tool call, think briefly, in a "
        "sentence or two, about what the evidence shows and what to check next; then call the tool. Give "
        f"the verdict by calling finish with exactly one of {_FEVER_LABELS}."
    ),
    "tool_use_act": (
        f"You check claims against Wikipedia: {_FEVER_TASK}. Tools: search(entity), "
        "lookup(keyword) and finish(answer). Call tools only: write no text at all, neither before nor "
        f"between the calls. Give the verdict by calling finish with exactly one of {_FEVER_LABELS}."
    ),
}

# --- execution and formatting ---------------------------------------------------------------


async def observe(wiki: WikiBackend, p: Plan) -> list[str]:
    """Run the plan's actions in a fresh episode; the observations of all but the final Finish."""
    env = WikiEnv(wiki)
    observations: list[str] = []
    for i, step in enumerate(p.steps, start=1):
        call = action_to_call(step.action)
        if call is None:
            raise ValueError(f"exemplar {p.id}, step {i}: the paper would not execute {step.action!r}")
        result = await env.step_text(step.action)
        if result.is_error:
            raise ValueError(f"exemplar {p.id}, step {i}: {step.action} gave an error: {result.text}")
        if (call[0] == "finish") != (i == len(p.steps)):
            raise ValueError(f"exemplar {p.id}: Finish must be the last action and only there")
        if call[0] != "finish":
            observations.append(paper_observation(result.text))
    return observations


def react_text(label: str, question: str, p: Plan, observations: Sequence[str], thoughts: bool) -> str:
    """One exemplar in the text runner's scratchpad format (``thoughts=False``: Act)."""
    parts = [f"{label}: {question}\n"]
    for i, step in enumerate(p.steps, start=1):
        if thoughts:
            parts.append(f"Thought {i}: {step.thought}\n")
        parts.append(f"Action {i}: {step.action}\n")
        if i <= len(observations):
            parts.append(f"Observation {i}: {observations[i - 1]}\n")
    return "".join(parts)


def join_examples(examples: Sequence[str]) -> str:
    return "\n" + "\n".join(examples) + "\n"


async def prompt_file(
    label: str, instructions: dict[str, str], wiki: LocalWiki, items: Sequence[tuple[Plan, str]]
) -> dict[str, Any]:
    """The prompt file for (plan, question text) pairs."""
    react, act, cot, standard = [], [], [], []
    for p, question in items:
        observations = await observe(wiki, p)
        react.append(react_text(label, question, p, observations, thoughts=True))
        act.append(react_text(label, question, p, observations, thoughts=False))
        cot.append(f"{label}: {question}\nThought: {p.reasoning}\nAnswer: {p.answer}\n")
        standard.append(f"{label}: {question}\nAnswer: {p.answer}\n")
    exemplars = {
        name: join_examples(texts)
        for name, texts in (("react", react), ("act", act), ("cot", cot), ("standard", standard))
    }
    return {
        "label": label,
        "instructions": instructions,
        "exemplars": exemplars,
        "exemplar_ids": [p.id for p, _ in items],
        "generated_by": "scripts/make_exemplars.py",
    }


def hotpotqa_items(data_dir: Path) -> list[tuple[Plan, str]]:
    records = {r["_id"]: r for r in json.loads((data_dir / HOTPOT_TRAIN).read_text(encoding="utf-8"))}
    items = []
    for p in HOTPOT_PLANS:
        record = records.get(p.id)
        if record is None:
            raise ValueError(f"HotpotQA exemplar {p.id} is not a question of {HOTPOT_TRAIN}")
        if normalize_answer(p.answer) != normalize_answer(record["answer"]):
            raise ValueError(f"HotpotQA exemplar {p.id}: Finish[{p.answer}] is not the gold {record['answer']!r}")
        items.append((p, " ".join(record["question"].split())))
    return items


def _jsonl(path: Path) -> dict[str, dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return {str(r["id"]): r for r in (json.loads(line) for line in f if line.strip())}


def fever_items(data_dir: Path) -> list[tuple[Plan, str]]:
    claims, dev = _jsonl(data_dir / FEVER_CLAIMS), _jsonl(data_dir / FEVER_DEV)
    items = []
    for p in FEVER_PLANS:
        record = claims.get(p.id)
        if record is None or p.id in dev:
            raise ValueError(f"FEVER exemplar {p.id} must be a claim of {FEVER_CLAIMS} and not of {FEVER_DEV}")
        if p.answer != record["label"]:
            raise ValueError(f"FEVER exemplar {p.id}: Finish[{p.answer}] is not the gold {record['label']!r}")
        items.append((p, record["question"]))
    return items


def _with_wiki(build: Callable[..., Any], src: Path, tmp: Path, make: Callable[[LocalWiki], Any]) -> Any:
    path = tmp / f"{src.stem}.sqlite"
    build(src, path)
    wiki = LocalWiki(path)
    try:
        return asyncio.run(make(wiki))
    finally:
        wiki.close()


def generate(data_dir: Path, out: Path) -> list[Path]:
    """Write hotpotqa.json, fever.json and fever_exemplar_ids.json into ``out``; return their paths."""
    hotpot, fever = hotpotqa_items(data_dir), fever_items(data_dir)
    with tempfile.TemporaryDirectory(prefix="react-bench-exemplars-") as tmp:
        hotpot_file = _with_wiki(
            build_from_distractor,
            data_dir / HOTPOT_TRAIN,
            Path(tmp),
            lambda wiki: prompt_file("Question", HOTPOT_INSTRUCTIONS, wiki, hotpot),
        )
        fever_file = _with_wiki(
            build_from_fever,
            data_dir / FEVER_WIKI,
            Path(tmp),
            lambda wiki: prompt_file("Claim", FEVER_INSTRUCTIONS, wiki, fever),
        )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in (
        ("hotpotqa.json", hotpot_file),
        ("fever.json", fever_file),
        (FEVER_IDS_FILE, [p.id for p, _ in fever]),
    ):
        path = out / name
        path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA, help="the offline data (../shared/data)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the prompt files go")
    args = parser.parse_args(argv)
    for path in generate(args.data_dir.resolve(), args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
