"""``lats.protocol=official`` (methods/lats_official.py): LATS's own HotpotQA code, ported.

The search itself is checked with templates of the test's own (its quirks: one environment for the
whole tree, the code's parsing and prompt concatenation, reflections written anew, the value
parser, the depth-4 simulation). Against the Messages stand-in, where LATS's pinned
``hotpot/hotpot.py`` can be had (a prepared copy, the cache, or ``REACT_BENCH_GITHUB``), the first
expansion's and the value calls' requests are compared with the code's prompts byte for byte.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from react_bench import upstream
from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.methods import lats_official
from react_bench.methods.core import SolveSettings
from react_bench.methods.lats import LatsConfig
from react_bench.methods.lats_official import (
    MAX_TOKEN_LENGTH,
    OfficialEnv,
    OfficialPrompts,
    OfficialSearch,
    generate_prompt,
    node_trajectory_to_text,
)
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.github_raw import RawStandIn
from react_bench.testing.hub_server import HubStandIn, write_hotpotqa_repo
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from tests.support_oracle import gold_answers

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "REACT_BENCH_TEST_LATS_OFFICIAL_KEY"
OWN = OfficialPrompts(
    cot_prompt="C|{input}|",
    cot_prompt_short="c|{input}|",
    cot_prompt_feedback="F|{trajectories}|{input}|",
    cot_prompt_feedback_short="f|{trajectories}|{input}|",
    value_prompt_reasoning="V|{input}|",
    reflection_prompt="R|{trajectory}|",
)


class Script:
    """The model of the search test: a step by how often its prompt was asked, a value by the
    trajectory's last action, a reflection said plainly. Every call is kept."""

    def __init__(self, steps: dict[int, list[str]]) -> None:
        self.steps, self.calls = steps, []  # depth -> the samples of that depth, in turn
        self.asked: Counter[int] = Counter()

    async def __call__(self, prompt: str, n: int, stop: str | None, what: str) -> list[str]:
        self.calls.append((prompt, n, stop, what))
        if what == "reflection":
            return ["I answered before reading."]
        if what == "value":
            return ["no digits here" if "Lookup" in prompt else "so the correctness score is 7"]
        depth = int(re.findall(r"Thought (\d+): \|$", prompt)[-1])
        said = []
        for _ in range(n):
            options = self.steps[depth]
            said.append(options[self.asked[depth] % len(options)])
            self.asked[depth] += 1
        return said


def env_of(acted: list[str], gold: str = "Paris") -> OfficialEnv:
    pages = {"search[France]": "France is a country. Its capital is Paris."}

    async def act(text: str) -> str:
        acted.append(text)
        return pages.get(text, f"observed {text}")

    return OfficialEnv(act, lambda: any(a.startswith("search[") for a in acted), lambda a: a.strip() == gold)


async def test_the_search_runs_as_the_code_runs_it() -> None:
    script = Script(
        {
            1: ["I search.\nAction 1: Search[France]\n", "I guess.\nAction 1: Finish[Lyon]\n"],
            2: ["Look it up.\nAction 2: Lookup[capital]\n", "I guess again.\nAction 2: Finish[Nice]\n"],
            3: ["Found: it.\nAction 3: Finish[Paris]\n"],
        }
    )
    acted: list[str] = []
    search = OfficialSearch(OWN, script, len, env_of(acted), "What is the capital of France?", 2, 1, 5)
    result = await search.run()

    # the first request: the question and "Thought 1: " with nothing between (generate_prompt + y)
    assert script.calls[0] == ("C|Question: What is the capital of France?Thought 1: |", 2, "Observation", "step")
    # one environment for the tree: the actions ran in the order sampled, never replayed (a replay
    # would search France again before each lookup); a Finish is the wrapper's, shown with its reward
    assert acted == ["search[France]", "lookup[capital]", "lookup[capital]"]
    nodes = result.nodes
    assert [n.state["action"] for n in nodes[1:]] == [
        "Search[France]",
        "Finish[Lyon]",
        "Lookup[capital]",
        "Finish[Nice]",
        "Finish[Nice]",
        "Lookup[capital]",
        "Finish[Paris]",
    ]
    assert nodes[2].state["observation"] == "Episode finished, reward = 0\n" and nodes[2].is_terminal
    # the first simulation's nodes were never attached: the root's child was expanded again
    assert [c.id for c in nodes[1].children] == [5, 6] and not nodes[3].in_tree and not nodes[4].in_tree
    # the values go to the non-terminal children in order, then zeros: Finish[Nice] (terminal) takes
    # the lookup's -1 (its reply held no digit: unparsed), the lookup the padding's 0
    assert (nodes[5].value, nodes[6].value, nodes[6].lm_value) == (-1, 0, -1) and result.unparsed_values == 1
    # the first failure's reflection: the "question" is the prompt of the node being expanded
    reflections = [c[0] for c in script.calls if c[3] == "reflection"]
    assert reflections[0] == "R|" + generate_prompt(nodes[1]) + (
        "\nThought 1: I guess.\nAction 1: Finish[Lyon]\nObservation 1: Episode finished, reward = 0\n|"
    )
    # a second distinct failure: both reflections written anew before the next expansion (the first
    # now ends with the line break that joined it to the second, as the code's split leaves it)
    assert len(reflections) == 3 and reflections[1] == reflections[0][:-1] + "\n|"
    assert "Action 2: Finish[Nice]" in reflections[2]
    steps = [c for c in script.calls if c[3] == "step"]
    assert (
        steps[1][0].startswith("F|Question: ")
        and "FAILED TRAJECTORY\nReflection: I answered before reading.\n\n|" in steps[1][0]
    )
    assert [c[1] for c in steps] == [2, 5, 2, 5]  # a simulation samples 5, whatever n is
    # the code's thought: the text between the first and the second colon; the success ends the search
    assert nodes[7].state["thought"] == "Found" and nodes[7].reward == 1 and not nodes[7].in_tree
    assert result.chosen is nodes[7] and nodes[7].answer == "Paris" and result.iterations == 2


