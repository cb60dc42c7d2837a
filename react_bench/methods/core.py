"""The shared solver, ``Method`` (what a method is to everything outside ``methods/``), and the
paper's prompting modes on the shared loop with the two combinations.

A ``ModeSpec`` says what a mode of parts is: the part that runs first, and the part that takes
over when the first gives no usable answer (the backoff). ``MODE_SPECS`` holds the paper's; each
becomes a ``Method`` (``METHODS``), and the base ``Method.solve`` runs the parts. ``Solver.solve``
asks the method; Reflexion, LATS and best-of-k solve in their own modules (``methods.registry``
finds them all).

| mode | first part | backoff part (when) |
| --- | --- | --- |
| ``standard`` | one call: exemplars of question -> answer | |
| ``cot`` | one call: exemplars with a reasoning line, answer after ``Answer:`` | |
| ``cot_sc`` | ``n`` CoT samples (paper: 21 at 0.7), majority vote on normalised answers | |
| ``act`` | actions and observations, no thoughts (tool-use runner: no thinking, a tool every turn) | |
| ``react`` | thoughts, actions, observations | |
| ``react_cot_sc`` | ReAct | CoT-SC, when ReAct gives no answer within the step cap |
| ``cot_sc_react`` | CoT-SC | ReAct, when the majority answer has fewer than n/2 votes |
| ``react_im`` | ReAct with Inner-Monologue-style thoughts (its own exemplars; ALFWorld, text runner) | |

Decisions written down:
- Every part runs through ``loop.run_episode``; the one-call parts are one-step episodes. An
  agent part resets a fresh environment with the example; the first observation is the
  policy's input (for Wikipedia the question itself). The solver knows no environment or task
  by name: it is given an environment factory and the task's text format.
- Parts without actions (standard, cot, cot_sc) send the text protocol under both runners:
  the runner only changes how actions are taken.
- Votes: empty answers do not vote; ties go to the answer seen first; the answer reported
  is the first raw sample of the winning group. Samples are sent at once (the first alone
  before them where the prompt cache is worth warming; batch rounds: all in one round); the
  recorder keeps each call's place in the order it was asked, which is the order a replay
  serves, and events are told in sample order. Every sample is kept, so accuracy at k = 1..n
  can be computed from one pool (the paper's Figure 2). Each sample has its own
  ``sample_index`` (cache key).
- ReAct -> CoT-SC backs off when the episode hit the cap or finished with an empty answer,
  never after a model error. (``on_limit=backoff`` on the command line is this mode.)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, assert_never, cast, get_args

from react_bench.context import ContextConfig, ContextView, SubagentEnv
from react_bench.environment import EnvFactory, Environment, EpisodeAbort, Example
from react_bench.errors import ConfigError, settings_of
from react_bench.events import (
    DELTAS,
    AgentEvent,
    event_to_dict,
)
from react_bench.loop import EpisodeResult, LoopConfig, PolicyError, run_episode, run_to_end
from react_bench.methods.pricing import Estimate, Pricing, parts_estimate, parts_rounds
from react_bench.metrics import normalize_answer
from react_bench.models.base import ModelClient, ModelRequest, ThinkingConfig, ToolSpec
from react_bench.prompts import PromptSpec
from react_bench.record import Episode, Score, Vote
from react_bench.runners.common import Completion, Sampling, StepStats, complete_text
from react_bench.runners.formats import NumberedFormat, TextFormat, bracket_grammar
from react_bench.runners.parsing import ParserName
from react_bench.runners.text import AnswerPolicy, TextPolicy
from react_bench.runners.tool_use import ToolUsePolicy
from react_bench.types import Message, ToolResultBlock, Usage, message_to_dict

Part = Literal["standard", "cot", "cot_sc", "act", "react"]
Runner = Literal["text", "tool_use"]
RUNNERS: tuple[str, ...] = get_args(Runner)
EventSink = Callable[[AgentEvent], None]


@dataclass(frozen=True)
class ModeSpec:
    """What a mode runs: ``first``, then ``backoff`` when ``first`` gives no usable answer."""

    first: Part
    backoff: Part | None = None
    prompt: str | None = None  # the text runner's prompt key for the first part, in place of its own
    tasks: tuple[str, ...] = ()  # the only tasks it runs on (); () every task
    text_only: str | None = None  # why it runs on the text runner only (None: both runners)

    def check(self, name: str, task: str, runner: Runner) -> None:
        """A mode defined for some tasks or one runner only: a clear ConfigError elsewhere."""
        if self.tasks and task not in self.tasks:
            raise ConfigError(f"mode={name} is defined for task={'|'.join(self.tasks)} only, not task={task}")
        if self.prompt is not None and runner != "text":
            raise ConfigError(f"mode={name} has text exemplars only; use runner=text")
        if self.text_only is not None and runner != "text":
            raise ConfigError(f"mode={name} {self.text_only}; use runner=text")

    @property
    def parts(self) -> tuple[Part, ...]:
        return (self.first,) if self.backoff is None else (self.first, self.backoff)

    @property
    def needs_env(self) -> bool:
        return any(part in ("act", "react") for part in self.parts)

    @property
    def needs_answers(self) -> bool:
        """Whether a part answers without acting (Standard, CoT, CoT-SC): only for tasks with answers."""
        return any(part in ("standard", "cot", "cot_sc") for part in self.parts)

    @property
    def samples(self) -> bool:
        """Whether the mode draws CoT-SC samples (at ``cot_sc_temperature``)."""
        return "cot_sc" in self.parts

    def prompt_keys(self, runner: Runner) -> tuple[str, ...]:
        """The prompt styles the mode loads (``prompts.load_prompt``), in the order they run."""
        return tuple(dict.fromkeys(self.key_of(part, runner) for part in self.parts))

    def key_of(self, part: Part, runner: Runner) -> str:
        """The prompt key ``part`` reads in this mode (the mode's own for its first part)."""
        if self.prompt is not None and part == self.first and runner == "text":
            return self.prompt
        return prompt_key(part, runner)


def prompt_key(part: Part, runner: Runner) -> str:
    match part:
        case "standard" | "cot":
            return part
        case "cot_sc":
            return "cot"
        case "act":
            return "tool_use_act" if runner == "tool_use" else "act"
        case "react":
            return "tool_use" if runner == "tool_use" else "react"
        case _:
            assert_never(part)


Mode = str  # a method's name: one the registry holds (``methods.registry``)
# The paper's modes and its Table 3 ablation: each a ``Method`` of its parts (``METHODS`` below).
# Reflexion, LATS and the methods after them are written in their own modules.
MODE_SPECS: dict[str, ModeSpec] = {
    "standard": ModeSpec("standard"),
    "cot": ModeSpec("cot"),
    "cot_sc": ModeSpec("cot_sc"),
    "act": ModeSpec("act"),
    "react": ModeSpec("react"),
    "react_cot_sc": ModeSpec("react", backoff="cot_sc"),
    "cot_sc_react": ModeSpec("cot_sc", backoff="react"),
    # the paper's Table 3 ablation: ReAct whose thoughts only decompose the goal and name the subgoal
    "react_im": ModeSpec("react", prompt="react_im", tasks=("alfworld",)),
}


@dataclass(frozen=True)
class SolveSettings:
    """How an example is solved. The defaults are the paper's protocol (``runconfig.PAPER`` reads
    them from here: each default is written once)."""

    mode: Mode = "react"
    runner: Runner = "text"
    parser: ParserName = "paper"
    loop: LoopConfig = LoopConfig()
    max_tokens: int = 100
    temperature: float | None = 0.0
    cot_sc_samples: int = 21
    cot_sc_temperature: float = 0.7
    thinking: ThinkingConfig | None = None
    tool_max_tokens: int = 1024
    shots: int | None = None  # tool-use runner: how many exemplars as native turns (None: all)
    context: ContextConfig = ContextConfig()  # what is sent of the history (context.py)
    # A method's own settings: an instance of its ``Method.settings_type`` (made whole by
    # ``Method.settle``), None where it has none. run.json and the fingerprint keep them under the
    # method's ``settings_key``.
    options: Any = None

    def __post_init__(self) -> None:
        if self.runner not in RUNNERS:
            raise ConfigError(f"unknown runner {self.runner!r}; one of {', '.join(RUNNERS)}")
        if self.cot_sc_samples < 1:
            raise ConfigError(f"cot_sc_samples={self.cot_sc_samples}: must be at least 1")


def majority_vote(answers: Sequence[str]) -> Vote:
    """Majority over normalised answers; empty answers abstain; ties go to the earliest."""
    groups: dict[str, list[int]] = {}
    for i, answer in enumerate(answers):
        key = normalize_answer(answer)
        if key:
            groups.setdefault(key, []).append(i)
    if not groups:
        return Vote("", 0, len(answers))
    best = max(groups.values(), key=lambda idx: (len(idx), -idx[0]))
    return Vote(answers[best[0]], len(best), len(answers))


@dataclass
class Outcome:
    """How one example was solved; ``route`` names the part that produced the answer."""

    prediction: str
    route: str
    reason: str
    steps: int
    usage: Usage
    error: str | None = None
    reward: float | None = None  # the environment's score of the episode, where it gives one
    backoff: bool = False
    samples: list[str] = field(default_factory=list)
    vote: Vote | None = None
    episodes: list[Episode] = field(default_factory=list)
    stats: StepStats = field(default_factory=StepStats)
    halted: str | None = None  # what a ``halting`` wrapper said when it ended the episode (Solver.agent)
    extra: dict[str, Any] | None = None  # what a method adds to the record (ExampleRecord.method), as JSON


Grade = Callable[[Example, Outcome], bool]  # the task's own score of an outcome: right or not


def wants_backoff(part: Part, outcome: Outcome) -> bool:
    """Whether ``outcome`` of ``part`` is handed to the mode's backoff part."""
    match part:
        case "act" | "react":
            return outcome.reason not in ("error", "done", "refused") and not outcome.prediction.strip()
        case "cot_sc":
            assert outcome.vote is not None
            return outcome.vote.count < outcome.vote.total / 2
        case "standard" | "cot":
            return False
        case _:
            assert_never(part)


@dataclass(frozen=True)
class Curve:
    """A method's score after each round of its own (``Method.curve``): ``unit`` names the round
    ("trial"), ``points`` the share right after each with its interval; ``said`` marks the run
    ("oracle feedback"); ``columns``, what the learning-curve table shows beside each point."""

    unit: str
    points: tuple[Score, ...]
    said: str = ""
    columns: Mapping[str, str] = field(default_factory=dict)


class Costing:
    """How a method is priced (the dry run and the budget: ``estimate``, ``calls_at_most``,
    ``expected_said``) and batched (``rounds``), apart from how it solves: neither side needs the
    other's hooks. This base prices a mode of parts (``pricing.parts_estimate``, every episode to its
    cap); a method that solves its own way gives its own (``Method.costing``), and the registry
    refuses one that does not."""

    def estimate(self, solver: Solver, question: str, pricing: Pricing) -> Estimate:
        """One example's calls and tokens as the dry run and the budget price them."""
        return parts_estimate(solver, question, pricing)

    def calls_at_most(self, solver: Solver) -> int | None:
        """The most calls an example can make where ``estimate`` gives an expected figure below it;
        None where ``estimate`` is already the most (every episode to its cap)."""
        return None

    def expected_said(self, solver: Solver) -> str:
        """Where ``calls_at_most`` gives a most: how the expected figure was reckoned, in a few words."""
        return "each simulation to half the depth cap, in every iteration"

    def rounds(self, solver: Solver) -> int:
        """``batch=true``: the most rounds an example can take, its calls one after another."""
        return parts_rounds(solver)


PARTS_COSTING = Costing()  # a mode of parts' price and rounds


@dataclass(frozen=True)
class Method:
    """One method as everything outside ``methods/`` sees it; ``methods.registry`` holds them by name.

    The base is a mode of parts (``spec``: the first part, then the backoff), which is what the
    paper's seven modes and ReAct-IM are. A method of its own subclasses it in its own module and
    declares what it owns once: its settings (``settings_type``, read by ``parse``, made whole by
    ``settle``), its summary (``summary_type``, made by ``summarize``), its price and batch rounds
    (``costing``, apart from how it solves), its prompts (``extra_prompts``), how it solves an
    example (``solve``; what it adds to the record is its ``Outcome.extra``), what the run's table,
    the studies and the trajectory view show of it (``table_rows``, ``cell_note``, ``curve``,
    ``record_html``) and its authors' figures (``published``). The run, the record, the console,
    the studies and the dry run ask these; none of them names a method or its types.
    """

    name: str
    spec: ModeSpec
    about: str = ""  # one line: what it runs (eval.py --help, docs)
    # the figures its authors published, by task, as Table 1 shows them beside a run of it
    published: Mapping[str, str] = field(default_factory=dict)
    published_by: str = ""  # whose figures those are: Table 1's column ("LATS paper")
    distributable: bool = True  # whether executor=ray runs it (its state lives in the example alone)
    # its settings: a frozen dataclass whose defaults are the only place they are written (None: it
    # takes none). ``SolveSettings.options`` holds one; ``settings_key`` says where they are read
    # and kept: "options" reads them from its ``mode`` group (``mode.k=10``), and run.json and the
    # fingerprint keep them under "options"; another key is an eval.yaml section of that name
    # (Reflexion's ``reflexion.*``, LATS's ``lats.*``, as their runs have always kept them).
    settings_type: type | None = None
    settings_key: str = "options"
    # its summary (``RunMetrics.method``, as JSON): a class with ``to_dict`` and ``from_dict``
    summary_type: type | None = None
    # the keys its ``mode`` group takes where it has no ``settings_type`` (a plugin's plain node)
    mode_defaults: Mapping[str, Any] = field(default_factory=dict)
    # how it is priced and batched; None: as its parts, which only a mode of parts may be (the
    # registry refuses a method with its own ``solve`` and no costing)
    costing: Costing | None = None

    @property
    def of_parts(self) -> bool:
        """Whether it is a mode of parts as the base solves it (no solving of its own)."""
        return type(self).solve is Method.solve

    @property
    def price(self) -> Costing:
        """Its price and batch rounds (``costing``; a mode of parts': its parts')."""
        return self.costing if self.costing is not None else PARTS_COSTING

    def mode_node(self) -> dict[str, Any]:
        """Its ``mode`` group node: its name, and its settings' defaults where the group holds them
        (``configs/mode/<name>.yaml`` is held to this by a test; an installed method's node is put in
        Hydra's ConfigStore from it)."""
        node: dict[str, Any] = {"name": self.name}
        if self.settings_type is not None and self.settings_key == "options":
            node.update({f.name: f.default for f in fields(self.settings_type)})
        else:
            node.update(self.mode_defaults)
        return node

    # --- settings ------------------------------------------------------------------------------
    def parse(self, cfg: Mapping[str, Any], protocol: Mapping[str, Any]) -> Any:
        """Its own settings from the composed config (``cfg``: eval.yaml's mapping, its ``mode`` group
        included) and the task's protocol for it: its ``settings_type`` from its keys (those of its
        ``mode`` group, or of its own section; a null takes the default), None where it has none."""
        self.check_group(cfg)
        if self.settings_type is None:
            return None
        group = cfg.get("mode") if self.settings_key == "options" else cfg.get(self.settings_key)
        values = {k: v for k, v in (group or {}).items() if k != "name" and v is not None}
        return settings_of(self.settings_type, values, "mode" if self.settings_key == "options" else self.settings_key)

    def check_group(self, cfg: Mapping[str, Any]) -> None:
        """A key of its ``mode`` group it does not take is a ConfigError naming those it takes."""
        takes = [k for k in self.mode_node() if k != "name"]
        extra = sorted(k for k in (cfg.get("mode") or {}) if k != "name" and k not in takes)
        if extra:
            said = f"takes mode.{', mode.'.join(takes)}" if takes else "takes no settings"
            raise ConfigError(f"mode={self.name} {said}; got mode.{', mode.'.join(extra)}")

    def settle(self, solve: SolveSettings, task: str, answers: bool, protocol: Mapping[str, Any]) -> SolveSettings:
        """``solve`` made whole for ``task`` (its defaults where it has none of its settings) and
        checked, once: every run's config passes here (``RunConfig``), whether composed or built
        in code."""
        self.spec.check(self.name, task, solve.runner)
        if self.settings_type is not None and solve.options is None:
            solve = replace(solve, options=self.parse({}, protocol))
        if self.settings_type is not None and not isinstance(solve.options, self.settings_type):
            wanted, given = self.settings_type.__name__, type(solve.options).__name__
            raise ConfigError(f"mode={self.name}: its settings are a {wanted}, not {given}")
        return solve

    def kept_settings(self, solve: dict[str, Any]) -> dict[str, Any]:
        """``solve`` (``SolveSettings`` as JSON) with its settings under ``settings_key``, where run.json
        and the fingerprint keep them; absent where it has none (as runs always had)."""
        solve = dict(solve)
        options = solve.pop("options", None)
        if options is not None:
            solve[self.settings_key] = options
        return solve

    def read_settings(self, solve: Mapping[str, Any]) -> Mapping[str, Any]:
        """Its settings as run.json keeps them (``solve``: run.json's), as JSON; {} where it has none."""
        kept = solve.get(self.settings_key)
        return kept if isinstance(kept, Mapping) else {}

    def fingerprinted(self, solve: dict[str, Any]) -> dict[str, Any]:
        """The solve settings as the run's fingerprint holds them (JSON): a setting added to the method
        after runs of it were made is left out at its default, so those runs keep their fingerprint
        (and resume)."""
        return solve

    def unlike(self, task: str, run: Mapping[str, Any]) -> list[str]:
        """Why its published figure on ``task`` is not like for like beside ``run`` (a row of a
        study's runs: ``oracle_feedback``, ``env``, ...); [] where nothing is known to differ."""
        return []

    def labels(self, solve: Mapping[str, Any]) -> dict[str, str]:
        """What a study's row says of a run of it beyond its name, from run.json's ``solve``
        (e.g. ``feedback``: ``oracle`` where the gold answer steered it)."""
        return {}

    def as_baseline(self, k: int, custom: bool) -> tuple[tuple[str, str], ...] | None:
        """Where it is one of the cheap baselines a costly method is shown beside (Kapoor et al., 2024:
        k samples voted on, or picked from), its settings at ``k`` (``react-bench search``'s
        ``search.baselines``); None where it is not one. CoT-SC alone: its samples at ``k``, where the
        protocol lets them change (``custom``)."""
        if self.of_parts and self.spec.first == "cot_sc" and self.spec.backoff is None:
            return (("cot_sc_samples", str(k)),) if custom else ()
        return None

    def judge(self, solve: SolveSettings) -> str | None:
        """A second model it calls, as a ``configs/model`` name (None: the run's model only)."""
        return None

    # --- prompts -------------------------------------------------------------------------------
    def extra_prompts(self, task: str) -> dict[str, PromptSpec]:
        """Prompts beyond its parts' (a reflection's, a value function's), by key; part of the
        fingerprint as the others."""
        return {}

    # --- solving -------------------------------------------------------------------------------
    async def solve(self, solver: Solver, example: Example, on_event: EventSink | None) -> Outcome:
        spec = self.spec
        first = await solver.part(spec.first, example, on_event)
        if spec.backoff is not None and wants_backoff(spec.first, first):
            second = await solver.part(spec.backoff, example, on_event)
            return _merge(first, second, f"{spec.first}->{spec.backoff}")
        return first

    def open_run(self, solver: Solver, run_dir: Path, kind: str) -> None:
        """A run of it starts in ``run_dir`` (``kind``: its cassette's, completions or responses):
        where it keeps files of its own (Reflexion's trial log)."""

    # --- the record ----------------------------------------------------------------------------
    def summarize(self, records: Sequence[Any], solve: Mapping[str, Any]) -> Any:
        """What it adds to a run's metrics (``RunMetrics.method``), from its records and run.json's
        ``solve``: an instance of its ``summary_type`` (or a plain mapping); None: nothing."""
        return None

    def summary_of(self, kept: Mapping[str, Any] | None) -> Any:
        """Its summary as metrics.json keeps it (``RunMetrics.method``), read as its ``summary_type``;
        the mapping itself where it has none; None where there is none."""
        if kept is None:
            return None
        return cast(Any, self.summary_type).from_dict(kept) if self.summary_type is not None else kept

    # --- what the run's table and the studies show of it ----------------------------------------
    def table_rows(self, summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """Its lines of the run's table (``results.format_table``: metric, value, what it means),
        from its summary (``RunMetrics.method``)."""
        return []

    def cell_note(self, summary: Mapping[str, Any]) -> str:
        """What a study's Table 1 cell says of a run of it beyond the score ("after 5 trials")."""
        return ""

    def curve(self, summary: Mapping[str, Any]) -> Curve | None:
        """Its score after each round of its own (Reflexion: each trial), for the studies' learning
        curves; None where it has none."""
        return None

    def record_html(self, method: Mapping[str, Any]) -> str:
        """What the trajectory view shows of an example's ``record.method`` beside its episodes
        (LATS: the search tree), as HTML; "" for nothing."""
        return ""


ABOUT = {
    "standard": "one call: exemplars of question -> answer",
    "cot": "one call: a reasoning line, then the answer",
    "cot_sc": "CoT samples (paper: 21 at 0.7), the majority answer",
    "act": "actions and observations, no thoughts",
    "react": "thoughts, actions, observations",
    "react_cot_sc": "ReAct; CoT-SC when it gives no answer within the step cap",
    "cot_sc_react": "CoT-SC; ReAct when the majority has fewer than n/2 votes",
    "react_im": "ReAct with Inner-Monologue-style thoughts (the paper's Table 3 ablation)",
}
METHODS = tuple(Method(name, spec, ABOUT[name]) for name, spec in MODE_SPECS.items())


def _as_example(example: Example | str) -> Example:
    return example if isinstance(example, Example) else Example("", example, "")


class Solver:
    """Solves one example in the configured mode; shared across examples of a run.

    ``env_factory`` makes one environment per agent episode (None: the mode must not act);
    ``text_format`` is the task's (``runners.formats``; default: the numbered ReAct format with
    plain ``name[argument]`` actions)."""

    def __init__(
        self,
        settings: SolveSettings,
        model: ModelClient,
        prompts: dict[str, PromptSpec],
        env_factory: EnvFactory | None,
        text_format: TextFormat | None = None,
        grade: Grade | None = None,
        judge: ModelClient | None = None,
        method: Method | None = None,
    ):
        if method is None:  # the paper's modes by name; any other method is given (methods.registry)
            if settings.mode not in MODE_SPECS:
                raise ConfigError(f"mode={settings.mode}: give its Method (methods.registry.get_method)")
            method = Method(settings.mode, MODE_SPECS[settings.mode])
        self.method = method
        self.settings = settings
        self.spec = method.spec
        self.model = model
        self.prompts = prompts
        self.env_factory = env_factory
        self.text_format: TextFormat = text_format if text_format is not None else NumberedFormat(bracket_grammar)
        self.grade = grade  # the task's score of an outcome (an oracle's verdict; Reflexion's `correct`)
        self.judge = judge if judge is not None else model  # a method's second model (Method.judge)
        self.run_state: dict[str, Any] = {}  # what a method keeps for the run (Method.open_run)
        # CoT-SC: the first sample alone, then the others at once, so that they read the prompt
        # cache the first one wrote; batch rounds send all of them in one round (False)
        self.first_sample_alone = True

    async def solve(self, example: Example | str, on_event: EventSink | None = None) -> Outcome:
        return await self.method.solve(self, _as_example(example), on_event)

    def probe_requests(self, question: str = "probe") -> list[ModelRequest]:
        """The first request of every kind this mode sends, built by the policies themselves
        (so what a model will not apply is asked of the requests really sent)."""
        example = Example("probe", question, "")
        requests = []
        for part in self.spec.parts:
            match part:
                case "standard" | "cot":
                    requests.append(self._answer_policy(question, part, self._sampling()).first_request())
                case "cot_sc":
                    requests.append(self._answer_policy(question, "cot", self._sampling(0)).first_request())
                case "act" | "react":
                    actions = self._new_env().actions() if self.env_factory is not None else ()
                    requests.append(self.agent_policy(example, question, part, actions, probe=True).first_request())
                case _:
                    assert_never(part)
        return requests

    async def part(self, part: Part, example: Example, on_event: EventSink | None) -> Outcome:
        match part:
            case "standard" | "cot":
                return await self._one_call(example.question, part, on_event, self._sampling())
            case "cot_sc":
                return await self._cot_sc(example.question, on_event)
            case "act" | "react":
                return await self.agent(example, part, on_event)
            case _:
                assert_never(part)

    def _sampling(self, sample_index: int | None = None) -> Sampling:
        s = self.settings
        if sample_index is None:
            return Sampling(s.max_tokens, s.temperature)
        return Sampling(s.max_tokens, s.cot_sc_temperature, sample_index=sample_index)

    def _answer_policy(self, question: str, style: Literal["cot", "standard"], sampling: Sampling) -> AnswerPolicy:
        return AnswerPolicy(self.model, self.prompts[style], question, self.text_format.label, style, sampling)

    def agent_policy(
        self,
        example: Example,
        first: str,
        style: Literal["react", "act"],
        actions: tuple[ToolSpec, ...],
        probe: bool = False,
        memory: str = "",
        sampling: Sampling | None = None,
    ) -> TextPolicy | ToolUsePolicy:
        s = self.settings
        sampling = sampling if sampling is not None else self._sampling()
        prompt = self.prompts[self.spec.key_of(style, s.runner)].for_example(example, probe)
        view = ContextView(s.context)
        if view.adds_actions:  # the instruction names the extra action
            prompt = replace(prompt, instruction=prompt.instruction + SubagentEnv.note(s.runner))
        # The step whose turn no later request reads is not written to the prompt cache: the cap's,
        # unless a text wrap-up follows (it repeats the prompt). The tool-use wrap-up cannot read it:
        # it changes tool_choice, and the API then drops the cached messages.
        last = None if s.runner == "text" and s.loop.on_limit == "wrap_up" else s.loop.max_steps
        if s.runner == "text":
            return TextPolicy(
                self.model,
                prompt,
                first,
                self.text_format,
                actions,
                style,
                s.parser,
                sampling,
                context=view,
                last_step=last,
                memory=memory,
            )
        return ToolUsePolicy(
            self.model,
            prompt,
            first,
            actions,
            self.text_format,
            style,
            s.thinking,
            s.tool_max_tokens,
            s.temperature,
            s.shots,
            context=view,
            last_step=last,
            memory=memory,
        )

    def replayed_request(self, example: Example, episode: Episode, step: int) -> ModelRequest:
        """The request the agent sent at ``step`` of a recorded episode, rebuilt from the record
        alone (the first observation, then the history of the steps before it), the whole history
        in view (``context=full``): a trajectory replayed into exactly what the model received."""
        if episode.first_observation is None:
            raise ValueError(f"episode {episode.route!r} of {example.id} was recorded without its first observation")
        if episode.route not in ("react", "act"):
            raise ValueError(f"route {episode.route!r} is not an agent episode (react or act)")
        env = self._new_env()
        try:
            actions = env.actions()
        finally:
            env.close()
        style: Literal["react", "act"] = "act" if episode.route == "act" else "react"
        policy = self.agent_policy(example, episode.first_observation, style, actions, memory=episode.memory)
        return policy.request_at(episode.messages()[: 2 * (step - 1)], step)

    def _new_env(self) -> Environment:
        if self.env_factory is None:
            raise ValueError(f"mode {self.settings.mode} needs an environment")
        return self.env_factory()

    async def _episode(self, policy: Any, env: Any, loop: LoopConfig, on_event: EventSink | None) -> EpisodeResult:
        history: list[Message] = []

        async def forwarded():
            async for event in run_episode(policy, env, loop, history):
                if on_event is not None:
                    on_event(event)
                yield event

        return await run_to_end(forwarded(), history)

    async def _one_call(
        self, question: str, style: Literal["cot", "standard"], on_event: EventSink | None, sampling: Sampling
    ) -> Outcome:
        policy = self._answer_policy(question, style, sampling)
        result = await self._episode(policy, _NoEnv(), LoopConfig(max_steps=1), on_event)
        return _outcome(result, style, policy.stats, question)  # no environment: the question is what it saw

    async def _cot_sc(self, question: str, on_event: EventSink | None) -> Outcome:
        """The samples are independent calls: sent at once (after the first, where it goes alone:
        ``first_sample_alone``), their events told in sample order once all are back, so a
        printed trajectory reads sample by sample. The rate limiter paces them like any calls."""
        n = self.settings.cot_sc_samples
        head = 1 if self.first_sample_alone else 0
        samples = [await self._one_call(question, "cot", on_event, self._sampling(k)) for k in range(head)]
        told: list[list[AgentEvent]] = [[] for _ in range(head, n)]
        samples += await asyncio.gather(
            *(
                self._one_call(question, "cot", None if on_event is None else told[i].append, self._sampling(k))
                for i, k in enumerate(range(head, n))
            )
        )
        if on_event is not None:
            for event in (e for events in told for e in events):
                on_event(event)
        answers = [s.prediction for s in samples]
        vote = majority_vote(answers)
        errors = [s.error for s in samples if s.error]
        stats = sum((s.stats for s in samples), StepStats())
        return Outcome(
            prediction=vote.answer,
            route="cot_sc",
            reason="error" if errors and len(errors) == len(samples) else "answered",
            steps=1,  # each sample is a one-step episode; `stats.calls` counts the samples
            usage=sum((s.usage for s in samples), Usage()),
            error=errors[0] if errors else None,
            samples=answers,
            vote=vote,
            episodes=[e for s in samples for e in s.episodes],
            stats=stats,
        )

    async def agent(
        self,
        example: Example,
        style: Literal["react", "act"],
        on_event: EventSink | None,
        memory: str = "",
        halting: Callable[[Environment], Any] | None = None,
        sampling: Sampling | None = None,
    ) -> Outcome:
        """One agent episode on a fresh environment: ``memory`` before the opening, ``halting``
        wrapping the environment (an object with ``halted``), ``sampling`` in place of the run's."""
        env: Environment = self._new_env()
        halt = None
        if halting is not None:
            env = halt = halting(env)
        subagent = None
        if ContextView(self.settings.context).adds_actions:
            env = subagent = SubagentEnv(env, self._inner_agent)
        try:
            try:
                first = await env.reset(example)
            except EpisodeAbort as exc:  # the environment cannot serve this example now: an error, re-runnable
                return Outcome("", style, "error", 0, Usage(), error=f"reset: {type(exc).__name__}: {exc}")
            policy = self.agent_policy(example, first.text, style, env.actions(), memory=memory, sampling=sampling)
            result = await self._episode(policy, env, self.settings.loop, on_event)
        finally:
            env.close()
        outcome = _outcome(result, style, policy.stats, first.text, memory)
        if halt is not None and halt.halted is not None:
            outcome.reason, outcome.halted = "halted", halt.halted
        if subagent is not None:  # the inner episodes are part of the example: trajectory, tokens, calls
            outcome.episodes += subagent.episodes
            outcome.usage = outcome.usage + subagent.usage
            outcome.stats.calls += subagent.calls
        return outcome

    async def text_call(
        self,
        model: ModelClient,
        parts: list[str],
        suffix: str,
        max_tokens: int,
        stats: StepStats,
        sampling: Sampling | None = None,
        stops: tuple[str, ...] = ("\n",),
    ) -> tuple[str, Usage]:
        """One text call outside the episode (a reflection, a judge's verdict, a LATS value): the
        completion up to ``stops`` (its first line), at ``sampling`` (the run's temperature)."""
        completion = None
        sampling = sampling if sampling is not None else Sampling(max_tokens, self.settings.temperature)
        async for item in complete_text(model, parts, suffix, stops, sampling, 0, stats):
            if isinstance(item, Completion):
                completion = item
        if completion is None:
            raise PolicyError(f"{suffix} call ended without a completion")
        return completion.text.strip(), completion.usage

    def transcript(self, episodes: Sequence[Episode]) -> str:
        """A trial as the reflection reads it: the opening, then each step as the task's text format
        writes it (the text runner: exactly what the model saw; tool use: thought, action,
        observation lines)."""
        out: list[str] = []
        for episode in episodes:
            out.append(self.text_format.opening(episode.first_observation or ""))
            if self.settings.runner == "text":
                messages = episode.messages()
                for k, (turn, results) in enumerate(zip(messages[0::2], messages[1::2], strict=False), start=1):
                    seen = "".join(b.content for b in results.content if isinstance(b, ToolResultBlock))
                    out.append(self.text_format.piece(k, turn.text, seen))
                if len(messages) % 2:
                    out.append(messages[-1].text + "\n")
                continue
            for step in episode.steps():
                if step.text.strip():
                    out.append(step.text.strip() + "\n")
                for a in step.actions:
                    said = a.text or action_text(a.name, a.arguments)
                    out.append(f"Action: {said}\n")
                    if a.observation is not None:
                        out.append(f"Observation: {a.observation}\n")
        return "".join(out)

    async def _inner_agent(self, question: str) -> Outcome:
        """A subagent's episode: ReAct with the whole history, its own step cap, a fresh env."""
        s = self.settings
        inner = Solver(
            replace(s, context=ContextConfig(), loop=LoopConfig(max_steps=s.context.inner_max_steps)),
            self.model,
            self.prompts,
            self.env_factory,
            self.text_format,
        )
        return await inner.agent(Example("subagent", question, ""), "react", None)


def action_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call written as a text action: ``look``, ``search[Ed Wood]``, ``f[{"a": 1, ...}]``."""
    if not arguments:
        return name
    if len(arguments) == 1:
        return f"{name}[{next(iter(arguments.values()))}]"
    return f"{name}[{json.dumps(dict(arguments), sort_keys=True)}]"


class _NoEnv:
    def actions(self):
        return ()

    async def reset(self, example):  # pragma: no cover - one-call policies never act
        raise AssertionError("this mode takes no actions")

    async def step(self, action):  # pragma: no cover - one-call policies never act
        raise AssertionError("this mode takes no actions")

    def close(self) -> None:
        pass


def _outcome(result: EpisodeResult, route: str, stats: StepStats, first_observation: str, memory: str = "") -> Outcome:
    episode = Episode(
        route=route,
        history=tuple(message_to_dict(m) for m in result.history),
        events=tuple(event_to_dict(e) for e in result.events if not isinstance(e, DELTAS)),
        first_observation=first_observation,
        memory=memory,
    )
    return Outcome(
        prediction=result.answer,
        route=route,
        reason=result.reason,
        steps=result.steps,
        usage=result.usage,
        error=result.error,
        reward=result.reward,
        episodes=[episode],
        stats=stats,
    )


def _merge(first: Outcome, second: Outcome, route: str) -> Outcome:
    """The backoff result: the second part's answer, both parts' costs and trajectories."""
    return Outcome(
        prediction=second.prediction,
        route=route,
        reason=second.reason,
        steps=first.steps + second.steps,
        usage=first.usage + second.usage,
        error=second.error,
        reward=second.reward,
        backoff=True,
        samples=first.samples or second.samples,
        vote=first.vote or second.vote,
        episodes=first.episodes + second.episodes,
        stats=first.stats + second.stats,
    )
