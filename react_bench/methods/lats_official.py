"""``lats.protocol=official``: LATS's own HotpotQA search, as its code runs it, quirks included.

A port of ``hotpot/lats.py`` and ``hotpot/hotpotqa.py`` of lapisrocks/LanguageAgentTreeSearch at
853d816 (the code behind LATS's HotpotQA figures), written here from reading it; its prompts are
read out of its pinned ``hotpot/hotpot.py`` as data (``upstream.json``: ``lats/cot_prompt`` and
the others), never run. For the same tree the requests are the ones that code sends: the same
prompt text as one user message, temperature (``lats.temperature``), 100 output tokens, the stop
``Observation`` for a step and none for a value or a reflection. Its ``n`` (``lats.n`` for an
expansion, 5 in a simulation) is ``n`` requests here, as the Messages API has no ``n``; each
carries its own sample index, so the request cache keeps each sample apart, and a prompt sent
again (a reflection written anew, a node expanded twice) is sampled again, as the code's was.

What the code does, and so this port (docs/decisions.md lists each with its place in the code):

- **One environment** for the whole search of a question: every child's action runs, in the order
  the samples came, in the same Wikipedia environment, never reset nor replayed, so a
  ``Lookup`` reads whatever page the last ``Search`` anywhere in the tree opened. A ``Finish``
  sets the answer; every later step's reward is that answer's exact match against the gold (a
  ``Search`` after a right ``Finish`` is a terminal node of reward 1). The finish observation is
  ``Episode finished, reward = <EM>``: the gold answer's verdict, shown to the model.
- **Its parsing**: a sample's thought and action are the text between the first and the second
  colon of its ``Thought <d>`` and first ``Action`` lines; the action's type is lower-cased, its
  argument cut at the first ``]``. A sample without an action line makes no child; samples of the
  same (thought, action) make one.
- **Its prompts**: a node's prompt is the question followed by each step's lines
  (``generate_prompt``); an expansion sends ``cot_prompt`` around it and ``Thought <d+1>: ``, or,
  once reflections exist, ``cot_prompt_feedback`` with each failed trajectory and its
  reflection; either switches to its ``_short`` form when GPT-2's tokenizer counts more than
  4,000 tokens (the ``gpt2`` tokenizer from the hub, ``gpt2_counter``). The value prompt is always
  ``value_prompt_reasoning`` around the node's prompt and ``\\nThis trajectory is ``: the code
  builds one with the failed trajectories and then overwrites it (its ``and False`` branch).
- **Its reflections**: before an expansion, while there are more distinct failed answers (at most
  5 counted) than reflections and fewer than 4, every reflection is written anew
  (``generate_self_reflection``), each trajectory read back from ``str(Node)`` lines
  (``node_trajectory_to_text``: an observation is cut at its first ``)`` and a line break).
- **Its values**: a reply's score is the first of 10, 9, ..., 1 that appears in it anywhere
  (``value_outputs_unwrap``), -1 when none does (counted as unparsed); a value is cached by its
  prompt; a repeated child in one evaluation scores 0; the values are given to the children in
  order of the non-terminal ones (a terminal child takes a neighbour's: the code's issue #33).
- **Its search**: UCT ``value / visits + sqrt(2 ln N / visits)`` (``value`` while unvisited); a
  node whose children are all terminal is cut from its parent; the depth limit is 7; each
  iteration simulates from the best-valued child to absolute depth 4, always with 5 samples,
  taking the first terminal sample and otherwise the best-valued one, its nodes kept off the tree
  (the record keeps them, marked), and -1 as the reward when it reaches depth 4; the search ends
  at a node of reward 1 (the gold answer: oracle feedback), else after the iterations with the
  best-rewarded node.

Where the code would wait forever (no node left to select) or fail (a ``Thought`` line with no
colon), the search ends and the tree's ``stuck`` says why: the code's run would not have gone on.

The model's side (``OfficialModel``) and the record (``official_outcome``, ``official_tree``) serve
the WebShop port too (``lats_official_webshop.py``); ``Lats.solve`` runs the one of the task
(``is_webshop``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from react_bench.errors import ConfigError
from react_bench.events import MethodStage, announce

# the code: lapisrocks/LanguageAgentTreeSearch@853d816, hotpot/lats.py and hotpot/hotpotqa.py
SOURCE = "lapisrocks/LanguageAgentTreeSearch@853d816 hotpot/lats.py"
MAX_TOKEN_LENGTH = 4000  # hotpotqa.py: max_token_length
MAX_TOKENS = 100  # models.py: gpt(max_tokens=100)
DEPTH_LIMIT = 7  # expand_node: depth >= 7
ROLLOUT_DEPTH = 4  # rollout(max_depth=4)
ROLLOUT_SAMPLES = 5  # rollout: n = 5
STEP_STOP = "Observation"  # generate_new_states: stop="Observation"
MAX_TRAJECTORIES = 5  # get_unique_trajectories(num=5)
MAX_RESAMPLES = 20  # where the code samples again until a node has children (see ``stuck``)
GPT2_REPO = "openai-community/gpt2"  # GPT2Tokenizer.from_pretrained("gpt2") reads this repository
TEMPLATES = (
    "cot_prompt",
    "cot_prompt_short",
    "cot_prompt_feedback",
    "cot_prompt_feedback_short",
    "value_prompt_reasoning",
    "reflection_prompt",
)


@dataclass(frozen=True)
class OfficialPrompts:
    """The code's HotpotQA prompt templates (``hotpot/hotpot.py``), by their names there."""

    cot_prompt: str
    cot_prompt_short: str
    cot_prompt_feedback: str
    cot_prompt_feedback_short: str
    value_prompt_reasoning: str
    reflection_prompt: str

    @staticmethod
    def pinned() -> OfficialPrompts:
        """Read from the pinned ``hotpot/hotpot.py`` (fetched on first use, sha256 checked)."""
        from react_bench import upstream

        return OfficialPrompts(**{name: upstream.text(f"lats/{name}") for name in TEMPLATES})