async def test_the_long_prompt_switches_to_the_short_one_and_the_simulation_stops_at_depth_4() -> None:
    script = Script({d: [f"Go on.\nAction {d}: Search[page {d}]\n"] for d in range(1, 9)})
    acted: list[str] = []
    long = lambda text: MAX_TOKEN_LENGTH + 1 if text.startswith("C|") else 0  # noqa: E731
    search = OfficialSearch(OWN, script, long, env_of(acted), "Q?", 1, 1, 1)
    result = await search.run()
    steps = [c[0] for c in script.calls if c[3] == "step"]
    assert steps and all(s.startswith("c|") for s in steps)  # every cot_prompt counted over 4,000: the short one
    # one iteration: the expansion at depth 0, the simulation from depth 1 to the absolute depth 4
    assert [int(re.findall(r"Thought (\d+)", s)[-1]) for s in steps] == [1, 2, 3, 4]
    ended = max(result.nodes, key=lambda n: n.depth)
    assert ended.depth == 4 and not ended.in_tree and ended.visits == 1
    assert result.nodes[1].value == -1  # the simulation reached depth 4: its reward is -1
    assert result.chosen is result.nodes[0] and result.iterations == 1


def test_the_codes_trajectory_text_reads_str_node_lines() -> None:
    lines = (
        "Node(depth=0, value=0.00, visits=1, thought=, action=, observation=)\n"
        "Node(depth=1, value=0.70, visits=1, thought=I search, action=Search[X (band)], "
        "observation=X (band) is. More)\n"
        "Node(depth=2, value=0.00, visits=0, thought=t, action=Finish[y], observation=Episode finished, reward = 0\n)"
    )
    assert node_trajectory_to_text(lines) == (
        "Thought 1: I search\nAction 1: Search[X (band)]\nObservation 1: X (band\n"
        "Thought 2: t\nAction 2: Finish[y]\nObservation 2: Episode finished, reward = 0"
    )


def test_generate_prompt_joins_the_question_and_steps_as_the_code_does() -> None:
    root = lats_official.ONode(0, "Question: Q?", None)
    child = lats_official.ONode(
        1, "Question: Q?", root, state={"thought": "t", "action": "Search[A]", "observation": "o"}, depth=1
    )
    assert generate_prompt(root) == "Question: Q?"
    assert generate_prompt(child) == "Question: Q?\nThought 1: t\nAction 1: Search[A]\nObservation 1: o"


def test_the_official_protocol_is_refused_where_the_code_has_none() -> None:
    with pytest.raises(ConfigError, match="task=alfworld runs lats.protocol=project"):
        LatsConfig(protocol="official").checked("alfworld", False)
    # WebShop: the shop's score is the code's reward, honest feedback (its choice by it is oracle-like)
    assert LatsConfig(protocol="official").checked("webshop", False).feedback == "honest"
    with pytest.raises(ConfigError, match="lats.reflections"):
        LatsConfig(protocol="official", reflections=1).checked("hotpotqa", True)
    assert LatsConfig(protocol="official").checked("hotpotqa", True).feedback == "oracle"


