"""Language Agent Tree Search (Zhou et al., ICML 2024) on the shared harness: ``mode=lats``.

Monte Carlo tree search over ReAct steps. A node is a trajectory prefix: the root is the example's
opening, each child one more step (the model's turn, its action and the observation). An
iteration:

1. **Selection**: from the root, the child of highest UCT (``value + w * sqrt(ln N / n)``) among
   those not terminal, down to a node not yet expanded. A node whose children are all terminal
   is exhausted and is not chosen again; the search ends when the root is.
2. **Expansion**: ``n`` samples of the next step at ``temperature`` (one ReAct request each, sent at
   once: live concurrently, under ``batch=true`` in one round); identical (thought, action) pairs
   are kept once. Each child's action runs in the environment.
3. **Evaluation**: the model as value function scores each new non-terminal child from 1 to 10
   (``prompts/lats.json``: the project's own instruction and exemplars), divided by 10; with
   ``sc_weight`` > 0 the share of the samples that proposed the child's action is mixed in
   (the paper's self-consistency term). A terminal child's value is its reward.
4. **Simulation**: from the best new child, expand and evaluate again, always following the best
   child, until a terminal node or the depth cap (the run's step cap, ``max_steps``): a terminal
   node gives its reward, the cap gives -1.
5. **Backpropagation**: every node on the path counts a visit and folds the reward into its
   running mean (a failed terminal node takes -1, as LATS's code does).
6. **Reflection**: a failed terminal trajectory gets a reflection (``prompts/reflexion.json``, as
   Reflexion's), until ``reflections`` are written; the reflections go before the opening of
   every later expansion and value request.

The search stops at a terminal node whose reward is 1 (a success), or after ``iterations``. Each
iteration is told to the run's sinks (``events.SearchIteration``: the bar, the printer), and each
expansion as a ``StepStarted`` of the depth it expands. The
answer is that success, else the terminal node of the highest reward (then value), else none.
Every node the search made is attached to the tree (LATS's code builds the simulation's nodes
without attaching them to their parent; here they are the parent's children, so a node is
expanded once and the record holds every node that cost a call).

Selection (``lats.select``), what chooses the answer among finished nodes:
- ``reward`` (the default, LATS's code): the best-rewarded finished node. Where the environment
  scores a trajectory (WebShop, ALFWorld) that reward is computed against the hidden goal, so the
  answer is chosen the way an oracle would choose it; the record (``tree.selected_by``), the
  metrics (``lats.reward_selected``), Table 1 and the frontier say so.
- ``value``: a finished node's reward is the value function's score, as on a task whose
  environment gives none; the environment's reward is measured (the chosen node's is the
  example's score) but neither steers the search, stops it, nor reaches a reflection.

Feedback (``lats.feedback``), what a terminal node's reward is:
- ``honest`` (the default): the environment's own reward where it gives one (WebShop's score,
  ALFWorld's win), else the value function's score of the finished trajectory. No gold answer
  is read.
- ``oracle``: the task's own score against the gold answer (HotpotQA exact match, FEVER the
  label): LATS's HotpotQA setting, which stops the search on the right answer. The run, its
  metrics and every table that shows it say **oracle feedback**, as Reflexion's do.

Environment state by replay: every environment of the project is deterministic given its
actions, so a node's environment is a fresh one reset with the example and the node's actions
replayed. The last few environments stepped are kept live by their path (``Replayer``), so a
simulation that goes on from the child just made costs no replay. The record counts resets,
replayed steps and their time (``tree.stats``).

Settings and where they come from (github lapisrocks/LanguageAgentTreeSearch, ``hotpot/lats.sh``,
``hotpot/lats.py``, ``webshop/lats.sh``): ``n`` 5 (``--n_generate_sample 5``), ``iterations`` 30
(``--iterations 30``), ``temperature`` 1.0 (``--temperature 1.0``, also for the value calls),
``value_samples`` 1 (``--n_evaluate_sample 1``), the depth cap 7 on HotpotQA (``expand_node``:
``depth >= 7`` is terminal; here the run's ``max_steps``, which is 7 there), at most 3
reflections (written while fewer than 4 distinct failed trajectories exist), exploration
``sqrt(2)`` (their ``sqrt(2 * ln N / n)``; their code also divides the running mean by the
visits once more, which is not done here), ``sc_weight`` 0 (the released code leaves the
self-consistency term out; the paper's ``lambda`` is ``1 - sc_weight``). The simulation depth is
the step cap (their HotpotQA code stops simulations at depth 4, WebShop's at 15).

``lats.protocol=official`` runs their code's search instead, its prompts and quirks included
(HotpotQA: ``lats_official.py``; WebShop: ``lats_official_webshop.py``); this module's search is
``lats.protocol=project``, the default.
"""

from __future__ import annotations

import asyncio
import html
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, NamedTuple, get_args

from react_bench.environment import Action, EnvFactory, Environment, EpisodeAbort, Example, Observation
from react_bench.errors import ConfigError, settings_of
from react_bench.events import (
    DELTAS,
    AgentEvent,
    EpisodeFinished,
    StepFinished,
    StepStarted,
    announce,
    event_to_dict,
)
from react_bench.loop import Decision, ToolCall, execute_all
from react_bench.methods.core import Costing, EventSink, Method, ModeSpec, Outcome, Solver, SolveSettings
from react_bench.methods.lats_official import (
    is_webshop,
    official_estimate,
    official_most,
    search_iteration,
    solve_official,
)
from react_bench.methods.lats_official_webshop import solve_webshop, webshop_estimate, webshop_most
from react_bench.methods.pricing import (
    OBSERVATION_TOKENS,
    Estimate,
    Pricing,
    shared_prefix_tokens,
    step_growth,
    text_call_usage,
    times,
)
from react_bench.methods.reflexion import memory_text, reflection_parts, reflection_prompt
from react_bench.models.base import ModelError, ToolSpec
from react_bench.models.cache import estimate_input_tokens
from react_bench.models.collector import StreamProtocolError
from react_bench.prompts import PromptSpec, task_exemplars
from react_bench.record import Episode
from react_bench.runners.common import Sampling, StepStats
from react_bench.runners.text import TextPolicy
from react_bench.settings import default
from react_bench.types import Message, ToolResultBlock, Usage, message_to_dict