Count = Callable[[str], int]
GPT2_VOCAB_MAX_BYTES = 2_000_000  # GPT-2's vocab.json is 1,042,301 bytes: a download is cut past this


def _gpt2_vocab(revision: str) -> Path:
    """GPT-2's ``vocab.json`` at ``revision``: the cached copy, else downloaded once from the hub,
    bounded in size and time (``react_bench.download``) and renamed into place only once whole."""
    import json
    import os
    import uuid
    from urllib.parse import quote

    from react_bench.download import DownloadError, download
    from react_bench.paths import cache_dir

    final = cache_dir() / "hub" / GPT2_REPO / revision.replace("/", "--") / "vocab.json"
    if final.is_file():
        return final
    why = ""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        why = "the hub is switched off here (HF_HUB_OFFLINE=1) and no copy is cached"
    else:
        endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f".vocab.{uuid.uuid4().hex[:8]}.part")
        try:
            got = download(
                f"{endpoint}/{GPT2_REPO}/resolve/{quote(revision, safe='')}/vocab.json",
                tmp,
                label=f"{GPT2_REPO}/vocab.json",
                size=GPT2_VOCAB_MAX_BYTES,
            )
            try:
                whole = isinstance(json.loads(tmp.read_text(encoding="utf-8")), dict)
            except (ValueError, UnicodeDecodeError):
                whole = False
            if whole:
                os.replace(tmp, final)
                return final
            why = f"what came back is not a vocabulary: {got.seen}"
        except DownloadError as err:
            why = str(err)
        finally:
            tmp.unlink(missing_ok=True)
    raise ConfigError(
        f"lats.protocol=official counts prompts with GPT-2's tokenizer ({GPT2_REPO}/vocab.json from the hub), "
        f"which cannot be had ({' '.join(why.split())[:240]}); set HF_ENDPOINT to a reachable hub"
    )


def gpt2_counter(revision: str = "main") -> Count:
    """GPT-2's token count (``GPT2Tokenizer.from_pretrained("gpt2")``, as the code counts): the
    byte-level BPE of the hub's ``vocab.json`` (``HF_ENDPOINT``; cached under the project's cache),
    run by tiktoken with GPT-2's pre-tokenizing pattern. A tokenizer that cannot be had is one
    ``ConfigError`` line: the count decides which prompt is sent, so there is no guess in its place."""
    import json

    import tiktoken

    path = _gpt2_vocab(revision)
    vocab = json.loads(Path(path).read_text(encoding="utf-8"))
    decode = {c: b for b, c in _bytes_to_unicode().items()}
    try:
        ranks = {bytes(decode[c] for c in token): rank for token, rank in vocab.items() if token != "<|endoftext|>"}
    except KeyError:
        raise ConfigError(f"{path}: not a byte-level BPE vocabulary (GPT-2's)") from None
    encoding = tiktoken.Encoding(
        name="gpt2-hub",
        pat_str=r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": int(vocab.get("<|endoftext|>", len(ranks)))},
    )
    return lambda text: len(encoding.encode_ordinary(text))


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character table: printable bytes stand for themselves, the others for the
    characters from 256 on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


# --- the tree: the code's Node -------------------------------------------------------------------


@dataclass(eq=False)
class ONode:
    """``Node`` of lats.py: ``state`` holds thought, action and observation as the code parsed them."""

    id: int
    question: str
    parent: ONode | None
    state: dict[str, str] = field(default_factory=lambda: {"thought": "", "action": "", "observation": ""})
    children: list[ONode] = field(default_factory=list)
    visits: int = 0
    value: float = 0.0
    depth: int = 0
    is_terminal: bool = False
    reward: int = 0
    in_tree: bool = True  # False: made by a simulation, never attached to its parent (the code's rollout)
    sample: str = ""  # the sample as the model wrote it, after the code's ``Thought <d>: ``
    done: bool = False  # its action was a Finish
    answer: str | None = None  # the Finish's argument
    lm_value: float | None = None  # the value function's score, where it was asked

    def uct(self) -> float:
        if self.visits == 0:
            return self.value
        parent = self.parent.visits if self.parent is not None else 0
        log = math.log(parent) if parent > 0 else -math.inf
        return self.value / self.visits + (math.sqrt(2 * log / self.visits) if log >= 0 else math.nan)

    def __str__(self) -> str:
        s = self.state
        return (
            f"Node(depth={self.depth}, value={self.value:.2f}, visits={self.visits}, thought={s['thought']}, "
            f"action={s['action']}, observation={s['observation']})"
        )


