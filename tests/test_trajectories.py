"""Both action parsers on every step of every recorded trajectory in ../shared/data/trajectories.

For each step we rebuild the model's completion (the text between ``Thought {i}:`` and
``\\nObservation {i}:``), parse it with the paper parser and the robust parser, and compare
with the action the original run wrote on that step's ``Action`` line, under the paper's
execution semantics (``action_to_call``).

The sources and how a completion is rebuilt:
- Reflexion, text-davinci-003 (the 5-trial log and the scratchpads): numbered ReAct format;
  the completion is `` {thought}\\nAction {i}: {action}``.
- FireAct, fine-tuned GPT-3.5 (chat; each assistant message is one step, no stop sequence)
  and Llama-2-13B (prompt ends ``Thought:``, stop ``\\nObservation:``): UNNUMBERED labels.
  ``raw`` parses them as written, so the paper's split (which needs ``\\nAction {i}: ``)
  fails on all of them and the re-ask would follow. ``renumbered`` gives each label the
  step number (a later thought / action in the same completion gets the next one), to run the
  paper's split on the models' real content. The expected action is the model's first
  ``Action:`` line; FireAct's own split appended any lines after it to the argument, which no
  parser here reproduces on purpose.

Outcomes per step and parser: ``executed`` (the call the original run executed),
``invalid_as_written`` (the written action is invalid and the parser agrees), ``reask``
(no action: the paper's fallback), ``extra_lines`` (the paper's split keeps everything the
model wrote after its first action, so the environment refuses the action), ``swallowed``
(the same, but the text still ends in ``]``, so the environment executes the first action's
name with the later lines swallowed into its argument; FireAct's own run did the same),
``invalid`` (an action text the environment would refuse),
``repaired`` (the robust parser turned an invalid written action into a call drawn from the
written line), ``wrong`` (anything else; must never happen). Parse rate = (executed +
invalid_as_written) / steps. The table is printed in pytest's terminal summary and recorded
as a property of ``test_report_parse_rates``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from react_bench.envs.wiki.env import action_to_call
from react_bench.runners.parsing import PARSERS, ParsedStep, ParserName, parse_step
from tests.support import DATA

TRAJECTORIES = "trajectories"
REFLEXION_LOG = "reflexion_davinci003_hotpotqa_100x5.txt"
REFLEXION_SCRATCHPADS = "reflexion_davinci003_hotpotqa_scratchpads.json"
FIREACT_GPT = "fireact_gpt35ft_hotpotqa_500.json"
FIREACT_LLAMA = "fireact_llama2_13b_hotpotqa_500.json"
ALPACA_RESPONSE = "\n\n### Response:\n"


@dataclass(frozen=True)
class Step:
    episode: str
    number: int
    completion: str
    written_action: str  # the text after the step's first Action label, as in the file


# --- readers -------------------------------------------------------------------------------

_NUMBERED_STEP = re.compile(r"^Thought (\d+): (.*)\nAction \1: (.*)$", re.MULTILINE)
_FIRST_ACTION_LINE = re.compile(r"^Action: ?(.*)$", re.MULTILINE)


def _numbered_steps(episode: str, text: str) -> Iterator[Step]:
    for match in _NUMBERED_STEP.finditer(text):
        number, thought, action = int(match[1]), match[2], match[3]
        yield Step(episode, number, f" {thought}\nAction {number}: {action}", action)


def read_reflexion_log(path: Path) -> list[Step]:
    episodes = re.split(r"^Question: ", path.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
    return [step for n, text in enumerate(episodes) for step in _numbered_steps(f"q{n}", text)]


def read_reflexion_scratchpads(path: Path) -> list[Step]:
    records = json.loads(path.read_text(encoding="utf-8"))
    return [step for n, record in enumerate(records) for step in _numbered_steps(f"q{n}", record["scratchpad"])]


def _unnumbered_step(episode: str, number: int, completion: str) -> Step:
    first_action = _FIRST_ACTION_LINE.search(completion)
    assert first_action is not None, (episode, number, completion)
    return Step(episode, number, completion, first_action[1])


def read_fireact_gpt(path: Path) -> list[Step]:
    """One step per assistant message; its whole content is the completion."""
    steps = []
    for episode, record in json.loads(path.read_text(encoding="utf-8")).items():
        replies = [m["content"] for m in record["traj"] if m["role"] == "assistant"]
        steps.extend(_unnumbered_step(episode, n, reply) for n, reply in enumerate(replies, start=1))
    return steps


def read_fireact_llama(path: Path) -> list[Step]:
    """The trajectory is ``(Thought: T\\nAction: A\\nObservation: O\\n)*`` after the prompt."""
    steps = []
    for episode, record in json.loads(path.read_text(encoding="utf-8")).items():
        body = record["traj"].split(ALPACA_RESPONSE, 1)[1]
        segments = ("\n" + body).split("\nObservation: ")[:-1]  # the last one is the final observation
        for n, segment in enumerate(segments, start=1):
            start = 1 if n == 1 else segment.index("\nThought: ") + 1  # skip the previous observation
            step_text = segment[start:]
            assert step_text.startswith("Thought:"), (episode, n, step_text)
            steps.append(_unnumbered_step(episode, n, step_text[len("Thought:") :]))
    return steps


def renumbered(step: Step) -> Step:
    """The same completion in the numbered format, as a numbered model would have written it."""
    text = step.completion
    if text.startswith("Thought:"):  # the chat reply repeats the label the prompt would end with
        text = text[len("Thought:") :]
    lines, offset, acted = [], 0, False
    for line in text.split("\n"):
        if line.startswith("Thought:"):
            offset, acted = offset + acted, False
            line = f"Thought {step.number + offset}:" + line[len("Thought:") :]
        elif line.startswith("Action:"):
            acted = True
            line = f"Action {step.number + offset}:" + line[len("Action:") :]
        lines.append(line)
    return Step(step.episode, step.number, "\n".join(lines), step.written_action)


# --- classification ------------------------------------------------------------------------


def _drawn_from(call: tuple[str, str], written: str) -> bool:
    name, argument = call
    return name in written.lower() and argument in written


def classify(parsed: ParsedStep, written: str) -> str:
    expected = action_to_call(written)
    if parsed.action is None:
        return "reask"
    got = action_to_call(parsed.action)
    if got == expected:
        return "executed" if expected is not None else "invalid_as_written"
    if "\n" in parsed.action.strip():
        return "extra_lines" if got is None else "swallowed"
    if got is None:
        return "invalid"
    if expected is None and parsed.repairs and _drawn_from(got, written):
        return "repaired"
    return "wrong"


@dataclass
class ParserReport:
    outcomes: Counter[str] = field(default_factory=Counter)
    repairs: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[tuple[Step, ParsedStep]]] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return sum(self.outcomes.values())

    @property
    def rate(self) -> float:
        return (self.outcomes["executed"] + self.outcomes["invalid_as_written"]) / self.steps


Reports = dict[str, dict[ParserName, ParserReport]]


def evaluate(steps: list[Step]) -> dict[ParserName, ParserReport]:
    reports: dict[ParserName, ParserReport] = {parser: ParserReport() for parser in PARSERS}
    for step in steps:
        for parser, report in reports.items():
            parsed = parse_step(step.completion, step.number, parser)
            outcome = classify(parsed, step.written_action)
            report.outcomes[outcome] += 1
            report.repairs.update(parsed.repairs)
            report.examples.setdefault(outcome, []).append((step, parsed))
    return reports


def format_reports(reports: Reports) -> list[str]:
    lines = [f"{'trajectories':<28} {'steps':>6}  {'paper':>7}  {'robust':>7}  outcomes (paper | robust)"]
    for name, by_parser in reports.items():
        paper, robust = by_parser["paper"], by_parser["robust"]
        lines.append(
            f"{name:<28} {paper.steps:>6}  {paper.rate:>7.2%}  {robust.rate:>7.2%}  "
            f"{dict(paper.outcomes)} | {dict(robust.outcomes)}"
        )
        if robust.repairs:
            lines.append(f"{'':<28} robust repairs: {dict(robust.repairs.most_common())}")
    return lines


class _ParseRateSummary:
    """A plugin registered at run time, so the table shows without ``-s``."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.section("action parse rates on recorded trajectories")
        for line in self.lines:
            terminalreporter.write_line(line)