Feedback = Literal["honest", "oracle"]
FEEDBACKS: tuple[str, ...] = get_args(Feedback)
Select = Literal["reward", "value"]
SELECTS: tuple[str, ...] = get_args(Select)
Protocol = Literal["project", "official"]
PROTOCOLS: tuple[str, ...] = get_args(Protocol)
# what lats.protocol=official reads (lats_official.py); any other lats.* setting changed is refused there
OFFICIAL_READS = ("protocol", "n", "iterations", "temperature", "value_samples", "feedback", "select")
OFFICIAL_TASKS = ("hotpotqa", "webshop")  # the tasks LATS's code has (lats_official.py, lats_official_webshop.py)
# LATS's published figures for what mode=lats runs, LATS (ReAct) (Zhou et al., ICML 2024, arXiv
# 2310.04406 v3), gpt-3.5. HotpotQA: 0.63 at k=50 (0.61 in v2), with the gold answer's EM as the
# terminal reward (oracle feedback); 0.71 is LATS (CoT+ReAct), a variant the official code lacks.
LATS_PAPER: dict[str, str] = {
    "hotpotqa": "LATS (ReAct) EM 63 (k=50, oracle feedback: the gold answer ended the search; 100 questions, gpt-3.5)",
    "webshop": "score 75.9 / SR 38 (k=30, 50 instructions, gpt-3.5)",
}


# What LATS's published figures were made with, beyond the figure: whether the gold answer was the
# terminal reward (oracle feedback), and the data where a run here may use other data
LATS_CONDITIONS: dict[str, tuple[bool, str | None]] = {
    "hotpotqa": (True, None),
    "webshop": (False, "WebShop's own catalog"),
}


def unlike_lats_runs(task: str, run: Mapping[str, Any]) -> list[str]:
    """What differs between ``run`` and the runs behind LATS's tables (its search and its baselines):
    the data (WebShop's own catalog) and the model (gpt-3.5)."""
    said = []
    _, data = LATS_CONDITIONS.get(task, (None, None))
    if data is not None and not (run.get("env") or {}).get("url"):
        said.append(f"this run's shop is the project's generated catalog, not {data}")
    if task == "hotpotqa" and run.get("split") not in (None, "lats100"):
        said.append("this run's questions are not LATS's (the first 100 of HotpotQA's train split: split=lats100)")
    model = str(run.get("model") or "")
    if model and "gpt-3.5" not in model:
        said.append(f"{model}, not gpt-3.5")
    return said


@dataclass(frozen=True)
class LatsConfig:
    """``lats.*``: the search's size and its feedback (module docstring: where each comes from)."""

    n: int = default("lats.n")
    iterations: int = default("lats.iterations")
    exploration: float = default("lats.exploration")
    temperature: float = default("lats.temperature")
    value_samples: int = default("lats.value_samples")
    sc_weight: float = default("lats.sc_weight")
    reflections: int = default("lats.reflections")
    feedback: Feedback = default("lats.feedback")
    select: Select = default("lats.select")
    value_max_tokens: int = default("lats.value_max_tokens")
    reflection_max_tokens: int = default("lats.reflection_max_tokens")
    live_envs: int = default("lats.live_envs")
    protocol: Protocol = default("lats.protocol")

    @staticmethod
    def from_mapping(values: Mapping[str, Any]) -> LatsConfig:
        return settings_of(LatsConfig, {k: v for k, v in values.items() if v is not None}, "lats")

    def __post_init__(self) -> None:
        for name in ("n", "iterations", "value_samples", "value_max_tokens", "reflection_max_tokens", "live_envs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"lats.{name}={value!r}: a whole number, at least 1")
        if isinstance(self.reflections, bool) or not isinstance(self.reflections, int) or self.reflections < 0:
            raise ConfigError(f"lats.reflections={self.reflections!r}: a whole number, 0 or more")
        if not 0.0 <= float(self.sc_weight) <= 1.0:
            raise ConfigError(f"lats.sc_weight={self.sc_weight!r}: between 0 and 1")
        if float(self.exploration) < 0 or float(self.temperature) < 0:
            raise ConfigError("lats.exploration and lats.temperature: 0 or more")
        if self.feedback not in FEEDBACKS:
            raise ConfigError(f"lats.feedback={self.feedback!r}: one of {', '.join(FEEDBACKS)}")
        if self.select not in SELECTS:
            raise ConfigError(f"lats.select={self.select!r}: one of {', '.join(SELECTS)}")
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"lats.protocol={self.protocol!r}: one of {', '.join(PROTOCOLS)}")
        if self.select == "value" and self.feedback == "oracle":
            raise ConfigError(
                "lats.select=value with lats.feedback=oracle: the gold answer rewards every finished node; "
                "select=value leaves the choice to the value function (use lats.feedback=honest)"
            )

    def checked(self, task: str, answers: bool) -> LatsConfig:
        if self.protocol == "official":
            return self._official(task)
        if self.feedback == "oracle" and not answers:
            raise ConfigError(
                f"lats.feedback=oracle: task={task} has no reference answers; its environment's reward is the "
                "honest feedback (lats.feedback=honest)"
            )
        return self

    def _official(self, task: str) -> LatsConfig:
        """``lats.protocol=official``: LATS's code on HotpotQA, whose reward is the gold answer's exact
        match (oracle feedback, set here), or on WebShop, whose reward is the shop's score (the honest
        feedback, chosen by: oracle-like); it reads no other ``lats.*`` setting."""
        if task not in OFFICIAL_TASKS:
            raise ConfigError(
                f"lats.protocol=official is LATS's code for {' and '.join(OFFICIAL_TASKS)} (lats_official.py); "
                f"task={task} runs lats.protocol=project"
            )
        if self.select == "value":
            raise ConfigError("lats.protocol=official chooses by reward, as LATS's code does; drop lats.select=value")
        changed = [
            f"lats.{name}"
            for name in self.__dataclass_fields__
            if name not in OFFICIAL_READS and getattr(self, name) != getattr(LatsConfig(), name)
        ]
        if changed:
            raise ConfigError(
                f"lats.protocol=official has fixed values where this run sets {', '.join(changed)} "
                "(docs/decisions.md: LATS's official protocol); drop them or use lats.protocol=project"
            )
        return replace(self, feedback="oracle" if task == "hotpotqa" else "honest")

    @property
    def oracle_feedback(self) -> bool:
        return self.feedback == "oracle"