def node_trajectory_to_text(node_string: str) -> str:
    """lats.py's ``node_trajectory_to_text``: the ``str(Node)`` lines read back as steps."""
    formatted = []
    for line in node_string.split("\n"):
        try:
            depth = int(line.split(",")[0].split("=")[1].strip())
            thought = line.split(", thought=")[1].split(", action=")[0].strip()
            action = line.split(", action=")[1].split(", observation=")[0].strip()
            observation = line.split(", observation=")[1].split(")")[0].strip()
        except (IndexError, ValueError) as err:
            if isinstance(err, ValueError):  # int() of a depth that is not one: the code raises here
                raise OfficialCodeFails(f"node_trajectory_to_text: {err}") from None
            continue
        if depth != 0:
            if thought:
                formatted.append(f"Thought {depth}: {thought}")
            if action:
                formatted.append(f"Action {depth}: {action}")
            if observation:
                formatted.append(f"Observation {depth}: {observation}")
    return "\n".join(formatted)


def collect_trajectory(node: ONode | None) -> str:
    lines = []
    while node is not None:
        lines.append(str(node))
        node = node.parent
    return "\n".join(reversed(lines))


def generate_prompt(node: ONode | None) -> str:
    """lats.py's ``generate_prompt``: the question, then each step's lines from the root down."""
    assert node is not None
    question, segments = node.question, []
    while node is not None:
        segment = []
        if node.state["thought"]:
            segment.append(f"Thought {node.depth}: {node.state['thought']}")
        if node.state["action"]:
            segment.append(f"Action {node.depth}: {node.state['action']}")
        if node.state["observation"] and node.depth != 0:
            segment.append(f"Observation {node.depth}: {node.state['observation']}")
        segments.append("\n".join(segment))
        node = node.parent
    return question + "\n".join(reversed(segments))


def value_outputs_unwrap(outputs: Sequence[str]) -> float:
    """hotpotqa.py's ``value_outputs_unwrap``: the first reply's first of "10", "9", ... "1" found
    anywhere in it, over 10; -1 where it holds no digit from 1 to 9."""
    said = outputs[0]
    for score in range(10, 0, -1):
        if str(score) in said:
            return score / 10
    return -1


class OfficialCodeFails(Exception):
    """Where the code itself would raise or wait forever: the search ends, the tree says why."""


# --- the search ----------------------------------------------------------------------------------

# prompt, n, stop (None: none), what it is ("step", "value", "reflection") -> the n replies' texts
Gpt = Callable[[str, int, str | None, str], Awaitable[list[str]]]


class OfficialEnv:
    """The code's environment for a question: ``HotPotQAWrapper`` over ``WikiEnv``, one for the
    whole search. ``act(text)`` runs an action string on the project's Wikipedia environment;
    ``em(answer)`` is the gold answer's exact match (the wrapper's reward)."""

    def __init__(self, act: Callable[[str], Awaitable[str]], has_page: Callable[[], bool], em: Callable[[str], bool]):
        self._act, self._has_page, self._em = act, has_page, em
        self.answer: str | None = None

    async def step(self, action: str) -> tuple[str, int, bool]:
        action = action.strip()
        done = False
        if action.startswith("finish[") and action.endswith("]"):
            self.answer, done = action[len("finish[") : -1], True
        elif action.startswith("lookup[") and action.endswith("]") and not self._has_page():
            observation = "No more results.\n"  # wikienv: no page, an empty lookup list
        else:
            observation = await self._act(action)
        reward = int(self._em(self.answer)) if self.answer is not None else 0
        if done:
            observation = f"Episode finished, reward = {reward}\n"
        return observation, reward, done


@dataclass
class OfficialResult:
    """A search's end: the node chosen, every node made (``ONode``, or the WebShop port's ``WNode``)."""

    chosen: Any
    nodes: list[Any]
    iterations: int
    value_calls: int
    unparsed_values: int
    reflections: list[dict[str, str]]
    stuck: str | None


