"""``lats.protocol=official`` on WebShop: LATS's own WebShop search, as its code runs it, quirks included.

A port of ``webshop/lats.py`` and ``webshop/webshop.py`` of lapisrocks/LanguageAgentTreeSearch at
853d816 (the code behind LATS's WebShop figure, run by its ``lats.sh``), written here from reading
it; its prompts are read out of its pinned ``webshop/prompt.py`` as data (``upstream.json``:
``lats/webshop_prompt1`` and the others), never run. The requests are ``lats_official``'s
(``OfficialModel``: the prompt as one user message, 100 output tokens, the stop ``Observation``
for a step and none for a value or a reflection, the code's ``n`` as ``n`` requests). What the
code does, and so this port (docs/decisions.md lists each with its place in the code):

- **Its shop**: the code's ``webshopEnv`` over a WebShop server (WebShop's own at ``webshop.url``,
  or the project's): a session's state is a dict (page type, query, page, ASIN, options, sub-page,
  and whatever the last page offered), deep-copied into every node, so each child runs its action
  from its parent's page. A page is read by the code's ``webshop_text`` (``render`` with the first
  ten results' ASINs shown). An action the state does not allow is ``Invalid action!``, reward
  -1; ``think[...]`` shows the current page again; ``Buy Now`` shows the score, and only a score
  above 0 makes a node terminal (a purchase scored 0 is a node the search may expand again).
- **Its parsing**: a sample is read after ``\\nAction: `` (the text the prompt ends with); its
  action is the text between the first and the second colon of its first ``Action`` line; samples
  of the same action make one child (the last of them), every one of them run in the shop.
- **Its prompts**: a node's prompt is the instruction page followed by each step's ``Action:`` and
  ``Observation:`` lines (``generate_prompt``); an expansion sends ``prompt1`` around it and
  ``\\nAction: ``, or ``prompt1_feedback`` once reflections exist.
- **Its failed trajectories and reflections**: a terminal child of a reward between 0 and 1 is a
  failed trajectory (one an expansion, one a reward: ``collect_trajectory``, its steps from the leaf
  up); before an expansion, while there are more failed trajectories than reflections and fewer
  than 4, the reflections are written anew on 3 of them drawn at random (a ``random.Random`` seeded
  by the example's id here; the code's ``random`` is unseeded).
- **Its values**: ``score_prompt`` around the node's prompt and ``\\n\\nReflection: ``; once there
  are failed trajectories, ``score_prompt_feedback`` with each paired to a reflection by position,
  shown as the Python dict it is, each value call cutting one more ``Action:`` step out of each (the
  code rewrites its list in place); the reply's score is read as on HotpotQA (``-1`` unparsed); a
  repeated child scores 0; values go to the children in the order of the non-terminal ones; a
  terminal child's value is the best vote plus one; every value is divided by the best vote.
- **Its search**: UCT is infinite for an unvisited node of value 0 or more (its value where
  negative); the root is expanded with ``2 n`` samples; depth limit 15; each iteration simulates
  from the best-valued child for up to 15 steps with 5 samples a level, taking the first terminal
  sample, else the best-valued one, its nodes kept off the tree (the record keeps them, marked),
  -0.5 as the reward where it runs out; the reward is backed up as a plain mean; the search ends at
  a reward of 1, else after the iterations with the best-rewarded node of the tree and the
  simulations' ends (the root, scored 0, where none is rewarded).

Where the code would wait forever (no node left to select) or fail (a node with no child to
simulate from), the search ends and the tree's ``stuck`` says why.
"""

from __future__ import annotations

import asyncio
import copy
import math
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from react_bench.environment import ShopPages
from react_bench.errors import ConfigError
from react_bench.methods.lats_official import (
    MAX_RESAMPLES,
    STEP_STOP,
    CodeSearch,
    Gpt,
    OfficialCodeFails,
    OfficialModel,
    Shown,
    collect_nodes,
    iteration_events,
    node_dict,
    official_outcome,
    official_tree,
    path_to,
    run_search,
    template_calls,
    value_outputs_unwrap,
)