def value_prompt(task: str) -> PromptSpec:
    """The value function's prompt of ``task``: the instruction and the project's own exemplars."""
    return task_exemplars("lats", task, "lats")


VALUE_SUFFIX = "Assessment:"
_NUMBER = re.compile(r"(?<!\d)\d{1,2}(?!\d)")  # linear: no nested repeats (tests/test_hostile_input.py)


def parse_value(text: str) -> float | None:
    """A value reply's score, 1..10 divided by 10: the number right after its last "score"
    (``Score: 7`` -> 0.7, "the correctness score is 3" -> 0.3). None when there is no "score", no
    number after it, or one outside 1..10 (a reply cut at the token cap or the stop): it counts as
    unparsed (LATS's code then takes -1), never read from a stray number elsewhere in the text."""
    at = text.lower().rfind("score")
    if at < 0:
        return None
    first = _NUMBER.search(text, at)
    value = int(first.group()) if first is not None else 0
    return value / 10 if 1 <= value <= 10 else None


def value_parts(prompt: PromptSpec, trajectory: str, failed: Sequence[tuple[str, str]]) -> list[str]:
    """The value request's text: instruction and exemplars, the failed trajectories with their
    reflections (LATS's value prompt shows them, scored low), then the trajectory to score."""
    parts = [f"{prompt.instruction}{prompt.exemplars}"]
    if failed:
        shown = "".join(
            f"Trajectory:\n{text.strip()}\nAssessment: This attempt failed. {reflection.strip()}\nScore: 1\n\n"
            for text, reflection in failed
        )
        parts.append(f"Earlier attempts at this task that failed:\n\n{shown}")
    parts.append(f"Trajectory:\n{trajectory.strip()}\n")
    return parts


# --- the tree ------------------------------------------------------------------------------------


@dataclass
class Node:
    id: int
    parent: Node | None
    depth: int
    turn: Message | None = None  # the model's turn that made it (None: the root)
    action: Action | None = None
    observation: str = ""
    is_error: bool = False  # the environment answered the action as an error
    events: list[dict[str, Any]] = field(default_factory=list)  # the step's events as the record holds them
    children: list[Node] = field(default_factory=list)
    expanded: bool = False
    exhausted: bool = False
    terminal: bool = False
    answer: str | None = None  # an answer action's answer (Wikipedia's finish)
    env_reward: float | None = None  # the environment's own reward, where it gave one
    reward: float | None = None  # a terminal node's reward under the run's feedback
    value: float = 0.0
    lm_value: float | None = None  # the value function's score (None: not asked)
    sc_value: float | None = None
    visits: int = 0
    reflection: str | None = None
    usage: Usage = Usage()

    def path(self) -> list[Node]:
        nodes, node = [], self
        while node is not None and node.parent is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]

    def actions(self) -> tuple[Action, ...]:
        return tuple(n.action for n in self.path() if n.action is not None)

    def history(self) -> list[Message]:
        out: list[Message] = []
        for n in self.path():
            assert n.turn is not None
            out.append(n.turn)
            out.append(Message("user", (ToolResultBlock(f"step-{n.depth}", n.observation, n.is_error),)))
        return out

    def uct(self, exploration: float) -> float:
        if self.visits == 0 or self.parent is None or self.parent.visits == 0:
            return self.value
        return self.value + exploration * math.sqrt(math.log(self.parent.visits) / self.visits)

    def success(self) -> bool:
        return self.terminal and (self.reward or 0.0) >= 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "parent": None if self.parent is None else self.parent.id,
            "depth": self.depth,
            "text": "" if self.turn is None else self.turn.text,
            "action": None if self.action is None else as_written(self.action),
            "observation": self.observation,
            "children": [c.id for c in self.children],
            "value": round(self.value, 6),
            "lm_value": self.lm_value,
            "sc_value": self.sc_value,
            "visits": self.visits,
            "terminal": self.terminal,
            "answer": self.answer,
            "reward": self.reward,
            "env_reward": self.env_reward,
        }
        if self.reflection is not None:
            out["reflection"] = self.reflection
        if self.exhausted:
            out["exhausted"] = True
        return out


@dataclass
class ReplayStats:
    resets: int = 0
    replayed_steps: int = 0
    new_steps: int = 0
    reused: int = 0  # a live environment was at the node already: no replay
    replay_s: float = 0.0


class Replayer:
    """Environments at a node's state: a fresh one reset with the example and the node's actions
    replayed, unless one of the last ``keep`` stepped is at that node already."""

    def __init__(self, factory: Callable[[], Environment], example: Example, keep: int) -> None:
        self.factory, self.example, self.keep = factory, example, keep
        self.live: OrderedDict[tuple[int, ...], Environment] = OrderedDict()
        self.stats = ReplayStats()

    async def reset(self) -> Observation:
        """The example's first observation; the environment it came from is kept at the root."""
        env = self.factory()
        self.stats.resets += 1
        try:
            first = await env.reset(self.example)
        except BaseException:
            env.close()
            raise
        self._keep((), env)
        return first

    def actions(self) -> Any:
        env = next(iter(self.live.values()), None)
        if env is not None:
            return env.actions()
        env = self.factory()
        try:
            return env.actions()
        finally:
            env.close()

    async def at(self, node: Node) -> Environment:
        key = tuple(n.id for n in node.path())
        env = self.live.pop(key, None)
        if env is not None:
            self.stats.reused += 1
            return env
        started = time.monotonic()
        env = self.factory()
        try:
            self.stats.resets += 1
            await env.reset(self.example)
            for action in node.actions():
                self.stats.replayed_steps += 1
                await env.step(action)
        except BaseException:
            env.close()
            raise
        self.stats.replay_s += time.monotonic() - started
        return env

    def give(self, node: Node, env: Environment) -> None:
        self._keep(tuple(n.id for n in node.path()), env)

    def _keep(self, key: tuple[int, ...], env: Environment) -> None:
        self.live[key] = env
        while len(self.live) > self.keep:
            _, old = self.live.popitem(last=False)
            old.close()

    def close(self) -> None:
        while self.live:
            _, env = self.live.popitem()
            env.close()