class CodeSearch:
    """What LATS's two ``lats_search`` share (HotpotQA's ``OfficialSearch``, WebShop's ``ShopSearch``):
    the nodes made, in order (their ids); each iteration said; the end where the iterations run out or
    the code would not go on (the best-rewarded of the tree's nodes and the simulations' ends);
    ``select_node``; a simulation's level sampled until it has a node."""

    def __init__(self, iterations: int, on_iteration: Callable[[int, int], None] | None) -> None:
        self.iterations, self.on_iteration = iterations, on_iteration
        self.reflection_map: list[dict[str, str]] = []
        self.nodes: list[Any] = []
        self.simulated: list[Any] = []  # each simulation's last node (the code's terminal_nodes)
        self.value_calls = self.unparsed_values = self.done_iterations = 0

    async def _root(self) -> Any:
        raise NotImplementedError

    async def _search(self, root: Any) -> Any:
        raise NotImplementedError

    async def run(self) -> OfficialResult:
        root = await self._root()
        stuck = None
        try:
            chosen = await self._search(root)
        except OfficialCodeFails as why:
            chosen, stuck = None, str(why)
        if chosen is None:  # the iterations ran out: the best-rewarded node, the tree's then the simulations' ends
            chosen = max([*collect_nodes(root), *self.simulated], key=lambda n: n.reward)
        return OfficialResult(
            chosen,
            self.nodes,
            self.done_iterations,
            self.value_calls,
            self.unparsed_values,
            list(self.reflection_map),
            stuck,
        )

    def _iteration(self, i: int) -> None:
        self.done_iterations = i + 1
        if self.on_iteration is not None:
            self.on_iteration(i + 1, len(self.nodes))

    @staticmethod
    def _select(node: Any) -> Any:
        """``select_node``: down the best UCT among the open children; a node whose children are all
        terminal is cut from its parent; a terminal child of reward 1 is taken at once."""
        while node is not None and node.children:
            terminal = [c for c in node.children if c.is_terminal]
            if len(terminal) == len(node.children):
                if node.parent is not None:
                    node.parent.children.remove(node)
                node = node.parent
                continue
            won = next((c for c in terminal if c.reward == 1), None)
            if won is not None:
                return won
            node = max((c for c in node.children if not c.is_terminal), key=lambda c: c.uct())
        return node

    async def _level(self, node: Any, n: int) -> list[Any]:
        """A simulation's next states: the code samples until there is one (here ``MAX_RESAMPLES`` times)."""
        for _ in range(MAX_RESAMPLES):
            states = await self._new_states(node, n, in_tree=False)
            if states:
                return states
        raise OfficialCodeFails(f"{MAX_RESAMPLES} simulation samples without a child: the code goes on")

    async def _new_states(self, node: Any, n: int, in_tree: bool) -> list[Any]:
        raise NotImplementedError