SOURCE = "lapisrocks/LanguageAgentTreeSearch@853d816 webshop/lats.py"
DEPTH_LIMIT = 15  # expand_node: depth >= 15
ROLLOUT_DEPTH = 15  # rollout(max_depth=15): steps from where it starts
ROLLOUT_SAMPLES = 5  # rollout: n = 5
ROLLOUT_END = -0.5  # rollout: the reward of a simulation that runs out of steps
REFLECTED = 3  # generate_self_reflection: random.sample(z, min(3, len(z)))
RESULTS_SHOWN = 10  # webshop_text: prod_cnt >= 10
STEP = "\nAction: "  # generate_new_states: get_samples(task, prompt, "\nAction: ", ...)
INVALID = "Invalid action!"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")  # ACTION_TO_TEMPLATE
TEMPLATES = ("prompt1", "prompt1_feedback", "score_prompt", "score_prompt_feedback", "reflection_prompt")


@dataclass(frozen=True)
class ShopPrompts:
    """The code's WebShop prompt templates (``webshop/prompt.py``), by their names there."""

    prompt1: str
    prompt1_feedback: str
    score_prompt: str
    score_prompt_feedback: str
    reflection_prompt: str

    @staticmethod
    def pinned() -> ShopPrompts:
        """Read from the pinned ``webshop/prompt.py`` (fetched on first use, sha256 checked)."""
        from react_bench import upstream

        return ShopPrompts(**{name: upstream.text(f"lats/webshop_{name}") for name in TEMPLATES})

    @property
    def conclusion(self) -> str:
        """The line ``value_prompt_wrap`` ends each failed trajectory with, before its score: the
        value prompt's own ``conclude "... {s}"`` words."""
        found = re.search(r'conclude "([^"{]*)\{s\}"', self.score_prompt_feedback)
        if found is None:
            raise ConfigError("lats/webshop_score_prompt_feedback asks for no conclusion with {s}")
        return found.group(1)


# --- the shop: the code's webshopEnv ------------------------------------------------------------


class Refused(Exception):
    """An ``assert`` of ``webshopEnv.step`` that fails: the code's ``Invalid action!``."""


def _check(condition: bool) -> None:
    if not condition:
        raise Refused


# a session's state -> (the page's text, what it offered: option_types, asins, reward)
PageText = Callable[..., Awaitable[tuple[str, dict[str, Any]]]]


class ShopSessions:
    """``webshopEnv``: the sessions' states, and ``step`` as the code's (``Refused`` where it asserts)."""

    def __init__(self, page_text: PageText) -> None:
        self.page_text = page_text
        self.sessions: dict[str, dict[str, Any]] = {}

    async def step(self, session: str, action: str) -> tuple[str, float, bool]:
        said = None
        sessions = self.sessions
        if action == "reset":
            sessions[session] = {"session": session, "page_type": "init"}
        elif action.startswith("think["):
            pass  # the code's "OK." is overwritten by the page below
        elif action.startswith("search["):
            _check(sessions[session]["page_type"] == "init")
            sessions[session] = {"session": session, "page_type": "search", "query_string": action[7:-1], "page_num": 1}
        elif action.startswith("click["):
            button, state = action[6:-1], sessions[session]
            kind = state["page_type"]
            if button == "Buy Now":
                _check(kind == "item")
                state["page_type"] = "end"
            elif button == "Back to Search":
                _check(kind in ("search", "item_sub", "item"))
                sessions[session] = {"session": session, "page_type": "init"}
            elif button == "Next >":
                _check(kind == "search")
                state["page_num"] += 1
            elif button == "< Prev":
                _check(kind in ("search", "item_sub", "item"))
                if kind == "search":
                    state["page_num"] -= 1
                elif kind == "item_sub":
                    state["page_type"] = "item"
                else:
                    state["page_type"], state["options"] = "search", {}
            elif button in SUB_PAGES:
                _check(kind == "item")
                state["page_type"], state["subpage"] = "item_sub", button
            elif kind == "search":
                _check(button in state.get("asins", []))
                state["page_type"], state["asin"] = "item", button
            elif kind == "item":
                _check("option_types" in state)
                _check(button in state["option_types"])
                state.setdefault("options", {})[state["option_types"][button]] = button
                said = f"You have clicked {button}."
        else:
            raise Refused
        observation, info = await self.page_text(**sessions[session])
        sessions[session].update(info)
        reward = info.get("reward", 0.0)
        return said or observation, reward, reward == 1.0


