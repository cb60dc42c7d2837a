"""The mode table: what each mode loads, needs and sends, read by the solver and the run."""

from __future__ import annotations

import pytest

from react_bench.envs.wiki.env import WikiEnv, wiki_format
from react_bench.methods.core import MODE_SPECS, Solver, SolveSettings
from react_bench.methods.registry import methods
from react_bench.models.base import ModelCapabilities
from tests.support import PROMPTS

EXPECTED_KEYS = {
    ("standard", "text"): ("standard",),
    ("cot", "text"): ("cot",),
    ("cot_sc", "text"): ("cot",),
    ("act", "text"): ("act",),
    ("react", "text"): ("react",),
    ("react_cot_sc", "text"): ("react", "cot"),
    ("cot_sc_react", "text"): ("cot", "react"),
    ("standard", "tool_use"): ("standard",),
    ("cot", "tool_use"): ("cot",),
    ("cot_sc", "tool_use"): ("cot",),
    ("act", "tool_use"): ("tool_use_act",),
    ("react", "tool_use"): ("tool_use",),
    ("react_cot_sc", "tool_use"): ("tool_use", "cot"),
    ("cot_sc_react", "tool_use"): ("cot", "tool_use"),
}


@pytest.mark.parametrize(("mode", "runner"), sorted(EXPECTED_KEYS))
def test_prompt_keys_of_every_mode_and_runner(mode: str, runner: str) -> None:
    assert MODE_SPECS[mode].prompt_keys(runner) == EXPECTED_KEYS[(mode, runner)]  # type: ignore[arg-type]


def test_which_modes_need_the_environment_and_sample() -> None:
    assert {m for m, method in methods().items() if method.spec.needs_env} == {
        "act",
        "react",
        "react_cot_sc",
        "cot_sc_react",
        "react_im",
        "reflexion",
        "lats",
        "best_of_k",
    }
    assert {m for m, method in methods().items() if method.spec.samples} == {"cot_sc", "react_cot_sc", "cot_sc_react"}


@pytest.mark.parametrize("runner", ["text", "tool_use"])
def test_probe_requests_are_the_policies_first_requests(scripted, wiki, runner: str) -> None:
    """cot_sc_react sends a sampled CoT request and a ReAct step-1 request; the probe builds
    both through the policies, so what a model refuses is judged on what is really sent."""
    model = scripted([])
    settings = SolveSettings(mode="cot_sc_react", runner=runner)
    solver = Solver(settings, model, PROMPTS["Question"], lambda: WikiEnv(wiki), wiki_format())
    cot, react = solver.probe_requests("Which river feeds Alpha Lake?")
    assert (cot.temperature, cot.sample_index) == (0.7, 0)
    assert cot.prompt is not None and cot.prompt.endswith("Question: Which river feeds Alpha Lake?\nThought:")
    if runner == "text":
        assert react.prompt is not None and react.prompt.endswith("Thought 1:")
        assert react.stop == ("\nObservation 1:",) and react.temperature == 0.0
    else:
        assert [t.name for t in react.tools] == ["search", "lookup", "finish"] and react.tool_choice == "auto"
    assert model.requests == []  # probing sends nothing


def test_a_model_without_sampling_reports_both_temperatures_not_applied(scripted, wiki) -> None:
    model = scripted([], capabilities=ModelCapabilities(raw_completion=True, sampling=False))
    settings = SolveSettings(mode="react_cot_sc")
    solver = Solver(settings, model, PROMPTS["Question"], lambda: WikiEnv(wiki), wiki_format())
    dropped = [d for r in solver.probe_requests() for d in model.not_applied(r)]
    assert dropped == ["temperature=0.0", "temperature=0.7"]