class OfficialSearch(CodeSearch):
    """``lats_search`` of one question (module docstring). ``n``: ``--n_generate_sample``;
    ``n_evaluate``: ``--n_evaluate_sample``; ``iterations``: ``--iterations``."""

    def __init__(
        self,
        prompts: OfficialPrompts,
        gpt: Gpt,
        count: Count,
        env: OfficialEnv,
        question: str,
        n: int,
        n_evaluate: int,
        iterations: int,
        on_iteration: Callable[[int, int], None] | None = None,
    ) -> None:
        super().__init__(iterations, on_iteration)
        self.p, self.gpt, self.count, self.env = prompts, gpt, count, env
        self.x = f"Question: {question}"  # HotPotQAWrapper.reset
        self.n, self.n_evaluate = n, n_evaluate
        self.failed: list[dict[str, str]] = []
        self.value_cache: dict[str, float] = {}

    def _node(self, question: str, parent: ONode | None, **kw: Any) -> ONode:
        node = ONode(len(self.nodes), question, parent, **kw)
        self.nodes.append(node)
        return node

    async def _root(self) -> ONode:
        return self._node(self.x, None)

    async def _search(self, root: ONode) -> ONode | None:
        for i in range(self.iterations):
            self._iteration(i)
            node = self._select(root)
            if node is None:
                raise OfficialCodeFails("no node left to select: the code reselects forever here (lats_search)")
            if node.is_terminal and node.reward == 1:
                return node
            await self._expand(node)
            tries = 0
            while node.is_terminal or not node.children:
                tries += 1
                if tries > MAX_RESAMPLES:
                    raise OfficialCodeFails(f"{MAX_RESAMPLES} expansions without a child: the code goes on sampling")
                node = self._select(root)
                if node is None:
                    raise OfficialCodeFails("no node left to select: the code fails on None here (expand_node)")
                await self._expand(node)
            await self._evaluate(node)
            reward, terminal = await self._rollout(max(node.children, key=lambda c: c.value))
            self.simulated.append(terminal)
            if terminal.reward == 1:
                return terminal
            self._backpropagate(terminal, reward)
            won = [n for n in collect_nodes(root) if n.is_terminal and n.reward == 1]
            if won:
                return max(won, key=lambda n: n.value)
        return None

    async def _expand(self, node: ONode) -> None:
        if node.depth >= DEPTH_LIMIT:
            node.is_terminal = True
            return
        node.children.extend(await self._new_states(node, self.n, in_tree=True))

    async def _new_states(self, node: ONode, n: int, in_tree: bool) -> list[ONode]:
        """``generate_new_states``: ``n`` samples of the next step, each distinct one run in the env."""
        step = node.depth + 1
        y = f"Thought {step}: "
        samples = [y + s for s in await self._samples(generate_prompt(node), y, n)]
        unique: dict[str, ONode] = {}
        for sample in samples:
            lines = sample.split("\n")
            thought = next((_second_field(line) for line in lines if line.startswith(f"Thought {step}")), "")
            action = next((_second_field(line) for line in lines if line.startswith("Action") and ":" in line), None)
            key = f"{thought}::{action}"
            if key in unique or not action:
                continue
            kind = action.split("[")[0] if "[" in action else action
            argument = action.split("[")[1].split("]")[0] if "[" in action else ""
            observation, reward, done = await self.env.step(f"{kind.lower()}[{argument}]")
            child = self._node(
                node.question,
                node,
                state={"thought": thought, "action": action, "observation": observation},
                depth=step,
                is_terminal=reward == 1 or done,
                reward=reward,
                in_tree=in_tree,
                sample=sample[len(y) :],
                done=done,
                answer=self.env.answer if done else None,
            )
            unique[key] = child
            if child.is_terminal and reward == 0:
                self.failed.append(
                    {"trajectory": collect_trajectory(child), "final_answer": f"{kind.lower()}[{argument}]"}
                )
        return list(unique.values())

    async def _samples(self, x: str, y: str, n: int) -> list[str]:
        """``get_samples``: the reflections written anew where the code writes them, then the step."""
        trajectories = self._unique_trajectories()
        if len(trajectories) > len(self.reflection_map) and len(trajectories) < 4:
            self.reflection_map = await self._reflect(trajectories, x)
        return await self.gpt(self._cot_prompt(x, y), n, STEP_STOP, "step")

    def _unique_trajectories(self) -> list[str]:
        out, seen = [], set()
        for failed in self.failed:
            if failed["final_answer"] not in seen:
                out.append(node_trajectory_to_text(failed["trajectory"]))
                seen.add(failed["final_answer"])
            if len(out) >= MAX_TRAJECTORIES:
                break
        return out

    async def _reflect(self, trajectories: list[str], question: str) -> list[dict[str, str]]:
        """``generate_self_reflection``: the trajectories joined, split again at ``Question: ``, one
        reflection each (``gpt`` with the code's defaults: one sample, no stop)."""
        joined = "\n".join(f"{question}\n{t}\n" for t in trajectories)
        pieces = [f"Question: {t}" for t in joined.split("Question: ")[1:]]
        said = await asyncio.gather(
            *(self.gpt(self.p.reflection_prompt.format(trajectory=t), 1, None, "reflection") for t in pieces)
        )
        return [{"question": question, "trajectory": t, "reflection": r[0]} for t, r in zip(pieces, said, strict=True)]

    def _cot_prompt(self, x: str, y: str) -> str:
        """``cot_prompt_wrap``."""
        text = x + y
        if self.reflection_map:
            prompt = self.p.cot_prompt_feedback.format(trajectories=_shown(self.reflection_map), input=text)
            if self.count(prompt) > MAX_TOKEN_LENGTH:
                prompt = self.p.cot_prompt_feedback_short.format(
                    trajectories=_shown(self.reflection_map[:3]), input=text
                )
            return prompt
        prompt = self.p.cot_prompt.format(input=text)
        if self.count(prompt) > MAX_TOKEN_LENGTH:
            prompt = self.p.cot_prompt_short.format(input=text)
        return prompt

    async def _values(self, ys: list[str]) -> list[float]:
        """``get_values``: a repeated trajectory scores 0, a cached prompt its cached value; the
        others are asked at once (the code asks them one by one: the same requests)."""
        prompts = [self.p.value_prompt_reasoning.format(s="", input=y + "\nThis trajectory is ") for y in ys]
        first: dict[str, int] = {}
        for k, y in enumerate(ys):
            first.setdefault(y, k)
        asked = {p for k, p in enumerate(prompts) if first[ys[k]] == k and p not in self.value_cache}
        order = sorted(asked, key=prompts.index)
        replies = await asyncio.gather(*(self.gpt(p, self.n_evaluate, None, "value") for p in order))
        for prompt, said in zip(order, replies, strict=True):
            self.value_calls += len(said)
            value = value_outputs_unwrap(said)
            self.unparsed_values += value == -1
            self.value_cache[prompt] = value
        return [self.value_cache[p] if first[ys[k]] == k else 0 for k, p in enumerate(prompts)]

    async def _evaluate(self, node: ONode) -> None:
        """``evaluate_node``: values in the order of the non-terminal children, given to all in order."""
        open_children = [c for c in node.children if not c.is_terminal]
        votes = await self._values([generate_prompt(c) for c in open_children])
        for child, vote in zip(open_children, votes, strict=True):
            child.lm_value = vote
        votes = votes + [0] * (len(node.children) - len(votes))
        for child, vote in zip(node.children, votes, strict=False):
            child.value = vote

    async def _rollout(self, node: ONode) -> tuple[float, ONode]:
        depth, rewards = node.depth, [0.0]
        while not node.is_terminal and depth < ROLLOUT_DEPTH:
            states = await self._level(node, ROLLOUT_SAMPLES)
            for state in states:
                if state.is_terminal:
                    return state.reward, state
            values = await self._values([generate_prompt(c) for c in states])
            for state, value in zip(states, values, strict=True):
                state.lm_value = value
            best = values.index(max(values))
            rewards.append(max(values))
            node = states[best]
            depth += 1
            if depth == ROLLOUT_DEPTH:
                rewards = [-1]
        return sum(rewards) / len(rewards), node

    @staticmethod
    def _backpropagate(node: ONode | None, value: float) -> None:
        while node is not None:
            node.visits += 1
            got = -1 if node.is_terminal and node.reward == 0 else value
            node.value = (node.value * (node.visits - 1) + got) / node.visits
            node = node.parent