# --- the search ----------------------------------------------------------------------------------

TextCall = Callable[[list[str], str, tuple[str, ...], Sampling], Awaitable[tuple[str, Usage]]]
MakePolicy = Callable[[str, tuple[ToolSpec, ...], str], TextPolicy]


def as_written(action: Action | ToolCall | None) -> str:
    """An action as the model wrote it (the text runner's), else its name."""
    return "" if action is None else (action.text or action.name)


@dataclass
class SearchResult:
    """What the search gave: the chosen node's trajectory as an episode, its answer, the tree."""

    prediction: str
    reason: str
    steps: int
    reward: float | None
    usage: Usage
    episode: Episode | None
    tree: dict[str, Any]
    error: str | None = None


class TreeSearch:
    """One example's search. ``policy(first, actions, memory)`` is the ReAct text policy of the
    example (its first observation, the actions offered, the reflections as memory);
    ``text_call(parts, suffix, stops, sampling)`` one plain text call (the value function, a
    reflection); ``reflection(transcript, feedback)`` a reflection request's parts; ``grade(answer,
    reward)`` the task's score (oracle feedback only)."""

    def __init__(
        self,
        config: LatsConfig,
        max_depth: int,
        policy: MakePolicy,
        env_factory: EnvFactory,
        example: Example,
        text_call: TextCall,
        value_prompt: PromptSpec,
        reflection: Callable[[str, str], list[str]],
        memory: Callable[[Sequence[str]], str],
        grade: Callable[[str, float | None], bool] | None,
        on_event: Callable[[AgentEvent], None] | None = None,
    ) -> None:
        self.cfg, self.max_depth = config, max_depth
        self.policy, self.example = policy, example
        self.text_call, self.value_prompt = text_call, value_prompt
        self.reflection_parts, self.memory_text = reflection, memory
        self.grade, self.on_event = grade, on_event
        self.replayer = Replayer(env_factory, example, config.live_envs)
        self.nodes: list[Node] = []
        self.usage = Usage()
        self.reflections: list[str] = []
        self.failed: list[tuple[str, str, str]] = []  # (answer, trajectory text, reflection)
        self.iterations = 0
        self.value_calls = 0
        self.unparsed_values = 0
        self.first = ""
        self.actions: tuple[ToolSpec, ...] = ()

    def _tell(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def _node(self, parent: Node | None, **kw: Any) -> Node:
        node = Node(len(self.nodes), parent, 0 if parent is None else parent.depth + 1, **kw)
        self.nodes.append(node)
        return node

    async def run(self) -> SearchResult:
        try:
            try:
                first = await self.replayer.reset()
            except EpisodeAbort as exc:
                return self._result(None, error=f"reset: {type(exc).__name__}: {exc}")
            self.first = first.text
            self.actions = tuple(self.replayer.actions())
            root = self._node(None)
            try:
                found = await self._search(root)
            except (ModelError, StreamProtocolError) as exc:  # re-runnable: the request cache keeps what was paid
                return self._result(None, error=f"{type(exc).__name__}: {exc}")
            except EpisodeAbort as exc:
                return self._result(None, error=f"{type(exc).__name__}: {exc}")
            return self._result(found if found is not None else self._best())
        finally:
            self.replayer.close()

    async def _search(self, root: Node) -> Node | None:
        for _ in range(self.cfg.iterations):
            node = self._select(root)
            if node is None:
                break
            self.iterations += 1
            announce(self.on_event, search_iteration(self.iterations, self.cfg.iterations, len(self.nodes)))
            children = await self._expand(node)
            won = next((c for c in children if c.success()), None)
            if won is not None:
                self._backpropagate(won, 1.0)
                return won
            if not children:
                continue
            best = max(children, key=lambda c: c.value)
            end, reward = await self._simulate(best)
            self._backpropagate(end, reward)
            if end.success():
                return end
        return None

    def _select(self, root: Node) -> Node | None:
        """Down the UCT path to a node not yet expanded; None when every path is exhausted."""
        while not root.exhausted:
            node = root
            while node.expanded:
                open_children = [c for c in node.children if not c.terminal and not c.exhausted]
                if not open_children:
                    node.exhausted = True
                    break
                node = max(open_children, key=lambda c: c.uct(self.cfg.exploration))
            else:
                if node.depth >= self.max_depth:
                    node.terminal = node.exhausted = True
                    node.reward = -1.0
                    continue
                return node
        return None

    def _memory(self) -> str:
        return self.memory_text(self.reflections)

    async def _expand(self, node: Node) -> list[Node]:
        """``n`` samples of the next step (sent at once), one child per distinct (turn, action),
        each action run in the node's environment, the new children evaluated."""
        node.expanded = True
        if node.depth >= self.max_depth:
            node.terminal = True
            return []
        step = node.depth + 1
        self._tell(StepStarted(step))  # the bar: the depth being expanded
        history = node.history()
        memory = self._memory()
        base = self.policy(self.first, self.actions, memory)

        async def sample(k: int) -> tuple[Decision | None, list[dict[str, Any]]]:
            policy = replace(base, sampling=replace(base.sampling, temperature=self.cfg.temperature, sample_index=k))
            decision, events = None, []
            async for item in policy.decide(history, step):
                if isinstance(item, Decision):
                    decision = item
                elif not isinstance(item, DELTAS):
                    events.append(event_to_dict(item))
            return decision, events

        drawn = await asyncio.gather(*(sample(k) for k in range(self.cfg.n)))
        proposals: dict[str, int] = {}
        unique: dict[tuple[str, str], tuple[Decision, list[dict[str, Any]]]] = {}
        for decision, events in drawn:
            if decision is None:
                continue
            self.usage += decision.usage
            action = as_written(decision.calls[0] if decision.calls else None)
            proposals[action] = proposals.get(action, 0) + 1
            unique.setdefault((decision.message.text, action), (decision, events))
        children = []
        # in the order of their text, not of their arrival: samples are alike in all but their text,
        # and a search must not hang on which answer came back first (ties in value go to the first)
        for (_, _), (decision, events) in sorted(unique.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            children.append(await self._child(node, step, decision, events))
        node.children.extend(children)
        await self._evaluate(children, proposals)
        for child in children:
            if child.terminal and not child.success():
                await self._reflect(child)
        return children

    async def _child(self, node: Node, step: int, decision: Decision, events: list[dict[str, Any]]) -> Node:
        said = [event_to_dict(StepStarted(step)), *events]
        if not decision.calls:  # a turn without an action is its answer (the text runner always acts)
            child = self._node(node, turn=decision.message, terminal=True, answer=decision.answer, usage=decision.usage)
            child.events = [*said, event_to_dict(StepFinished(step, decision.usage))]
            return child
        call: ToolCall = decision.calls[0]
        env = await self.replayer.at(node)
        observations: dict[str, Observation] = {}
        try:
            async for event in execute_all(env, (call,), step, observations):
                said.append(event_to_dict(event))
        except BaseException:
            env.close()
            raise
        self.replayer.stats.new_steps += 1
        seen = observations[call.id]
        child = self._node(
            node,
            turn=decision.message,
            action=call.action(),
            observation=seen.text,
            is_error=seen.is_error,
            terminal=seen.ends,
            answer=seen.final_answer,
            env_reward=seen.reward,
            usage=decision.usage,
        )
        child.events = [*said, event_to_dict(StepFinished(step, decision.usage))]
        if child.terminal:
            env.close()  # nothing goes on from a terminal node
        else:
            self.replayer.give(child, env)
        return child

    def trajectory(self, node: Node) -> str:
        """A node's trajectory as the model reads it: the opening, then each step's piece."""
        policy = self.policy(self.first, self.actions, "")
        return policy.text_format.opening(self.first) + policy.scratchpad(node.history())

    async def _value(self, node: Node) -> float:
        """The value function's score of a node (mean over ``value_samples``), -1 when no reply names one."""
        parts = value_parts(
            self.value_prompt, self.trajectory(node), [(text, reflection) for _, text, reflection in self.failed]
        )
        scores = []
        for k in range(self.cfg.value_samples):
            sampling = Sampling(self.cfg.value_max_tokens, self.cfg.temperature, sample_index=k)
            said, used = await self.text_call(parts, VALUE_SUFFIX, ("\n\n",), sampling)
            self.usage += used
            self.value_calls += 1
            score = parse_value(said)
            if score is None:
                self.unparsed_values += 1
            scores.append(-1.0 if score is None else score)
        return sum(scores) / len(scores)

    async def _evaluate(self, children: list[Node], proposals: Mapping[str, int]) -> None:
        """Each new child's value: the value function's (and the self-consistency share) for an
        open one, the reward for a terminal one. The value calls go at once."""
        total = sum(proposals.values()) or 1

        async def one(child: Node) -> None:
            if child.terminal:
                child.reward = await self._reward(child)
                child.value = child.reward
                return
            child.lm_value = await self._value(child)
            child.sc_value = proposals.get(as_written(child.action), 0) / total
            w = self.cfg.sc_weight
            child.value = (1 - w) * child.lm_value + w * child.sc_value

        await asyncio.gather(*(one(c) for c in children))

    async def _reward(self, node: Node) -> float:
        """A terminal node's reward under the run's feedback and selection (module docstring)."""
        if self.cfg.feedback == "oracle":
            assert self.grade is not None
            return 1.0 if self.grade(node.answer or "", node.env_reward) else 0.0
        if node.env_reward is not None and self.cfg.select == "reward":
            return float(node.env_reward)
        node.lm_value = await self._value(node)
        return max(0.0, node.lm_value)

    async def _simulate(self, node: Node) -> tuple[Node, float]:
        """From ``node``, always the best new child, to a terminal node (its reward) or the cap (-1)."""
        while not node.terminal:
            if node.depth >= self.max_depth:
                return node, -1.0
            children = await self._expand(node)
            if not children:
                return node, -1.0
            ended = [c for c in children if c.terminal]
            if ended:
                end = max(ended, key=lambda c: c.reward or 0.0)
                return end, end.reward or 0.0
            node = max(children, key=lambda c: c.value)
        return node, node.reward or 0.0

    def _backpropagate(self, node: Node, reward: float) -> None:
        current: Node | None = node
        while current is not None:
            current.visits += 1
            folded = -1.0 if current.terminal and not current.success() else reward
            current.value = current.value + (folded - current.value) / current.visits
            current = current.parent

    async def _reflect(self, node: Node) -> None:
        """A reflection on a failed terminal trajectory, while fewer than ``reflections`` exist
        and the answer is one not reflected on yet."""
        answer = node.answer or (node.action.text if node.action is not None else "") or ""
        if len(self.reflections) >= self.cfg.reflections or any(a == answer for a, _, _ in self.failed):
            return
        text = self.trajectory(node)
        if self.cfg.feedback == "oracle":
            feedback = f"The answer {answer!r} is incorrect."
        elif node.env_reward is not None and self.cfg.select == "reward":  # (select=value: measured, never told)
            feedback = f"The environment scored this attempt {node.env_reward:g} out of 1."
        else:
            feedback = f"An evaluator scored this attempt {round(10 * (node.reward or 0.0))} out of 10."
        sampling = Sampling(self.cfg.reflection_max_tokens, 0.0)
        said, used = await self.text_call(self.reflection_parts(text, feedback), "Reflection:", ("\n",), sampling)
        self.usage += used
        node.reflection = said
        self.reflections.append(said)
        self.failed.append((answer, text, said))

    def _best(self) -> Node | None:
        ended = [
            n for n in self.nodes if n.terminal and n.parent is not None and n.reward is not None and n.reward >= 0
        ]
        if ended:
            return max(ended, key=lambda n: (n.reward or 0.0, n.value))
        return None

    def _selected_by(self, chosen: Node | None) -> str | None:
        """What chose the answer: the gold answer (oracle feedback), the environment's reward (scored
        against the hidden goal: oracle-like), or the value function; None where nothing was chosen."""
        if chosen is None:
            return None
        if self.cfg.feedback == "oracle":
            return "gold answer"
        return "environment reward" if self.cfg.select == "reward" and chosen.env_reward is not None else "value"

    def _result(self, chosen: Node | None, error: str | None = None) -> SearchResult:
        path = chosen.path() if chosen is not None else []
        episode = None
        reason = "error" if error is not None else "step_limit"
        prediction, reward = "", None
        if chosen is not None:
            if chosen.answer is not None:
                reason, prediction = "answered", chosen.answer
            elif chosen.env_reward is not None:
                reason = "done"
            reward = chosen.env_reward
            events = [e for n in path for e in n.events]
            events.append(
                event_to_dict(
                    EpisodeFinished(prediction, reason, len(path), sum((n.usage for n in path), Usage()), reward=reward)  # type: ignore[arg-type]
                )
            )
            episode = Episode(
                route="lats",
                history=tuple(message_to_dict(m) for m in chosen.history()),
                events=tuple(events),
                first_observation=self.first,
                memory=self.memory_text(self.reflections) if self.reflections else "",
            )
        tree = {
            "feedback": self.cfg.feedback,
            "select": self.cfg.select,
            "selected_by": self._selected_by(chosen),
            "nodes": [n.to_dict() for n in self.nodes],
            "chosen": [0, *(n.id for n in path)] if self.nodes else [],
            "reflections": list(self.reflections),
            "iterations": self.iterations,
            "value_calls": self.value_calls,
            "unparsed_values": self.unparsed_values,
            "stats": {
                "resets": self.replayer.stats.resets,
                "replayed_steps": self.replayer.stats.replayed_steps,
                "new_steps": self.replayer.stats.new_steps,
                "reused_envs": self.replayer.stats.reused,
                "replay_s": round(self.replayer.stats.replay_s, 4),
            },
        }
        return SearchResult(prediction, reason, len(path), reward, self.usage, episode, tree, error)


@dataclass(frozen=True)
class SearchSummary:
    """A LATS run's summary (``RunMetrics.method``): its feedback (``oracle_feedback``: the gold
    answer ended the search), and per example the nodes made, the iterations run and the calls."""

    feedback: str
    mean_nodes: float = 0.0
    mean_iterations: float = 0.0
    mean_calls: float = 0.0
    replayed_steps: int = 0  # environment steps spent rebuilding nodes' states, over all examples
    select: str = "reward"  # lats.select: what chooses the answer among finished nodes
    reward_selected: float = 0.0  # the share of examples whose answer the environment's reward chose
    protocol: str = "project"  # lats.protocol: the harness's search, or LATS's own code (official)

    @property
    def oracle_feedback(self) -> bool:
        return self.feedback == "oracle"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "oracle_feedback": self.oracle_feedback}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> SearchSummary:
        known = {f.name for f in fields(SearchSummary)}
        return SearchSummary(**{k: v for k, v in data.items() if k in known})


def tree_of(record: Any) -> Mapping[str, Any] | None:
    """An example record's search tree (``record.method["tree"]``); None for none."""
    tree = (record.method or {}).get("tree") if record.method is not None else None
    return tree if isinstance(tree, Mapping) else None


# --- the method ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lats(Method):
    """``mode=lats`` for the registry: its settings (``lats.*``), its search on the solver, its tree
    in the record and the summary, and its price (an expected search, and its most)."""

    def parse(self, cfg: Mapping[str, Any], protocol: Mapping[str, Any]) -> LatsConfig:
        self.check_group(cfg)
        return LatsConfig.from_mapping(cfg.get(self.settings_key) or {})

    def settle(self, solve: SolveSettings, task: str, answers: bool, protocol: Mapping[str, Any]) -> SolveSettings:
        solve = super().settle(solve, task, answers, protocol)
        return replace(solve, options=solve.options.checked(task, answers))

    def labels(self, solve: Mapping[str, Any]) -> dict[str, str]:
        return {"feedback": str(self.read_settings(solve).get("feedback") or "honest")}

    def fingerprinted(self, solve: dict[str, Any]) -> dict[str, Any]:
        """``lats.select`` came after runs of LATS: at its default (``reward``, what they did) it is
        left out, so they resume."""
        key = self.settings_key
        settings = dict(solve.get(key) or {})
        if settings.get("select") == "reward":
            del settings["select"]
        if settings.get("protocol") == "project":
            del settings["protocol"]
        return {**solve, key: settings} if key in solve else solve

    def unlike(self, task: str, run: Mapping[str, Any]) -> list[str]:
        """LATS's figures were made with the gold answer as the terminal reward on HotpotQA, on WebShop's
        own catalog, with gpt-3.5 (``LATS_CONDITIONS``)."""
        oracle, _ = LATS_CONDITIONS.get(task, (None, None))
        said = (
            ["this run's feedback is honest; LATS's was the gold answer"]
            if oracle and not run.get("oracle_feedback")
            else []
        )
        return said + unlike_lats_runs(task, run)

    def extra_prompts(self, task: str) -> dict[str, PromptSpec]:
        return {"reflexion": reflection_prompt(task), "lats": value_prompt(task)}

    async def solve(self, solver: Solver, example: Example, on_event: EventSink | None) -> Outcome:
        """LATS's search of one example (``TreeSearch``): the chosen trajectory is the example's
        episode, scored as a ReAct episode is; the tree goes in the record."""
        config: LatsConfig = solver.settings.options
        if config.protocol == "official":
            return await _port(solver).solve(solver, example, on_event)
        stats = StepStats()
        if solver.env_factory is None:
            raise ValueError("mode=lats needs an environment")

        def policy(first: str, actions: tuple[ToolSpec, ...], memory: str) -> TextPolicy:
            made = solver.agent_policy(example, first, "react", actions, memory=memory)
            assert isinstance(made, TextPolicy)  # ModeSpec.text_only: the text runner
            return replace(made, stats=stats)

        async def text_call(
            parts: list[str], suffix: str, stops: tuple[str, ...], sampling: Sampling
        ) -> tuple[str, Usage]:
            return await solver.text_call(solver.model, parts, suffix, sampling.max_tokens, stats, sampling, stops)

        grade = None
        if config.oracle_feedback:
            assert solver.grade is not None
            known = solver.grade

            def grade(answer: str, reward: float | None) -> bool:
                return known(example, Outcome(answer, "lats", "answered", 0, Usage(), reward=reward))

        search = TreeSearch(
            config,
            solver.settings.loop.max_steps,
            policy,
            solver.env_factory,
            example,
            text_call,
            solver.prompts["lats"],
            lambda transcript, feedback: reflection_parts(solver.prompts["reflexion"], transcript, feedback),
            memory_text,
            grade,
            on_event,
        )
        found = await search.run()
        return Outcome(
            prediction=found.prediction,
            route="lats",
            reason=found.reason,
            steps=found.steps,
            usage=found.usage,
            error=found.error,
            reward=found.reward,
            episodes=[found.episode] if found.episode is not None else [],
            stats=stats,
            extra=None if found.tree is None else {"tree": found.tree},
        )

    def summarize(self, records: Sequence[Any], solve: Mapping[str, Any]) -> SearchSummary:
        """The run's feedback and tree sizes (``SearchSummary``)."""
        searched = [(r, tree_of(r)) for r in records]
        trees = [t for _, t in searched if t is not None]
        n = len(trees) or 1
        settings = self.read_settings(solve)
        return SearchSummary(
            feedback=self.labels(solve)["feedback"],
            select=str(settings.get("select") or "reward"),
            reward_selected=sum(_selected_by(t) == "environment reward" for t in trees) / n,
            mean_nodes=sum(len(t.get("nodes") or ()) for t in trees) / n,
            mean_iterations=sum(int(t.get("iterations") or 0) for t in trees) / n,
            mean_calls=sum(r.calls for r, t in searched if t is not None) / n,
            replayed_steps=sum(int((t.get("stats") or {}).get("replayed_steps") or 0) for t in trees),
            protocol=str(settings.get("protocol") or "project"),
        )

    def table_rows(self, summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        """Its feedback, what chose the answers, the size of its trees."""
        s: SearchSummary = self.summary_of(summary)
        said = "ORACLE FEEDBACK: the gold answer ended each search" if s.oracle_feedback else "no gold answer read"
        chosen = (
            f"ORACLE-LIKE: the environment's reward chose the answer in {100 * s.reward_selected:.0f}% of examples"
            if s.reward_selected > 0
            else "no answer chosen by an environment's reward"
        )
        return [
            ("lats feedback", s.feedback, said),
            ("lats select", s.select, chosen),
            (
                "  nodes per example",
                f"{s.mean_nodes:.1f}",
                f"{s.mean_iterations:.1f} iterations, {s.mean_calls:.1f} calls",
            ),
        ]

    def record_html(self, method: Mapping[str, Any]) -> str:
        """The search behind the chosen trajectory (``tree_html``)."""
        tree = method.get("tree")
        return (
            f"<details><summary>search tree</summary>{tree_html(tree)}</details>" if isinstance(tree, Mapping) else ""
        )


class LatsCosting(Costing):
    """``mode=lats``'s price and batch rounds: an expected search, and its most."""

    def estimate(self, solver: Solver, question: str, pricing: Pricing) -> Estimate:
        """Per expansion at depth d: ``n`` samples (the step's prompt, as ReAct's step d + 1: the
        prompt the parent's expansion wrote read from the prompt cache, the step written) and ``n``
        value calls (the value prompt, the failed trajectories with their reflections once there are
        some, and the trajectory), each writing half its ``max_tokens`` (an expected figure, like the
        depth: a search is priced as it is likely to run, not at its most; one failed trajectory shown
        from the second iteration on); a reflection per ``lats.reflections``."""
        config: LatsConfig = solver.settings.options
        if config.protocol == "official":
            return _port(solver).estimate(solver, question)
        request = solver.probe_requests(question)[0]
        first, shared = estimate_input_tokens(request), shared_prefix_tokens(request)
        growth = step_growth(solver)
        value = solver.prompts["lats"]
        reflection = solver.prompts["reflexion"]
        value_tokens = len(value.instruction + value.exemplars) // 4 + len(question) // 4
        # once a simulation has failed, each value prompt also shows the failed trajectories with their
        # reflections (``value_parts``): priced as one from the second iteration on (a failure that
        # repeats an answer already reflected on is not shown again: the stand-in's searches of 4 to 10
        # iterations wrote one reflection an example), a simulation of half the depth cap, its turns
        # half their cap as the samples' are priced
        depth = max(1, -(-solver.settings.loop.max_steps // 2))
        shown_step = solver.settings.max_tokens // 2 + OBSERVATION_TOKENS
        failed_block = depth * shown_step + config.reflection_max_tokens // 2
        minimum = pricing.minimum
        total = Estimate(0, Usage())
        for k, d in enumerate(expansions(solver)):
            iteration = 0 if k < depth else 1 + (k - depth) // max(1, depth - min(1, depth - 1))
            shown = min(iteration, 1, config.reflections) * failed_block
            tokens = first + d * growth
            # the first sample reads the prompt its parent's expansion wrote (the exemplars, at the root)
            # and writes its step; its siblings, the same prompt, read all of it
            before = first + (d - 1) * growth if d else (shared if pricing.exemplars_cached or k > 0 else 0)
            read = before if pricing.caching and before >= minimum else 0
            out = Usage(output_tokens=solver.settings.max_tokens // 2)
            if pricing.caching and tokens >= minimum:
                first_sample = Usage(cache_read_input_tokens=read, cache_creation_input_tokens=tokens - read)
                siblings = times(Usage(cache_read_input_tokens=tokens), config.n - 1)
            else:
                first_sample, siblings = Usage(input_tokens=tokens), times(Usage(input_tokens=tokens), config.n - 1)
            samples = first_sample + siblings + times(out, config.n)
            # the trajectory a value call scores: its steps as the model is expected to write them
            value_in = value_tokens + shown + d * shown_step
            values = Usage(input_tokens=value_in, output_tokens=config.value_max_tokens // 2)
            total = total + Estimate(config.n, samples) + Estimate(config.n, times(values, config.n))
        trajectory = growth * solver.settings.loop.max_steps
        reflect = text_call_usage(
            len(reflection.instruction + reflection.exemplars), trajectory, config.reflection_max_tokens
        )
        return total + Estimate(config.reflections, times(reflect, config.reflections))

    def calls_at_most(self, solver: Solver) -> int:
        """Every simulation to the cap, in every iteration: per expansion ``n`` samples and ``n``
        values, and the reflections."""
        config: LatsConfig = solver.settings.options
        if config.protocol == "official":
            return _port(solver).most(config.n, config.iterations)[0]
        return 2 * config.n * len(expansions(solver, most=True)) + config.reflections

    def expected_said(self, solver: Solver) -> str:
        if solver.settings.options.protocol == "official":
            return _port(solver).expected
        return super().expected_said(solver)

    def rounds(self, solver: Solver) -> int:
        """An expansion: its samples, then their values."""
        if solver.settings.options.protocol == "official":
            return _port(solver).most(solver.settings.options.n, solver.settings.options.iterations)[1]
        return 2 * len(expansions(solver, most=True)) + solver.settings.options.reflections


class OfficialPort(NamedTuple):
    """``lats.protocol=official`` of a task: its search, its price, its most calls and rounds."""

    solve: Callable[[Solver, Example, EventSink | None], Awaitable[Outcome]]
    estimate: Callable[[Solver, str], Estimate]
    most: Callable[[int, int], tuple[int, int]]
    expected: str  # what the dry run's expected figure assumes


def _port(solver: Solver) -> OfficialPort:
    if is_webshop(solver):
        said = "every iteration's expansion and a simulation of 4 steps, half of each call's 100 tokens"
        return OfficialPort(solve_webshop, webshop_estimate, webshop_most, said)
    said = "every iteration's expansion and its simulation to depth 4, half of each call's 100 tokens"
    return OfficialPort(solve_official, official_estimate, official_most, said)


def _selected_by(tree: Mapping[str, Any]) -> str | None:
    """What chose a recorded search's answer (``TreeSearch._selected_by``); a tree recorded before it
    was kept was chosen by the environment's reward wherever the chosen node had one (honest feedback)."""
    if "selected_by" in tree:
        return tree["selected_by"]
    if tree.get("feedback") == "oracle":
        return "gold answer"
    nodes = {n.get("id"): n for n in tree.get("nodes") or ()}
    chosen = nodes.get((tree.get("chosen") or [None])[-1])
    return "environment reward" if chosen is not None and chosen.get("env_reward") is not None else "value"


def expansions(solver: Solver, most: bool = False) -> list[int]:
    """The depths of the expansions an example makes. Each iteration expands a node near the root
    and simulates from it; the estimate takes a simulation to run to half the depth cap (the answer
    may come anywhere between the first step and the cap), ``most`` to the cap, in every one of
    ``lats.iterations``."""
    config: LatsConfig = solver.settings.options
    cap = solver.settings.loop.max_steps
    if most:
        return [d for _ in range(config.iterations) for d in range(cap)]
    depth = max(1, -(-cap // 2))  # the first iteration from the root; the later ones from a node below it
    return list(range(depth)) + [d for _ in range(config.iterations - 1) for d in range(min(1, depth - 1), depth)]


METHODS = (
    Lats(
        "lats",
        ModeSpec("react", text_only="samples and scores text steps (LATS's own protocol)"),
        "Monte Carlo tree search over ReAct steps, the model as value function (Zhou et al., 2024)",
        published=LATS_PAPER,
        published_by="LATS paper",
        settings_type=LatsConfig,
        settings_key="lats",  # run.json's and the fingerprint's key, and eval.yaml's section, as ever
        summary_type=SearchSummary,
        costing=LatsCosting(),
    ),
)


def tree_html(tree: Mapping[str, Any] | None) -> str:
    """A LATS example's search tree (``record.tree``) as nested lists: each node's action, what it
    observed, its value, visits and reward; the chosen trajectory marked; the reflections after.
    Drawn without recursion and each node once, whatever ids a run folder holds."""
    if not tree or not isinstance(tree.get("nodes"), list):
        return ""
    e = html.escape
    nodes = {n.get("id"): n for n in tree["nodes"] if isinstance(n, Mapping) and isinstance(n.get("id"), int | str)}
    chosen = {i for i in tree.get("chosen") or () if isinstance(i, int | str)}
    children: dict[Any, list[Any]] = {}
    for node in nodes.values():
        parent = node.get("parent")
        known = isinstance(parent, int | str) and parent in nodes
        children.setdefault(parent if known else None, []).append(node.get("id"))
    feedback = str(tree.get("feedback") or "")
    said = " (ORACLE FEEDBACK: the gold answer ended the search)" if feedback == "oracle" else ""
    parts = [
        f"<h4>search tree: {len(nodes)} nodes, {e(str(tree.get('iterations')))} iterations, "
        f"feedback {e(feedback)}{e(said)}; the chosen trajectory is marked &#9733;</h4><ul>"
    ]
    seen: set[Any] = set()
    stack: list[Any] = [("node", i) for i in reversed(children.get(None, []))]
    while stack:
        kind, key = stack.pop()
        if kind == "close":
            parts.append("</ul></li>")
            continue
        if key in seen:
            continue
        seen.add(key)
        node = nodes[key]
        mark = "&#9733; " if key in chosen else ""
        action = node.get("action")
        head = "(the opening)" if action is None else f"<b>{e(str(action))}</b>"
        observed = str(node.get("observation") or "")
        figures = f"value {float(node.get('value') or 0):.2f}, visits {e(str(node.get('visits')))}"
        if node.get("terminal"):
            figures += f", terminal, reward {e(str(node.get('reward')))}"
        line = f"<li>{mark}#{e(str(key))} {head}"
        if observed:
            line += f" &rarr; {e(observed[:200])}{'&hellip;' if len(observed) > 200 else ''}"
        line += f" <span class='note'>({figures})</span>"
        below = [i for i in children.get(key, []) if i not in seen]
        if below:
            parts.append(line + "<ul>")
            stack.append(("close", key))
            stack.extend(("node", i) for i in reversed(below))
        else:
            parts.append(line + "</li>")
    parts.append("</ul>")
    reflections = [str(r) for r in tree.get("reflections") or ()]
    if reflections:
        parts.append("<p>reflections:</p><ol>" + "".join(f"<li>{e(r)}</li>" for r in reflections) + "</ol>")
    return "".join(parts)