# --- against the Messages stand-in, with LATS's own prompts ---------------------------------------


@pytest.fixture(scope="module")
def lats_file() -> bytes:
    try:
        return upstream.fetch("lats/hotpot.py").read_bytes()
    except upstream.UpstreamError:
        pytest.skip(f"needs {upstream.pinned('lats/hotpot.py').label}: set REACT_BENCH_GITHUB to a host serving it")


def gpt2_like_repo(folder: Path, texts: list[str]) -> Path:
    """A byte-level BPE ``vocab.json`` in GPT-2's layout, each pre-token of ``texts`` one token (so
    that a count is near GPT-2's): the hub's ``openai-community/gpt2`` as this test serves it."""
    import regex

    table = lats_official._bytes_to_unicode()
    vocab: dict[str, int] = {table[b]: b for b in range(256)}
    pattern = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    for text in texts:
        for piece in pattern.findall(text):
            chars = "".join(table[b] for b in piece.encode())
            for end in range(2, len(chars) + 1):
                vocab.setdefault(chars[:end], len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    return folder


def official_responder(golds: dict[str, str]) -> Any:
    """A step's k-th asking (in the order requests arrive: the samples of one prompt are alike):
    a search at step 1, a wrong answer, the gold from step 2; a value 6; a reflection."""
    seen: Counter[str] = Counter()

    def reply(body: dict[str, Any]) -> Reply:
        content = body["messages"][0]["content"]
        text = content if isinstance(content, str) else "".join(b["text"] for b in content)
        if text.endswith("This trajectory is \n"):
            return Reply.text("It looks right so far: 6.")
        if "Previous trial:" in text:
            return Reply.text("I should have searched first.")
        question = text.rsplit("\nQuestion: ", 1)[1].split("Thought 1: ")[0].split("\n")[0].strip()
        step = int(re.findall(r"Thought (\d+): \n$", text)[-1])
        k = seen[text] % 3
        seen[text] += 1
        if k == 0 and step == 1:
            return Reply.text(f"I search it.\nAction 1: Search[{question[:30]}]\n")
        if k == 1 or step == 1:
            return Reply.text(f"I guess.\nAction {step}: Finish[a wrong guess]\n")
        return Reply.text(f"I know it.\nAction {step}: Finish[{golds.get(question, '?')}]\n")

    return reply


async def test_the_first_expansion_and_the_value_requests_are_the_codes_byte_for_byte(
    tmp_path: Path, lats_file: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = upstream.pinned("lats/hotpot.py")
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")
    monkeypatch.setenv("REACT_BENCH_REQUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "rb-cache"))
    monkeypatch.setattr(lats_official, "_COUNTERS", {})
    raw = RawStandIn({pinned.url_path: lats_file}).start()
    monkeypatch.setenv("REACT_BENCH_GITHUB", raw.base_url)
    prompts = OfficialPrompts.pinned()
    hub = HubStandIn(
        {}, models={"openai-community/gpt2": gpt2_like_repo(tmp_path / "gpt2", list(prompts.__dict__.values()))}
    )
    golds = gold_answers(1)
    ((question, gold),) = golds.items()
    try:
        with hub, MessagesServer(responder=official_responder(golds)) as server:
            monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)

            def run(run_id: str, **extra: Any) -> RunConfig:
                return RunConfig(
                    task=TaskConfig(name="hotpotqa", n=1),
                    model=claude_model_config(server.base_url, KEY_ENV, "claude-sonnet-4-6"),  # type: ignore[arg-type]
                    solve=SolveSettings(mode="lats", options=LatsConfig(protocol="official", iterations=3)),
                    results_dir=tmp_path,
                    run_id=run_id,
                    progress=False,
                    **extra,
                )

            dry = await evaluate(run("dry", dry_run=True), out=io.StringIO())
            assert server.requests == []  # the dry run prices the code's prompts without a call
            result = await evaluate(run("official"), out=io.StringIO())
            bodies = [r.body for r in server.requests if r.path.endswith("/messages")]
    finally:
        raw.stop()

    def text(body: dict[str, Any]) -> str:
        (message,) = body["messages"]
        assert message["role"] == "user"
        content = message["content"]
        return content if isinstance(content, str) else "".join(b["text"] for b in content)

    first = prompts.cot_prompt.format(input=f"Question: {question}" + "Thought 1: ")  # the code's x + y
    assert [text(b) for b in bodies[:5]] == [first] * 5  # --n_generate_sample 5: five samples of it
    for body in bodies[:5]:
        assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (100, 1.0, ["Observation"])
    record = json.loads((result.run_dir / "examples.jsonl").read_text().splitlines()[0])
    tree = record["method"]["tree"]
    assert tree["protocol"] == "official" and tree["feedback"] == "oracle"
    children = [n for n in tree["nodes"] if n["parent"] == 0 and not n.get("simulated")]
    open_children = [n for n in children if not n["terminal"]]
    assert open_children, "the search child of the root is open"
    values = [text(b) for b in bodies if text(b).endswith("This trajectory is \n")]
    for child in open_children:
        trajectory = (
            f"Question: {question}\nThought 1: {child['text'].split(chr(10))[0]}\nAction 1: {child['action']}\n"
            f"Observation 1: {child['observation']}"
        )
        expected = prompts.value_prompt_reasoning.format(s="", input=trajectory + "\nThis trajectory is ")
        assert expected in values
    for body in bodies:
        if text(body).endswith("This trajectory is \n"):
            assert body["max_tokens"] == 100 and body["temperature"] == 1.0 and "stop_sequences" not in body
    # the gold answer ended the search (oracle feedback, said in the metrics); the chosen path is the episode
    assert (record["prediction"], record["em"]) == (gold, 1.0)
    chosen = [n for n in tree["nodes"] if n["id"] == tree["chosen"][-1]]
    assert chosen[0]["observation"] == "Episode finished, reward = 1\n" and chosen[0]["reward"] == 1
    assert record["trajectory"][0]["history"][-1]["content"][0]["content"] == "Episode finished, reward = 1\n"
    estimate = json.loads((dry.run_dir / "dry_run.json").read_text())
    assert 0 < estimate["calls_expected"] <= estimate["calls_at_most"] and record["calls"] <= estimate["calls_at_most"]
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    assert metrics["method"]["oracle_feedback"] is True and metrics["method"]["protocol"] == "official"


# --- split=lats100: LATS's questions --------------------------------------------------------------


def test_lats100_is_the_first_100_questions_of_the_hubs_train_split_with_their_own_wiki(
    tmp_path: Path, data_dir: Path
) -> None:
    from tests.support import fresh_env

    records = json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_685.json").read_text())
    # a train split of 130 (the data folder's questions, round again where it holds fewer: a generated one has ~100)
    train = [
        {k: v for k, v in records[(200 + i) % len(records)].items() if k != "dev_index"} | {"_id": f"train-{i:03d}"}
        for i in range(130)
    ]
    repo = write_hotpotqa_repo(records[:3], tmp_path / "hub" / "hotpot_qa", train=train)
    code = (
        "import json\n"
        "from react_bench.tasks import TaskConfig, load_task\n"
        "task = load_task('hotpotqa'); config = TaskConfig(name='hotpotqa', split='lats100')\n"
        "print(json.dumps([e.id for e in task.examples(config)]))\n"
        "print(task.local_wiki(config))\n"
    )
    with HubStandIn({"hotpotqa/hotpot_qa": repo}) as hub:
        env = fresh_env(tmp_path, hub.endpoint)
        ran = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, ran.stderr[-3000:]
        again = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
    ids, wiki = ran.stdout.splitlines()[:2]
    assert json.loads(ids) == [r["_id"] for r in train[:100]]  # the first 100, in the split's order
    assert "hotpot_qa/distractor[train]" in ran.stderr and "downloading 1 files" in ran.stderr
    assert Path(wiki).is_file() and "hotpotqa-lats100" in Path(wiki).name  # built from their own paragraphs
    assert again.returncode == 0 and again.stdout == ran.stdout and "building" not in again.stderr
    with pytest.raises(ConfigError, match="split=lats100 is HotpotQA's"):
        from react_bench.tasks import load_task

        load_task("webshop").examples(TaskConfig(name="webshop", split="lats100"))


def test_gpt2s_count_comes_from_the_hubs_vocabulary_or_the_run_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    text = "Question: Were Scott Derrickson and Ed Wood of the same nationality?Thought 1: "
    repo = gpt2_like_repo(tmp_path / "gpt2", [text])
    with HubStandIn({}, models={"openai-community/gpt2": repo}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        count = lats_official.gpt2_counter()
        assert ("GET", "/openai-community/gpt2/resolve/main/vocab.json") in hub.requests and hub.downloads()
    # each pre-token of the text is one token of that vocabulary; an unseen word falls to its bytes
    assert count(text) == 17 and count("Zq") == 2
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="GPT-2's tokenizer.*set HF_ENDPOINT") as err:
        lats_official.gpt2_counter()
    assert "\n" not in str(err.value)