def _second_field(line: str) -> str:
    """``line.split(":")[1].strip()``: the text between the first and the second colon."""
    parts = line.split(":")
    if len(parts) < 2:
        raise OfficialCodeFails(f"a sample's line {line[:80]!r} has no colon: the code raises IndexError here")
    return parts[1].strip()


def _shown(mapping: Sequence[dict[str, str]]) -> str:
    return "".join(m["trajectory"] + "FAILED TRAJECTORY\nReflection: " + m["reflection"] + "\n\n" for m in mapping)


def collect_nodes(node: Any) -> list[Any]:
    """``collect_all_nodes``: the node and its descendants on the tree, depth first."""
    out = [node]
    for child in node.children:
        out.extend(collect_nodes(child))
    return out


# --- on the harness: one example of ``mode=lats lats.protocol=official`` -------------------------


def _request(model: Any, prompt: str, stop: str | None, temperature: float, index: int) -> Any:
    """The code's ``gpt(prompt, ...)`` for one sample: the prompt as one user message (a model that
    only completes text gets the prompt itself), 100 tokens, the stop where there is one."""
    from react_bench.models.base import ModelRequest
    from react_bench.types import Message

    stops = (stop,) if stop else ()
    if model.capabilities.raw_completion:
        return ModelRequest(
            prompt=prompt, max_tokens=MAX_TOKENS, temperature=temperature, stop=stops, sample_index=index
        )
    return ModelRequest(
        messages=(Message.user(prompt),),
        max_tokens=MAX_TOKENS,
        temperature=temperature,
        stop=stops,
        sample_index=index,
        cache_points=(),
    )


class OfficialModel:
    """The code's ``gpt(prompt, n, stop)`` on the run's model: ``n`` requests of one body (``_request``),
    the k-th asking of a (prompt, stop) pair carrying sample index k, so that the request cache keeps
    each sample apart; the run's ``lats.temperature``, 1.0 for a reflection (the module-level ``gpt``
    the code's task file calls, at its default). Counts the usage and the calls' figures."""

    def __init__(self, solver: Any) -> None:
        from collections import Counter

        from react_bench.runners.common import StepStats
        from react_bench.types import Usage

        self.model, self.temperature = solver.model, float(solver.settings.options.temperature)
        self.stats, self.usage = StepStats(), Usage()
        self.sent: Counter[tuple[str, str | None]] = Counter()

    async def __call__(self, prompt: str, n: int, stop: str | None, what: str) -> list[str]:
        start = self.sent[(prompt, stop)]
        self.sent[(prompt, stop)] += n  # before any await: the indices follow the order of the calls
        temperature = 1.0 if what == "reflection" else self.temperature
        return list(await asyncio.gather(*(self._one(prompt, stop, temperature, start + k) for k in range(n))))

    async def _one(self, prompt: str, stop: str | None, temperature: float, index: int) -> str:
        from react_bench.models.base import ModelResponse
        from react_bench.runners.common import stream_turn

        response = None
        async for item in stream_turn(
            self.model, _request(self.model, prompt, stop, temperature, index), 0, self.stats
        ):
            if isinstance(item, ModelResponse):
                response = item
        assert response is not None
        self.usage += response.usage
        return response.text


@dataclass(frozen=True)
class Shown:
    """One step of the chosen path as the record shows it: what the model wrote, the action as the
    code parsed it, what the environment answered."""

    depth: int
    said: str
    action: str
    observation: str


