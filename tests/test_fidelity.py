"""Fidelity to the original code: the paper's first prompt byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from react_bench.episode import build_prompts
from react_bench.methods.core import Solver, SolveSettings
from react_bench.runconfig import RunConfig
from react_bench.tasks import PAPER500, TaskConfig, load_task


@pytest.mark.parametrize(
    ("task", "key", "label", "data"),
    [
        ("hotpotqa", "webthink_simple6", "Question", "hotpotqa/hotpot_dev_v1_simplified.json"),
        ("fever", "webthink_simple3", "Claim", "fever/paper_dev.jsonl"),
    ],
)
def test_first_prompt_of_paper500_is_the_originals_byte_for_byte(
    scripted, data_file, reference_text, tmp_path: Path, task, key, label, data
):
    """prompt=paper: the notebook's prompt, read from the authors' pinned files (module upstream)."""
    prompts_file = data_file(f"prompts/react_{task}_prompts.json")
    instruction = reference_text("react/hotpotqa_instruction") if task == "hotpotqa" else ""
    folder = tmp_path / "data"  # the paper's 500 index the authors' own files
    (folder / data).parent.mkdir(parents=True)
    (folder / data).symlink_to(data_file(data))
    config = RunConfig(
        task=TaskConfig(name=task, split="paper500", n=25, data_dir=str(folder)),
        model={"provider": "scripted"},
        solve=SolveSettings(mode="react"),
        prompt_source="paper",
    )
    # the original: webthink_prompt = instruction + webthink_examples; prompt = webthink_prompt + question + "\n"
    # (question = the environment's "Question: ..." / "Claim: ..."), then llm(prompt + "Thought 1:")
    examples_text = json.loads(prompts_file.read_text())[key]
    if task == "hotpotqa":
        rows = json.loads((folder / data).read_text())
        originals = [rows[i]["question"] for i in PAPER500[:25]]
    else:
        rows = (folder / data).read_text().splitlines()
        originals = [json.loads(rows[i])["claim"] for i in PAPER500[:25]]
    prompts = build_prompts(config)
    assert prompts["react"].source.startswith("paper: ysymyth/ReAct@6bdb3a1:prompts/")
    assert prompts["react"].source.endswith(
        f"#{key}" + (" + ysymyth/ReAct@6bdb3a1:hotpotqa.ipynb#instruction" if instruction else "")
    )
    solver = Solver(config.solve, scripted([]), prompts, None, load_task(task).text_format())
    examples = load_task(task).examples(config.task)
    assert len(examples) == 25
    for example, original in zip(examples, originals, strict=True):
        (request,) = solver.probe_requests(example.question)
        assert request.prompt == instruction + examples_text + f"{label}: {original}\n" + "Thought 1:"
    if task == "fever":
        # FEVER's instruction is empty: its examples open with their own instruction line, not a claim
        assert instruction == "" and not examples_text.lstrip().startswith("Claim:")


# --- wiki.fidelity=paper: the search page's HTML read as the original code read it ----------

HTML = Path(__file__).parent / "fixtures" / "wiki_html"
TESTLAND = (
    "The Testland orogeny was an episode of mountain building.[1] It formed the Test Range.. "
    "The eastern sector extends into the Plains. It rises from 500 to 900 m.[2]. "
    "First listed item hereSecond. Privacy policyAbout Wikipedia."
)  # <p> texts, then <ul> texts; "Short one" has two words: dropped; footnote markers kept


@pytest.fixture
def paper_wiki(tmp_path):
    from react_bench.envs.wiki.live import LiveSettings
    from react_bench.envs.wiki.paper import PaperWiki
    from react_bench.envs.wiki.store import ObservationStore
    from react_bench.testing.mediawiki_server import MediaWikiStandIn

    stand_in = MediaWikiStandIn(
        html_articles={
            "Testland orogeny": (HTML / "testland_orogeny.html").read_text(),
            "Flat Plains": (HTML / "flat_plains.html").read_text(),
        },
        html_search={
            "[Flat Plains]": (HTML / "search_bracket_flat_plains.html").read_text(),
            "Plains Museum of Art": (HTML / "search_plains_museum_of_art.html").read_text(),
        },
        redirects={"Testland Orogeny Event": "Testland orogeny"},
    ).start()
    settings = LiveSettings(api_url=stand_in.api_url, timeout_s=2, max_attempts=1)
    yield PaperWiki("record", ObservationStore(tmp_path / "store.sqlite"), settings), stand_in
    stand_in.stop()


@pytest.mark.parametrize(
    ("action", "observation"),
    [
        ("Search[Testland orogeny]", TESTLAND),  # exact title: Wikipedia's "Go" opens the article
        ("Search[testland orogeny]", TESTLAND),  # a case variant goes there too
        ("Search[Testland Orogeny Event]", TESTLAND),  # a redirect
        (
            "Search[Flat Plains]",  # "may refer to:" -> searched again as [Flat Plains]
            "Could not find [Flat Plains]. Similar: ['Flat Plains (Testland) (redirect from Flat plain)', "
            "'Flat Plains (Elsewhere)'].",
        ),
        (
            "Search[Plains Museum of Art]",  # result headings, notes kept, first five
            "Could not find Plains Museum of Art. Similar: ['Plains Museum', 'Testland orogeny (section Museum)', "
            "'Art of the Plains', 'Museum of Art (Testland)', 'Plains Art Guild'].",
        ),
        (
            "Search[Zyxq]",  # no hit at all: the search page's own text is the "page"
            'There were no results matching the query.. The page "Zyxq" does not exist. '
            "You can ask for it to be created..",
        ),
    ],
)
async def test_paper_fidelity_observations(paper_wiki, action: str, observation: str) -> None:
    from react_bench.envs.wiki.env import WikiEnv

    wiki, _ = paper_wiki
    assert (await WikiEnv(wiki).step_text(action)).text == observation


async def test_paper_fidelity_lookup_and_the_request_it_sends(paper_wiki) -> None:
    from react_bench.envs.wiki.env import WikiEnv

    wiki, stand_in = paper_wiki
    env = WikiEnv(wiki)
    await env.step_text("Search[Testland orogeny]")
    assert (await env.step_text("Lookup[eastern]")).text == "(Result 1 / 1) The eastern sector extends into the Plains."
    assert (await env.step_text("Lookup[[2]]")).text == "(Result 1 / 1) It rises from 500 to 900 m.[2]."
    assert stand_in.requests[0].params == {"search": "Testland orogeny"}  # spaces sent as "+"


def test_paper_fidelity_is_the_default_for_live_wikipedia_under_the_paper_protocol() -> None:
    from tests.support import composed

    assert RunConfig.from_mapping(composed("wiki=live")).env.fidelity == "paper"
    assert RunConfig.from_mapping(composed("wiki=live", "protocol=custom")).env.fidelity == "clean"
    assert RunConfig.from_mapping(composed("wiki=live", "wiki.fidelity=clean")).env.fidelity == "clean"
    assert RunConfig.from_mapping(composed()).env.fidelity is None  # the offline wiki has no HTML