def page_address(
    site: ShopPages,
    session: str,
    page_type: str,
    query_string: str = "",
    page_num: int = 1,
    asin: str = "",
    options: Any = None,
    subpage: str = "",
    **_: Any,
) -> tuple[str, str]:
    """``webshop_text``'s URL: as the code writes it (its option labels are marked by what it holds)
    and as it is sent (each part quoted; a search's text as the shop's environment sends it)."""
    chosen = str({} if options is None else options)
    sent = site.sendable_query(query_string)
    q = lambda text: quote(str(text), safe="")  # noqa: E731
    parts: list[Any]
    written: list[Any]
    match page_type:
        case "init":
            parts = [session]
            written = [session]
        case "search":
            parts = ["search_results", session, sent, page_num]
            written = ["search_results", session, query_string, page_num]
        case "item":
            parts = ["item_page", session, asin, sent, page_num, chosen]
            written = ["item_page", session, asin, query_string, page_num, chosen]
        case "item_sub":
            parts = ["item_sub_page", session, asin, sent, page_num, subpage, chosen]
            written = ["item_sub_page", session, asin, query_string, page_num, subpage, chosen]
        case _:
            parts = written = ["done", session, asin, chosen]
    return site.url + "/" + "/".join(str(p) for p in written), "/" + "/".join(q(p) for p in parts)


def shop_text(site: ShopPages, get: Callable[[str], str] | None = None) -> PageText:
    """``webshop_text`` over the shop's pages (``environment.ShopPages``; ``get``: a path's HTML,
    blocking, in place of the site's own): the page rendered as the code renders it (the
    environment's renderer, ten results' ASINs), with what it offered. A page that cannot be read
    (a score that is no number) is ``EpisodeAbort``, as the environment's: the example ends as an error."""
    from react_bench.environment import EpisodeAbort, run_blocking

    fetch = get if get is not None else site.get_page

    async def text(**state: Any) -> tuple[str, dict[str, Any]]:
        url, path = page_address(site, **state)
        html = await run_blocking(fetch, path)
        try:
            page = site.page_view(html, url, state["page_type"] == "init", RESULTS_SHOWN)
        except (ValueError, TypeError, AttributeError) as exc:  # a score that is no number: the server's fault
            raise EpisodeAbort(f"the WebShop server sent a page that cannot be read for {path}: {exc}") from exc
        info: dict[str, Any] = {}
        if page.options:
            info["option_types"] = dict(page.options)
        if page.asins:
            info["asins"] = list(page.asins)
        if page.reward is not None:
            info["reward"] = page.reward
        return page.text, info

    return text


# --- the tree ------------------------------------------------------------------------------------


@dataclass(eq=False)
class WNode:
    """``Node`` of webshop/lats.py; ``id`` is given where the node joins the record."""

    question: str
    parent: WNode | None
    state: dict[str, str] = field(default_factory=lambda: {"action": "", "observation": ""})
    env_state: dict[str, Any] | None = None
    children: list[WNode] = field(default_factory=list)
    visits: int = 0
    value: float = 0.0
    depth: int = 0
    is_terminal: bool = False
    reward: float = 0.0
    id: int = -1
    in_tree: bool = True  # False: made by a simulation, never attached to its parent
    sample: str = ""  # the sample as the model wrote it, after ``\nAction: ``
    lm_value: float | None = None  # the value function's score, where it was asked
    scored: bool = False  # its page was the done page: its reward is the shop's score

    def uct(self) -> float:
        if self.visits == 0:
            return math.inf if self.value >= 0 else self.value
        assert self.parent is not None
        return self.value / self.visits + math.sqrt(2 * math.log(self.parent.visits) / self.visits)


def generate_prompt(node: WNode) -> str:
    """``generate_prompt``: the instruction page, then each step's lines, a blank line between steps."""
    question, segments = node.question, []
    walk: WNode | None = node
    while walk is not None:
        segment = []
        if walk.state["action"]:
            segment.append(f"Action: {walk.state['action']}")
        if walk.state["observation"] and walk.depth != 0:
            segment.append(f"Observation: {walk.state['observation']}")
        segments.append("\n".join(segment))
        walk = walk.parent
    return question + "\n\n".join(reversed(segments))