def official_outcome(
    gpt: OfficialModel,
    shown: Sequence[Shown],
    first_observation: str,
    tree: dict[str, Any] | None,
    *,
    chosen: bool,
    prediction: str,
    reason: str,
    reward: float | None,
    error: str | None,
) -> Any:
    """The example's ``Outcome``: the chosen path as its episode (events as a ReAct episode's), the
    tree in the record."""
    from react_bench.events import EpisodeFinished, StepFinished, StepStarted, ToolCalled, ToolExecutionFinished
    from react_bench.events import event_to_dict as ev
    from react_bench.methods.core import Outcome
    from react_bench.record import Episode
    from react_bench.types import Message, ToolResultBlock, Usage, message_to_dict

    history, events = [], []
    for step in shown:
        call, name = f"step-{step.depth}", step.action.split("[")[0].lower()
        history.append(message_to_dict(Message.assistant(step.said)))
        history.append(message_to_dict(Message("user", (ToolResultBlock(call, step.observation),))))
        events += [
            ev(StepStarted(step.depth)),
            ev(ToolCalled(step.depth, call, name, {}, text=step.action)),
            ev(ToolExecutionFinished(step.depth, call, name, step.observation, False)),
            ev(StepFinished(step.depth, Usage())),
        ]
    episodes = []
    if chosen:
        events.append(ev(EpisodeFinished(prediction, reason, len(shown), gpt.usage, reward=reward)))  # type: ignore[arg-type]
        episodes.append(
            Episode(route="lats", history=tuple(history), events=tuple(events), first_observation=first_observation)
        )
    return Outcome(
        prediction=prediction,
        route="lats",
        reason=reason,
        steps=len(shown),
        usage=gpt.usage,
        error=error,
        reward=reward,
        episodes=episodes,
        stats=gpt.stats,
        extra={"tree": tree},
    )


def official_tree(
    found: OfficialResult, path: Sequence[Any], nodes: list[dict[str, Any]], **labels: Any
) -> dict[str, Any]:
    """The record's tree of an official search: its labels, nodes, chosen path and figures."""
    return {
        "protocol": "official",
        **labels,
        "nodes": nodes,
        "chosen": [0, *(n.id for n in path)] if nodes else [],
        "reflections": [m["reflection"] for m in found.reflections],
        "iterations": found.iterations,
        "value_calls": found.value_calls,
        "unparsed_values": found.unparsed_values,
        "stuck": found.stuck,
        "stats": {"resets": 1, "replayed_steps": 0, "new_steps": len(nodes) - 1, "reused_envs": 0},
    }


def search_iteration(iteration: int, iterations: int, nodes: int) -> MethodStage:
    """Iteration ``iteration`` of at most ``iterations`` of an example's search begins, its tree
    ``nodes`` large: told to the run's sinks (the bar, the printer), not recorded."""
    return MethodStage("search iteration", iteration, iterations, f"{nodes} nodes")


def iteration_events(on_event: Any, total: int) -> Callable[[int, int], None]:
    """A search's ``on_iteration``: each iteration said as a method stage (``search_iteration``)."""

    def said(done: int, nodes: int) -> None:
        announce(on_event, search_iteration(done, total, nodes))

    return said


async def run_search(
    search: CodeSearch, close: Callable[[], None], start: Callable[[], Awaitable[Any]] | None = None
) -> tuple[OfficialResult | None, str | None]:
    """(the search's end, None), or (None, the error) where the model or the environment failed (the
    example ends as an error, re-runnable); the environment is closed either way."""
    from react_bench.environment import EpisodeAbort
    from react_bench.models.base import ModelError

    try:
        if start is not None:
            await start()
        return await search.run(), None
    except (ModelError, EpisodeAbort) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        close()


def path_to(node: Any) -> list[Any]:
    """The nodes from the root's child down to ``node`` (none for the root or no node)."""
    path = []
    while node is not None and node.parent is not None:
        path.append(node)
        node = node.parent
    return path[::-1]


def is_webshop(solver: Any) -> bool:
    """Whether the run's environments are a shop's pages (``environment.ShopFactory``)."""
    from react_bench.environment import ShopFactory

    return isinstance(solver.env_factory, ShopFactory)


async def solve_official(solver: Any, example: Any, on_event: Any) -> Any:
    """One question searched as the code searches it (``OfficialSearch``); the chosen node's path is
    the example's episode, its ``Finish`` the prediction (none where the chosen node is no Finish:
    the code's ``em`` is then 0 too). WebShop's is ``lats_official_webshop.solve_webshop``."""
    from react_bench.methods.core import Outcome
    from react_bench.types import Usage

    config = solver.settings.options
    if solver.env_factory is None or solver.grade is None:
        raise ValueError("lats.protocol=official needs the task's environment and its gold answers")
    env = solver.env_factory()
    if not (hasattr(env, "page") and hasattr(env, "step_text")):  # the Wikipedia environment, by its surface
        env.close()
        raise ConfigError("lats.protocol=official runs on the Wikipedia environment (task=hotpotqa) or WebShop")
    gpt = OfficialModel(solver)

    def em(answer: str) -> bool:
        return bool(solver.grade(example, Outcome(answer, "lats", "answered", 0, Usage())))

    async def act(text: str) -> str:
        return (await env.step_text(text)).text

    search = OfficialSearch(
        OfficialPrompts.pinned(),
        gpt,
        _counter(),
        OfficialEnv(act, lambda: env.page is not None, em),
        example.question,
        config.n,
        config.value_samples,
        config.iterations,
        iteration_events(on_event, config.iterations),
    )
    found, error = await run_search(search, env.close, lambda: env.reset(example))
    chosen = found.chosen if found is not None else None
    path = path_to(chosen)
    prediction = chosen.answer if chosen is not None and chosen.done and chosen.answer is not None else ""
    reason = "error" if error else ("answered" if chosen is not None and chosen.done else "step_limit")
    shown = [Shown(n.depth, f"Thought {n.depth}: {n.sample}", n.state["action"], n.state["observation"]) for n in path]
    tree = None
    if found is not None:
        labels = {"source": SOURCE, "feedback": "oracle", "select": "reward", "selected_by": "gold answer"}
        tree = official_tree(found, path, [node_dict(n, answer=n.answer) for n in found.nodes], **labels)
    return official_outcome(
        gpt,
        shown,
        example.question,
        tree,
        chosen=chosen is not None,
        prediction=prediction,
        reason=reason,
        reward=None,
        error=error,
    )