# --- fixtures and tests --------------------------------------------------------------------


def trajectory_files(data_file) -> dict[str, Path]:
    """The recorded runs (the authors' pinned files; the scratchpads, made from Reflexion's pickled
    runs, only where a prepared data folder holds them)."""
    files = {name: data_file(f"{TRAJECTORIES}/{name}") for name in (REFLEXION_LOG, FIREACT_GPT, FIREACT_LLAMA)}
    if DATA["kind"] == "prepared" and (pads := DATA["folder"] / TRAJECTORIES / REFLEXION_SCRATCHPADS).is_file():
        files[REFLEXION_SCRATCHPADS] = pads
    return files


@pytest.fixture(scope="session")
def trajectory_steps(data_file) -> dict[str, list[Step]]:
    files = trajectory_files(data_file)
    gpt, llama = read_fireact_gpt(files[FIREACT_GPT]), read_fireact_llama(files[FIREACT_LLAMA])
    pads = files.get(REFLEXION_SCRATCHPADS)
    return {
        "reflexion-davinci003 log": read_reflexion_log(files[REFLEXION_LOG]),
        **({"reflexion-davinci003 pads": read_reflexion_scratchpads(pads)} if pads else {}),
        "fireact-gpt35ft raw": gpt,
        "fireact-gpt35ft renumbered": [renumbered(step) for step in gpt],
        "fireact-llama2-13b raw": llama,
        "fireact-llama2-13b renumbered": [renumbered(step) for step in llama],
    }