def collect_trajectory(node: WNode) -> str:
    """``collect_trajectory``: the instruction page, then each step's lines from the leaf up."""
    lines = [node.question]
    walk: WNode | None = node
    while walk is not None:
        if walk.state["action"] and walk.parent is not None:
            lines.append(f"Action: {walk.state['action']}")
        if walk.state["observation"] and walk.parent is not None:
            lines.append(f"Observation: {walk.state['observation']}\n")
        walk = walk.parent
    return "\n".join(lines)


def action_line(sample: str) -> str | None:
    """The text between the first and second colon of the first ``Action`` line (None: no such line)."""
    return next(
        (line.split(":")[1].strip() for line in sample.split("\n") if line.startswith("Action") and ":" in line),
        None,
    )


class ShopSearch(CodeSearch):
    """``lats_search`` of one instruction (module docstring). ``n``: ``--n_generate_sample``;
    ``n_evaluate``: ``--n_evaluate_sample``; ``iterations``: ``--iterations``; ``rng`` draws the
    trajectories reflected on."""

    def __init__(
        self,
        prompts: ShopPrompts,
        gpt: Gpt,
        shop: ShopSessions,
        session: str,
        n: int,
        n_evaluate: int,
        iterations: int,
        rng: random.Random,
        on_iteration: Callable[[int, int], None] | None = None,
    ) -> None:
        super().__init__(iterations, on_iteration)
        self.p, self.gpt, self.shop, self.session = prompts, gpt, shop, session
        self.n, self.n_evaluate, self.rng = n, n_evaluate, rng
        self.conclusion = prompts.conclusion
        self.failed: list[dict[str, Any]] = []

    def _keep(self, node: WNode) -> WNode:
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    async def _root(self) -> WNode:
        x = (await self.shop.step(self.session, "reset"))[0]
        return self._keep(WNode(x, None, env_state=copy.deepcopy(self.shop.sessions)))

    async def _search(self, root: WNode) -> WNode | None:
        for i in range(self.iterations):
            self._iteration(i)
            node = self._select(root)
            if node is None or (node.is_terminal and node.reward != 1):
                raise OfficialCodeFails("no node left to select: the code reselects forever here (lats_search)")
            if node.is_terminal:
                return node
            await self._expand(node)
            await self._evaluate(node)
            if not node.children:
                raise OfficialCodeFails(
                    f"a node at depth {node.depth} has no child to simulate from: the code raises ValueError here "
                    "(lats_search: max() of its children)"
                )
            terminal = await self._rollout(max(node.children, key=lambda c: c.value))
            self.simulated.append(terminal)
            if terminal.reward == 1:
                return terminal
            self._backpropagate(terminal, terminal.reward)
            won = [n for n in collect_nodes(root) if n.is_terminal and n.reward == 1]
            if won:
                return max(won, key=lambda n: n.reward)
        return None

    async def _expand(self, node: WNode) -> None:
        if node.depth >= DEPTH_LIMIT:
            return
        n = 2 * self.n if node.depth == 0 else self.n
        node.children.extend(await self._new_states(node, n, in_tree=True))

    async def _new_states(self, node: WNode, n: int, in_tree: bool) -> list[WNode]:
        """``generate_new_states``: ``n`` samples, each action run from the node's page; one child an action."""
        samples = await self._samples(generate_prompt(node), STEP, n)
        unique: dict[str, WNode] = {}
        added = False
        for sample in samples:
            local = copy.deepcopy(node.env_state) or {}
            self.shop.sessions = local
            line = action_line(STEP + sample)
            if not line:
                continue
            try:
                observation, reward, done = await self.shop.step(self.session, line)
                scored = local[self.session]["page_type"] == "end"  # the done page: its score is the reward
            except Refused:
                observation, reward, done, scored = INVALID, -1, False, False
            child = WNode(
                node.question,
                node,
                state={"action": line, "observation": observation},
                env_state=local,
                depth=node.depth + 1,
                is_terminal=reward > 0 or done,
                reward=reward,
                value=reward,
                in_tree=in_tree,
                sample=sample,
                scored=scored,
            )
            unique[line] = child
            if child.is_terminal and 0 < reward < 1 and not added:
                if reward not in [t["r"] for t in self.failed]:
                    added = True
                    self.failed.append({"trajectory": collect_trajectory(child), "final_answer": line, "r": reward})
        return [self._keep(c) for c in unique.values()]

    async def _samples(self, x: str, y: str, n: int) -> list[str]:
        """``get_samples``: the reflections written anew where the code writes them, then the step."""
        if len(self.failed) > len(self.reflection_map) and len(self.failed) < 4:
            self.reflection_map = await self._reflect(x)
        return await self.gpt(self._cot_prompt(x, y), n, STEP_STOP, "step")

    async def _reflect(self, question: str) -> list[dict[str, str]]:
        """``generate_self_reflection``: up to 3 failed trajectories drawn, each with its reward, one
        reflection each."""
        drawn = self.rng.sample(self.failed, min(REFLECTED, len(self.failed)))
        shown = [item["trajectory"] + f"\nReward: {item['r']}\n" for item in drawn]
        said = await asyncio.gather(
            *(self.gpt(self.p.reflection_prompt.format(trajectory=t), 1, None, "reflection") for t in shown)
        )
        return [{"question": question, "trajectory": t, "reflection": r[0]} for t, r in zip(shown, said, strict=True)]

    def _cot_prompt(self, x: str, y: str) -> str:
        """``cot_prompt_wrap``."""
        if self.reflection_map:
            shown = "".join(m["trajectory"] + "Reflection: " + m["reflection"] + "\n" for m in self.reflection_map)
            return self.p.prompt1_feedback.format(trajectories=shown, input=x + y)
        return self.p.prompt1.format(input=x + y)

    def _value_prompt(self, y: str) -> str:
        """``value_prompt_wrap``: each failed trajectory paired with a reflection by position, its first
        remaining step cut out for good (the code rewrites the dict it holds), shown as the dict."""
        if not self.failed:
            return self.p.score_prompt.format(s="", input=y + "\n\nReflection: ")
        shown = ""
        for traj, ref in zip(self.failed, self.reflection_map, strict=False):
            score = int(traj["r"] * 10) / 2
            parts = traj["trajectory"].split("Action: ")
            traj["trajectory"] = "Action: ".join([parts[0], *parts[2:]])
            shown += f"{y}\n{traj}\nReflection: {ref['reflection']}\n{self.conclusion}{score}\n"
        return self.p.score_prompt_feedback.format(s="", trajectories=shown, input=y + "\n\nReflection: ")

    async def _values(self, ys: list[str]) -> list[float]:
        """``get_values``: a repeated trajectory scores 0; the prompts are written in order (each
        rewrites the failed trajectories) and asked at once (the code asks them one by one)."""
        asked: dict[str, str] = {}
        for y in ys:
            if y not in asked:
                asked[y] = self._value_prompt(y)
        replies = await asyncio.gather(*(self.gpt(p, self.n_evaluate, None, "value") for p in asked.values()))
        value: dict[str, float] = {}
        for y, said in zip(asked, replies, strict=True):
            self.value_calls += len(said)
            value[y] = value_outputs_unwrap(said)
            self.unparsed_values += value[y] == -1
        seen: set[str] = set()
        out = []
        for y in ys:
            out.append(0.0 if y in seen else value[y])
            seen.add(y)
        return out

    async def _evaluate(self, node: WNode) -> None:
        """``evaluate_node``: votes in the order of the non-terminal children given to all in order, a
        terminal child the best vote plus one, each over the best vote (1 where it is 0)."""
        open_children = [c for c in node.children if not c.is_terminal]
        votes = await self._values([generate_prompt(c) for c in open_children])
        for child, vote in zip(open_children, votes, strict=True):
            child.lm_value = vote
        votes = votes + [0.0] * (len(node.children) - len(votes))
        best = max(votes) if votes else 1
        if best == 0:
            best = 1
        for k, child in enumerate(node.children):
            if child.is_terminal:
                votes[k] = best + 1
        for child, vote in zip(node.children, votes, strict=True):
            child.value = vote / best

    async def _rollout(self, node: WNode) -> WNode:
        depth = 0
        while not node.is_terminal and depth < ROLLOUT_DEPTH:
            states = await self._level(node, ROLLOUT_SAMPLES)
            for state in states:
                if state.is_terminal:
                    return state
            values = await self._values([generate_prompt(c) for c in states])
            for state, value in zip(states, values, strict=True):
                state.lm_value = value
            node = states[values.index(max(values))]
            depth += 1
            if depth == ROLLOUT_DEPTH:
                node.reward = ROLLOUT_END
        return node

    @staticmethod
    def _backpropagate(node: WNode | None, value: float) -> None:
        while node is not None:
            node.visits += 1
            node.value = (node.value * (node.visits - 1) + value) / node.visits
            node = node.parent