def node_dict(node: Any, answer: str | None = None, env_reward: float | None = None) -> dict[str, Any]:
    """A node of an official search as the record keeps it (the project's tree's fields)."""
    out: dict[str, Any] = {
        "id": node.id,
        "parent": None if node.parent is None else node.parent.id,
        "depth": node.depth,
        "text": node.sample,
        "action": node.state["action"] or None,
        "observation": node.state["observation"],
        "children": [c.id for c in node.children],
        "value": round(float(node.value), 6),
        "lm_value": node.lm_value,
        "visits": node.visits,
        "terminal": node.is_terminal,
        "answer": answer,
        "reward": node.reward,
        "env_reward": env_reward,
    }
    if not node.in_tree:
        out["simulated"] = True  # a simulation's node: the code never attaches it to its parent
    return out


_COUNTERS: dict[str, Count] = {}


def _counter() -> Count:
    """GPT-2's count, built once a process."""
    if "gpt2" not in _COUNTERS:
        _COUNTERS["gpt2"] = gpt2_counter()
    return _COUNTERS["gpt2"]


# --- its price -----------------------------------------------------------------------------------

REFLECTION_CALLS = 1 + 2 + 3  # written anew at 1, 2 and 3 distinct failed answers (get_samples)


def template_calls(solver: Any, question: str) -> Callable[[str, int, int], Any]:
    """``calls(template, depth, k)``: the usage of ``k`` calls of a template around the question and
    ``depth`` steps (``step_growth`` a step), each writing half its 100 tokens."""
    from react_bench.methods.pricing import step_growth, times
    from react_bench.types import Usage

    growth, asked = step_growth(solver), len(question) // 4

    def calls(template: str, depth: int, k: int) -> Usage:
        return times(Usage(input_tokens=len(template) // 4 + asked + depth * growth, output_tokens=MAX_TOKENS // 2), k)

    return calls


def official_estimate(solver: Any, question: str) -> Any:
    """The likely search, as ``Lats.estimate`` prices the project's: every iteration's expansion
    (``lats.n`` samples and their values, at depth 0 first and 1 after) and a simulation from
    the child to depth 4 (5 samples and 5 values a level), each call writing half its 100 tokens;
    the reflections written anew (6). The prompts are the code's templates (``OfficialPrompts``)
    around the question and the steps; nothing is read from a prompt cache (its requests carry no
    breakpoint)."""
    from react_bench.methods.pricing import Estimate
    from react_bench.types import Usage

    config = solver.settings.options
    prompts = OfficialPrompts.pinned()
    calls = template_calls(solver, question)
    total = Estimate(0, Usage())
    for i in range(config.iterations):
        d = 0 if i == 0 else 1
        samples = calls(prompts.cot_prompt, d, config.n) + calls(prompts.value_prompt_reasoning, d + 1, config.n)
        total = total + Estimate(2 * config.n, samples)
        for level in range(d + 1, ROLLOUT_DEPTH):
            simulated = calls(prompts.cot_prompt, level, ROLLOUT_SAMPLES)
            simulated = simulated + calls(prompts.value_prompt_reasoning, level + 1, ROLLOUT_SAMPLES)
            total = total + Estimate(2 * ROLLOUT_SAMPLES, simulated)
    reflect = calls(prompts.reflection_prompt, ROLLOUT_DEPTH, REFLECTION_CALLS)
    return total + Estimate(REFLECTION_CALLS, reflect)


def official_most(n: int, iterations: int) -> tuple[int, int]:
    """(calls, rounds) at most: each iteration's expansion sampled until it has a child (at most
    ``MAX_RESAMPLES`` more times), its values, and a simulation of 3 levels, each sampled up to
    ``MAX_RESAMPLES`` times with its values; the reflections."""
    expansion = (1 + MAX_RESAMPLES) * n + n
    simulation = (ROLLOUT_DEPTH - 1) * (MAX_RESAMPLES * ROLLOUT_SAMPLES + ROLLOUT_SAMPLES)
    rounds = (1 + MAX_RESAMPLES) + 1 + (ROLLOUT_DEPTH - 1) * (MAX_RESAMPLES + 1)
    return iterations * (expansion + simulation) + REFLECTION_CALLS, iterations * rounds + 3