@pytest.fixture(scope="session")
def reports(trajectory_steps: dict[str, list[Step]], pytestconfig: pytest.Config) -> Reports:
    result = {name: evaluate(steps) for name, steps in trajectory_steps.items()}
    manager = pytestconfig.pluginmanager
    if not manager.has_plugin("react-bench-parse-rates"):
        manager.register(_ParseRateSummary(format_reports(result)), "react-bench-parse-rates")
    return result


def test_readers_find_every_step(data_file, trajectory_steps: dict[str, list[Step]]) -> None:
    """Each reader yields one step per action the file records (counted independently)."""
    files = trajectory_files(data_file)
    log = files[REFLEXION_LOG].read_text(encoding="utf-8")
    gpt = json.loads(files[FIREACT_GPT].read_text(encoding="utf-8"))
    llama = json.loads(files[FIREACT_LLAMA].read_text(encoding="utf-8"))
    expected = {
        "reflexion-davinci003 log": len(re.findall(r"^Action \d+: ", log, re.MULTILINE)),
        "fireact-gpt35ft raw": sum(m["role"] == "assistant" for r in gpt.values() for m in r["traj"]),
        "fireact-llama2-13b raw": sum(r["traj"].count("\nObservation: ") for r in llama.values()),
    }
    if REFLEXION_SCRATCHPADS in files:
        pads = json.loads(files[REFLEXION_SCRATCHPADS].read_text(encoding="utf-8"))
        expected["reflexion-davinci003 pads"] = sum(
            len(re.findall(r"^Action \d+: ", p["scratchpad"], re.M)) for p in pads
        )
    for name, count in expected.items():
        assert count > 0
        assert len(trajectory_steps[name]) == count, name
    # each step's number follows the previous one within an episode
    for name, steps in trajectory_steps.items():
        for previous, step in zip(steps, steps[1:]):
            assert step.number == 1 or (step.episode == previous.episode and step.number == previous.number + 1), name