# --- on the harness: one instruction of ``task=webshop mode=lats lats.protocol=official`` ---------


async def solve_webshop(solver: Any, example: Any, on_event: Any) -> Any:
    """One instruction searched as the code searches it (``ShopSearch``) in the run's shop (the
    example's session); the chosen node's path is the episode, the chosen node's score its reward
    (none where it is no purchase: the code's reward is then 0 too)."""
    config = solver.settings.options
    env = solver.env_factory.pages()
    gpt = OfficialModel(solver)
    search = ShopSearch(
        ShopPrompts.pinned(),
        gpt,
        ShopSessions(shop_text(env)),
        example.id,
        config.n,
        config.value_samples,
        config.iterations,
        random.Random(f"lats.protocol=official {example.id}"),
        iteration_events(on_event, config.iterations),
    )
    found, error = await run_search(search, env.close)
    chosen = found.chosen if found is not None else None
    path = path_to(chosen)
    scored = chosen is not None and chosen.scored
    reason = "error" if error else ("done" if scored else "step_limit")
    shown = [Shown(n.depth, f"Action: {n.sample}", n.state["action"], n.state["observation"]) for n in path]
    tree = None
    if found is not None:
        labels = {
            "source": SOURCE,
            "feedback": "honest",
            "select": "reward",
            "selected_by": "environment reward" if scored else None,
        }
        tree = official_tree(
            found, path, [node_dict(n, env_reward=n.reward if n.scored else None) for n in found.nodes], **labels
        )
    return official_outcome(
        gpt,
        shown,
        found.nodes[0].question if found is not None else example.question,
        tree,
        chosen=chosen is not None,
        prediction="",
        reason=reason,
        reward=float(chosen.reward) if chosen is not None and scored else None,
        error=error,
    )


# --- its price -----------------------------------------------------------------------------------

REFLECTION_CALLS = 1 + 2 + 3  # written anew at 1, 2 and 3 failed trajectories (get_samples)
EXPECTED_STEPS = 4  # a purchase: a search, a result, an option, Buy Now


def webshop_estimate(solver: Any, question: str) -> Any:
    """The likely search: every iteration's expansion (``2 lats.n`` samples at the root, ``lats.n``
    after) with its values and a simulation of ``EXPECTED_STEPS`` levels (5 samples, 5 values a
    level), each call writing half its 100 tokens; the reflections written anew (6). Each step adds
    what ``step_growth`` says a step adds; nothing is read from a prompt cache."""
    from react_bench.methods.pricing import Estimate
    from react_bench.types import Usage

    config = solver.settings.options
    prompts = ShopPrompts.pinned()
    calls = template_calls(solver, question)
    total = Estimate(0, Usage())
    for i in range(config.iterations):
        d, n = (0, 2 * config.n) if i == 0 else (1, config.n)
        expansion = calls(prompts.prompt1, d, n) + calls(prompts.score_prompt, d + 1, n)
        total = total + Estimate(2 * n, expansion)
        for level in range(d + 1, d + 1 + EXPECTED_STEPS):
            simulated = calls(prompts.prompt1, level, ROLLOUT_SAMPLES)
            simulated = simulated + calls(prompts.score_prompt, level + 1, ROLLOUT_SAMPLES)
            total = total + Estimate(2 * ROLLOUT_SAMPLES, simulated)
    reflect = calls(prompts.reflection_prompt, EXPECTED_STEPS, REFLECTION_CALLS)
    return total + Estimate(REFLECTION_CALLS, reflect)


def webshop_most(n: int, iterations: int) -> tuple[int, int]:
    """(calls, rounds) at most: each iteration's expansion (``2 n`` at the root) and its values, a
    simulation of 15 levels each sampled up to ``MAX_RESAMPLES`` times with its values; the
    reflections."""
    expansion = 2 * (2 * n)
    simulation = ROLLOUT_DEPTH * (MAX_RESAMPLES * ROLLOUT_SAMPLES + ROLLOUT_SAMPLES)
    rounds = 2 + ROLLOUT_DEPTH * (MAX_RESAMPLES + 1)
    return iterations * (expansion + simulation) + REFLECTION_CALLS, iterations * rounds + 3