@pytest.mark.parametrize("name", ["reflexion-davinci003 log", "reflexion-davinci003 pads"])
def test_numbered_davinci_steps_parse_with_both_parsers(reports: Reports, name: str) -> None:
    if name not in reports:
        pytest.skip(
            f"needs {TRAJECTORIES}/{REFLEXION_SCRATCHPADS}: a prepared data folder's file (REACT_BENCH_DATA_DIR)"
        )
    paper, robust = reports[name]["paper"], reports[name]["robust"]
    # davinci-003 in the paper's own format: the paper's split never fails on it
    assert paper.rate == 1.0, paper.outcomes
    assert robust.rate == 1.0, robust.outcomes
    assert not robust.repairs, robust.repairs


@pytest.mark.parametrize("name", ["fireact-gpt35ft raw", "fireact-llama2-13b raw"])
def test_unnumbered_steps_need_the_reask_or_the_robust_parser(reports: Reports, name: str) -> None:
    paper, robust = reports[name]["paper"], reports[name]["robust"]
    assert set(paper.outcomes) == {"reask"}, paper.outcomes
    assert robust.rate >= 0.99, robust.outcomes
    assert robust.repairs["unnumbered_label"] == robust.steps - robust.outcomes["reask"]


@pytest.mark.parametrize("name", ["fireact-gpt35ft renumbered", "fireact-llama2-13b renumbered"])
def test_renumbered_steps(reports: Reports, name: str) -> None:
    paper, robust = reports[name]["paper"], reports[name]["robust"]
    assert paper.rate >= 0.98, paper.outcomes
    assert robust.rate >= 0.99, robust.outcomes
    assert robust.rate > paper.rate


def test_no_parser_ever_returns_a_wrong_action(reports: Reports) -> None:
    for name, by_parser in reports.items():
        for parser, report in by_parser.items():
            assert "wrong" not in report.outcomes, (name, parser, report.examples.get("wrong", [])[:3])
            assert "invalid" not in report.outcomes, (name, parser, report.examples.get("invalid", [])[:3])
        # the robust parser keeps one line: it never swallows what the model wrote next
        assert not {"extra_lines", "swallowed"} & set(by_parser["robust"].outcomes), name


def test_robust_parser_never_does_worse_than_the_paper(reports: Reports) -> None:
    for name, by_parser in reports.items():
        agreed = {"executed", "invalid_as_written"}
        paper_ok = {id(s) for o in agreed for s, _ in by_parser["paper"].examples.get(o, [])}
        robust_ok = {id(s) for o in agreed for s, _ in by_parser["robust"].examples.get(o, [])}
        assert paper_ok <= robust_ok, name


def test_paper_failures_are_reask_cases(reports: Reports) -> None:
    """Where the paper's split fails, its fallback thought is one non-empty line (the re-ask
    prompt is well formed) and the completion deviates from the format in a way the robust
    parser names. Where the paper keeps extra lines, the model wrote more after its action
    and the robust parser cut it."""
    for name, by_parser in reports.items():
        robust_by_step = {id(s): p for outcomes in by_parser["robust"].examples.values() for s, p in outcomes}
        for step, parsed in by_parser["paper"].examples.get("reask", []):
            assert parsed.thought.strip() and "\n" not in parsed.thought, (name, step)
            assert robust_by_step[id(step)].repairs, (name, step)
        extra = by_parser["paper"].examples.get("extra_lines", []) + by_parser["paper"].examples.get("swallowed", [])
        for step, _ in extra:
            repairs = set(robust_by_step[id(step)].repairs)
            assert repairs & {"trailing_text", "several_actions", "own_observation"}, (name, step)


def test_report_parse_rates(reports: Reports, record_property: pytest.RecordProperty) -> None:
    lines = format_reports(reports)
    print("\n".join(lines))
    for name, by_parser in reports.items():
        for parser, report in by_parser.items():
            record_property(f"{name} {parser} parse rate", f"{report.rate:.4f} of {report.steps}")
    # the printed table states each reader's step count and both parsers' rates, as computed
    for name, by_parser in reports.items():
        paper, robust = by_parser["paper"], by_parser["robust"]
        (row,) = [line for line in lines if line.startswith(f"{name} ")]
        cells = row[len(name) :].split()
        assert cells[:3] == [str(paper.steps), f"{paper.rate:.2%}", f"{robust.rate:.2%}"], row
