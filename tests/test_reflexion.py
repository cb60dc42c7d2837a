"""``mode=reflexion``: trials, an evaluator, reflections kept in the next trial's prompt, the trial
log that a killed run resumes from, and the learning curve. HotpotQA runs against the Messages API
stand-in, with a model that answers wrong until its prompt holds a reflection. ALFWorld runs on
generated games, with a scripted actor that loops until the heuristic halts it."""

from __future__ import annotations

import asyncio
import io
import json
import re
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from react_bench.environment import Action, Example, Observation
from react_bench.errors import ConfigError
from react_bench.evaluate import evaluate
from react_bench.loop import LoopConfig
from react_bench.methods.core import SolveSettings
from react_bench.methods.reflexion import (
    Halting,
    ReflexionConfig,
    TrialCurve,
    memory_text,
    reflection_prompt,
    verdict_of,
)
from react_bench.results import format_table
from react_bench.runconfig import RunConfig
from react_bench.tasks import TaskConfig, task_info
from react_bench.testing.messages_server import MessagesServer, Reply, claude_model_config
from tests.support import composed
from tests.support_oracle import gold_answers, question_of

KEY_ENV = "REACT_BENCH_TEST_REFLEXION_KEY"
REFLECTION = "I answered from memory without searching; next time I will search the entity first."
_MEMORY = re.compile(r"^Reflection (\d+): ", re.M)


def curve_of(metrics: Any) -> TrialCurve | None:
    """A run's learning curve: its method's summary (``RunMetrics.method``), read as Reflexion's."""
    return TrialCurve.from_dict(metrics.method) if metrics is not None and metrics.method else None


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def asks_for_reflection(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]
    return "`Reflection:`" in _text(body["messages"][0]) or (
        last["role"] == "assistant" and _text(last).strip() == "Reflection:"
    )


class Learner:
    """A model that answers wrong until its prompt holds ``needs`` reflections (per question, in
    data order), and writes a reflection when asked for one. ``hold``: the actor request of
    (question index, reflections held) at which it waits for ``release`` (a run killed there)."""

    def __init__(self, golds: dict[str, str], needs: tuple[int, ...], hold: tuple[int, int] | None = None) -> None:
        self.golds, self.needs, self.order = golds, needs, list(golds)
        self.hold, self.reached, self.release = hold, threading.Event(), threading.Event()
        self.asked: list[tuple[str, int, str]] = []  # (question, reflections held, "act" | "reflect")
        self.lock = threading.Lock()
        self.written = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if asks_for_reflection(body):
            question = question_of(body)
            with self.lock:
                self.asked.append((question, -1, "reflect"))
                self.written += 1
            return Reply.text(f"Reflection: {REFLECTION} (#{self.written})")
        question = question_of(body)
        held = len(_MEMORY.findall(_text(body["messages"][0])))
        with self.lock:
            self.asked.append((question, held, "act"))
        index = self.order.index(question)
        if self.hold == (index, held) and not self.release.is_set():
            self.reached.set()
            self.release.wait(30)
        right = held >= self.needs[index]
        answer = self.golds[question] if right else "nobody"
        return Reply.text(f"Thought 1: I know this one.\nAction 1: Finish[{answer}]")


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def config(server: MessagesServer, tmp_path: Path, run_id: str, n: int, **extra: Any) -> RunConfig:
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=n),
        model=claude_model_config(server.base_url, KEY_ENV),  # type: ignore[arg-type]
        solve=SolveSettings(mode="reflexion", options=ReflexionConfig(trials=3, evaluator="oracle")),
        results_dir=tmp_path,
        run_id=run_id,
        progress=False,
        **extra,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_reflection_reaches_the_next_trial_which_succeeds_with_oracle_feedback(
    tmp_path: Path, key: None
) -> None:
    golds = gold_answers(2)
    learner = Learner(golds, needs=(1, 0))  # the first question needs one reflection; the second none
    with MessagesServer(responder=learner) as server:
        result = await evaluate(config(server, tmp_path, "first", 2), out=io.StringIO())
        bodies = [r.body for r in server.requests]
    first, second = lines(result.run_dir / "examples.jsonl")
    # the first question: wrong at trial 1, a reflection, right at trial 2 (whose prompt holds it)
    assert [t["trial"] for t in first["method"]["trials"]] == [1, 2] and first["correct"] is True
    one, two = first["method"]["trials"]
    assert (one["success"], one["evaluator"], one["prediction"]) == (False, "oracle", "nobody")
    assert one["reflection"].startswith(REFLECTION) and one["feedback"] == "The answer 'nobody' is incorrect."
    assert (two["success"], two["memory"], two["reflection"]) == (True, [one["reflection"]], None)
    acted = [b for b in bodies if not asks_for_reflection(b)]
    assert f"Reflection 1: {one['reflection']}" in _text(acted[1]["messages"][0])  # trial 2's prompt
    assert "Reflection 1:" not in _text(acted[0]["messages"][0])  # trial 1's did not
    assert [e["trial"] for e in first["trajectory"]] == [1, 2]
    assert first["trajectory"][1]["memory"] == memory_text([one["reflection"]])
    # the second: right at trial 1, no reflection
    assert [(t["trial"], t["success"], t["reflection"]) for t in second["method"]["trials"]] == [(1, True, None)]
    assert len(bodies) == 4  # 3 actor calls and 1 reflection
    # the run says oracle feedback; the curve shows the second trial's gain
    summary = result.summary
    assert summary is not None and curve_of(summary) is not None
    curve = curve_of(summary)
    assert curve.oracle_feedback and curve.evaluator == "oracle"
    assert [c.mean for c in curve.curve] == [0.5, 1.0, 1.0]
    assert curve.curve[0].ci95[0] < 0.5 < curve.curve[0].ci95[1]  # Wilson's interval, 1 of 2
    assert (curve.trials_run, curve.reflections) == (3, 1)
    assert curve.cost_per_trial is not None and curve.cost_per_success is not None
    written = json.loads((result.run_dir / "metrics.json").read_text())["method"]
    assert written["oracle_feedback"] is True and [c["mean"] for c in written["curve"]] == [0.5, 1.0, 1.0]
    table = format_table(summary, task_info("hotpotqa"))
    assert "ORACLE FEEDBACK" in table and "right after trial 2" in table
    # the trial log holds every trial, with its calls (the cassette line of the example starts the same)
    logged = lines(result.run_dir / "trials.jsonl")
    assert [(t["id"], t["trial"]["trial"]) for t in logged] == [(first["id"], 1), (first["id"], 2), (second["id"], 1)]
    cassette = lines(result.run_dir / "calls.jsonl")[0]["completions"]
    assert cassette == [c for t in logged[:2] for c in t["calls"]["completions"]]
    # the run's recording replays every trial: the same answers, reflections and curve, no server
    replay = RunConfig(
        task=TaskConfig(name="hotpotqa", n=2),
        model={"provider": "replay", "cassette": str(result.run_dir / "calls.jsonl")},
        solve=SolveSettings(mode="reflexion", options=ReflexionConfig(trials=3, evaluator="oracle")),
        results_dir=tmp_path / "replayed",
        run_id="replayed",
        progress=False,
    )
    replayed = await evaluate(replay, out=io.StringIO())
    again = lines(replayed.run_dir / "examples.jsonl")
    assert [[(t["prediction"], t["reflection"]) for t in r["method"]["trials"]] for r in again] == [
        [(t["prediction"], t["reflection"]) for t in r["method"]["trials"]] for r in (first, second)
    ]
    assert replayed.summary is not None and curve_of(replayed.summary) == replace(
        curve_of(summary), cost_per_trial=None, cost_per_success=None
    )
    # the studies: Reflexion's row, marked, with Reflexion's published figures beside it; the curve
    from react_bench.studies import learning_curves, load_runs, table1, write_study

    runs = load_runs([result.run_dir])  # (the replay's run is another)
    grid, _ = table1(runs)
    row = grid[grid["mode"] == "reflexion"].iloc[0]
    assert "oracle feedback" in row["HotpotQA EM"]
    assert "text-davinci-003 30 -> 55" in row["HotpotQA EM Reflexion paper"]
    curves = learning_curves(runs)
    assert list(curves["trial"]) == [1, 2, 3] and list(curves["right"]) == ["50.0", "100.0", "100.0"]
    assert set(curves["evaluator"]) == {"oracle (oracle feedback)"}
    study = write_study(runs, tmp_path / "study")
    assert {"learning_curve.md", "learning_curve.png"} <= set(study["written"])
    shown = (tmp_path / "study" / "learning_curve.md").read_text()
    assert re.search(r"\| 2 +\| 100\.0 +\| \[34\.2, 100\.0\]", shown) and "oracle feedback" in shown


async def test_a_killed_run_resumes_mid_example_without_running_a_trial_twice(tmp_path: Path, key: None) -> None:
    golds = gold_answers(2)
    needs = (1, 2)  # the second question needs two reflections: right at trial 3
    whole = Learner(golds, needs)
    with MessagesServer(responder=whole.__call__) as server:
        uninterrupted = await evaluate(config(server, tmp_path, "whole", 2, request_cache="off"), out=io.StringIO())
    killed = Learner(golds, needs, hold=(1, 1))  # the second question's trial 2, mid-trial
    with MessagesServer(responder=killed.__call__) as server:
        run = asyncio.create_task(evaluate(config(server, tmp_path, "cut", 2, request_cache="off"), out=io.StringIO()))
        assert await asyncio.to_thread(killed.reached.wait, 30)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        killed.release.set()
        run_dir = tmp_path / "hotpotqa"
        (cut,) = [p for p in run_dir.rglob("cut") if p.is_dir()]
        log = cut / "trials.jsonl"
        kept = log.read_text().splitlines(keepends=True)
        assert len(kept) == 3  # the first question's 2 trials and the second's first
        log.write_text("".join(kept) + kept[-1][:40])  # and a line torn by the kill
        assert not (cut / "examples.jsonl").read_text().count(golds[list(golds)[1]])
        resumed = await evaluate(
            config(server, tmp_path, "cut", 2, request_cache="off", resume=True), out=io.StringIO()
        )
    assert resumed.n_new == 1
    second = list(golds)[1]
    asked = [(q, held, kind) for q, held, kind in killed.asked if q == second]
    # trial 1 and its reflection ran once; trial 2 twice (the one killed, the one finished); trial 3 once
    assert asked.count((second, 0, "act")) == 1 and asked.count((second, 1, "act")) == 2
    assert asked.count((second, 2, "act")) == 1 and asked.count((second, -1, "reflect")) == 2
    records = lines(cut / "examples.jsonl")
    assert sorted(len(r["method"]["trials"]) for r in records) == [2, 3]
    for r in records:
        assert [t["trial"] for t in r["method"]["trials"]] == list(range(1, len(r["method"]["trials"]) + 1))
    assert resumed.summary is not None and uninterrupted.summary is not None
    ours, theirs = curve_of(resumed.summary), curve_of(uninterrupted.summary)
    assert ours is not None and theirs is not None
    assert ours.curve == theirs.curve and [c.mean for c in ours.curve] == [0.0, 0.5, 1.0]
    assert (ours.trials_run, ours.reflections) == (theirs.trials_run, theirs.reflections) == (5, 3)
    # the resumed example's cassette line holds every trial's calls, the logged ones first
    by_id = {c["id"]: c for c in lines(cut / "calls.jsonl")}
    whole_by_id = {c["id"]: c for c in lines(uninterrupted.run_dir / "calls.jsonl")}
    (resumed_id,) = [r["id"] for r in records if len(r["method"]["trials"]) == 3]
    assert by_id[resumed_id]["completions"] == whole_by_id[resumed_id]["completions"]


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_the_heuristic_halts_a_looping_actor_on_alfworld_and_a_reflection_is_written(
    scripted: Any, tmp_path: Path, runner: str
) -> None:
    from react_bench.tasks.alfworld import AlfworldConfig, AlfworldTask
    from tests.test_alfworld import tool_turns

    small = AlfworldConfig(games=12, train_games=18, seed=0)
    (game,) = AlfworldTask().examples(TaskConfig(name="alfworld", n=1), small)
    walk = json.loads(Path(game.metadata["gamefile"]).read_text())["walkthrough"]
    lesson = " I only looked around and never moved; next time I will go to the likely places in turn."
    if runner == "text":
        model = scripted([" look"] * 4 + [lesson] + [f" {c}" for c in walk])
    else:
        model = scripted([*tool_turns(["look"] * 4), lesson, *tool_turns(walk)])
    cfg = RunConfig(
        task=TaskConfig(name="alfworld", n=1),
        model={"provider": "scripted", "label": "looper"},
        solve=SolveSettings(
            mode="reflexion",
            runner=runner,
            loop=LoopConfig(max_steps=50),
            options=ReflexionConfig(trials=3, halt=True),
        ),
        env=small,
        results_dir=tmp_path,
        progress=False,
        run_id="loop",
    )
    result = await evaluate(cfg, model=model)
    (record,) = lines(result.run_dir / "examples.jsonl")
    one, two = record["method"]["trials"]
    assert (one["reason"], one["steps"], one["success"], one["evaluator"]) == ("halted", 4, False, "env")
    assert "got the same observation 4 times (more than 3)" in one["halted"]
    assert one["reflection"] == lesson.strip() and "The trial was stopped" in one["feedback"]
    assert (two["success"], two["correct"], two["reason"], two["memory"]) == (True, True, "done", [lesson.strip()])
    assert record["success"] == 1.0 and record["route"] == "reflexion"
    sent = [r.prompt or "\n".join(m.text for m in r.messages) for r in model.requests]
    reflect = sent[4]
    looked = "\n> look\n" if runner == "text" else "\nAction: look\n"
    assert looked in reflect and (reflect.rstrip().endswith("Reflection:") or "`Reflection:`" in reflect)
    assert "the same action ('look') got the same observation 4 times" in reflect
    assert "Your task is to:" in reflect and "(END OF EXAMPLES)" in reflect
    assert f"Reflection 1: {lesson.strip()}" in sent[5] and "Reflection 1:" not in sent[0]
    curve = curve_of(result.summary) if result.summary else None
    assert curve is not None and not curve.oracle_feedback and curve.halted == 1
    assert [c.mean for c in curve.curve] == [0.0, 1.0, 1.0]


async def test_the_halt_counts_repeats_and_actions() -> None:
    class Echo:
        def actions(self) -> tuple[()]:
            return ()

        async def reset(self, example: Example) -> Observation:
            return Observation("start")

        async def step(self, action: Action) -> Observation:
            return Observation(f"you did {action.text}")

        def close(self) -> None:
            pass

    halt = Halting(Echo(), max_repeats=3, max_actions=5)
    seen = [await halt.step(Action("", {}, text)) for text in ("a", "b", "a", "a")]
    assert not any(o.ends for o in seen) and halt.halted is None  # "a" answered the same 3 times: not more
    last = await halt.step(Action("", {}, "a"))
    assert last.done and last.text == "you did a" and "4 times (more than 3)" in (halt.halted or "")
    busy = Halting(Echo(), max_repeats=3, max_actions=5)
    steps = [await busy.step(Action("", {}, str(i))) for i in range(6)]
    assert [o.ends for o in steps] == [False] * 5 + [True] and busy.halted == "6 actions (more than 5)"


def test_verdicts_and_settings() -> None:
    assert verdict_of("env", False, "done", "", 1.0, None).success
    assert not verdict_of("env", False, "done", "", 0.5, None).success
    assert not verdict_of("oracle", True, "answered", "x", None, "a loop").success  # a halted trial fails
    assert verdict_of("heuristic", False, "answered", "Paris", None, None).success  # no gold: answered is enough
    assert not verdict_of("heuristic", False, "step_limit", "", None, None).success
    assert ReflexionConfig().resolved("alfworld", answers=False, scores_episodes=True).evaluator == "env"
    assert ReflexionConfig().resolved("hotpotqa", answers=True, scores_episodes=False).oracle_feedback
    with pytest.raises(ConfigError, match="does not score an episode"):
        ReflexionConfig(evaluator="env").resolved("hotpotqa", answers=True, scores_episodes=False)
    with pytest.raises(ConfigError, match="at least 1"):
        ReflexionConfig(memory=0)
    # the command line: ALFWorld's protocol is Reflexion's (12 trials, the halt); the others ask for no ray
    alf = RunConfig.from_mapping(composed("task=alfworld", "mode=reflexion"))
    assert alf.solve.options == ReflexionConfig(trials=12, halt=True, evaluator="env")
    hot = RunConfig.from_mapping(composed("mode=reflexion", "reflexion.memory=1", "reflexion.trials=4"))
    assert hot.solve.options == ReflexionConfig(trials=4, memory=1, evaluator="oracle")
    with pytest.raises(ConfigError, match="executor=ray"):
        RunConfig.from_mapping(composed("mode=reflexion", "executor=ray"))
    for task in ("hotpotqa", "fever", "alfworld", "webshop", "synthwiki", "synthwiki_claims"):
        assert "(END OF EXAMPLES)" in reflection_prompt(task).exemplars


async def test_the_memory_keeps_the_last_reflections_only(tmp_path: Path, key: None) -> None:
    golds = gold_answers(1)
    learner = Learner(golds, needs=(99,))  # never right: every trial but the last reflects
    with MessagesServer(responder=learner) as server:
        cfg = config(server, tmp_path, "memory", 1)
        cfg = RunConfig(
            **{
                **cfg.__dict__,
                "solve": SolveSettings(
                    mode="reflexion", options=ReflexionConfig(trials=4, memory=2, evaluator="oracle")
                ),
            }
        )
        result = await evaluate(cfg, out=io.StringIO())
        acted = [r.body for r in server.requests if not asks_for_reflection(r.body)]
    (record,) = lines(result.run_dir / "examples.jsonl")
    reflections = [t["reflection"] for t in record["method"]["trials"]]
    assert [r is not None for r in reflections] == [True, True, True, False]  # none after the last trial
    assert [t["memory"] for t in record["method"]["trials"]] == [[], reflections[:1], reflections[:2], reflections[1:3]]
    last = _text(acted[3]["messages"][0])
    assert f"Reflection 1: {reflections[1]}\nReflection 2: {reflections[2]}\n" in last and "(#1)" not in last
    assert record["correct"] is False and record["reason"] == "answered"


async def test_a_dry_run_prices_every_trial_and_reflection(tmp_path: Path, key: None) -> None:
    cfg = RunConfig(
        task=TaskConfig(name="hotpotqa", n=2),
        model=claude_model_config("http://127.0.0.1:9", KEY_ENV),  # type: ignore[arg-type]
        solve=SolveSettings(mode="reflexion", options=ReflexionConfig(trials=3, evaluator="oracle")),
        results_dir=tmp_path,
        run_id="priced",
        progress=False,
        dry_run=True,
    )
    await evaluate(cfg, out=io.StringIO())
    priced = json.loads(
        (tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "reflexion-text" / "priced" / "dry_run.json").read_text()
    )
    assert priced["calls_at_most"] == 2 * (3 * 7 + 2)  # 3 trials of 7 steps, 2 reflections, per example


async def test_an_errored_trial_runs_again_with_retry_errors_and_the_finished_ones_do_not(
    tmp_path: Path, key: None
) -> None:
    from react_bench.testing.sse import Fault

    golds = gold_answers(1)
    learner = Learner(golds, needs=(2,))  # right at trial 3
    reflections = []

    def responder(body: dict[str, Any]) -> Reply | Fault:
        if asks_for_reflection(body):
            reflections.append(body)
            if len(reflections) == 2:  # the second reflection: overloaded (no retries)
                return Fault.overloaded()
        return learner(body)

    with MessagesServer(responder=responder) as server:
        cut = await evaluate(config(server, tmp_path, "flaky", 1, request_cache="off"), out=io.StringIO())
        (record,) = lines(cut.run_dir / "examples.jsonl")
        assert record["reason"] == "error" and "overloaded" in record["error"].lower()
        assert [(t["trial"], t["error"] is not None) for t in record["method"]["trials"]] == [(1, False), (2, True)]
        assert [t["trial"]["trial"] for t in lines(cut.run_dir / "trials.jsonl")] == [1]  # the finished one only
        again = await evaluate(
            config(server, tmp_path, "flaky", 1, request_cache="off", resume=True, retry_errors=True),
            out=io.StringIO(),
        )
    (record,) = lines(again.run_dir / "examples.jsonl")
    assert record["correct"] is True and [t["trial"] for t in record["method"]["trials"]] == [1, 2, 3]
    # trial 1 ran once; trial 2 twice (its reflection failed, so it was not finished); then trial 3
    assert [held for _, held, kind in learner.asked if kind == "act"] == [0, 1, 1, 2]


async def test_a_model_judge_decides_the_retries_without_the_gold(tmp_path: Path, key: None) -> None:
    golds = gold_answers(1)
    ((_, gold),) = golds.items()
    learner = Learner(golds, needs=(1,))
    judged: list[str] = []

    def responder(body: dict[str, Any]) -> Reply:
        said = "\n".join(_text(m) for m in body["messages"])
        if "Reply with one word: SUCCESS or FAILURE" in said:  # the judge reads the attempt, not the gold
            judged.append(said)
            return Reply.text("Verdict: SUCCESS" if f"Final answer: {gold}\n" in said else "Verdict: FAILURE")
        return learner(body)

    with MessagesServer(responder=responder) as server:
        cfg = config(server, tmp_path, "judged", 1)
        cfg = replace(cfg, solve=replace(cfg.solve, options=ReflexionConfig(trials=3, evaluator="judge")))
        result = await evaluate(cfg, out=io.StringIO())
        with pytest.raises(ConfigError, match="reflexion.judge=nope: no configs/model/nope.yaml"):
            other = replace(cfg, run_id="nope")
            await evaluate(
                replace(other, solve=replace(cfg.solve, options=ReflexionConfig(evaluator="judge", judge="nope"))),
                out=io.StringIO(),
            )
    (record,) = lines(result.run_dir / "examples.jsonl")
    assert [(t["success"], t["evaluator"]) for t in record["method"]["trials"]] == [
        (False, "judge:claude-sonnet-4-6"),
        (True, "judge:claude-sonnet-4-6"),
    ]
    assert record["method"]["trials"][0]["feedback"] == "A judge read the trial and said FAILURE."
    assert len(judged) == 2 and all("Attempt:\nQuestion: " in j for j in judged)
    assert result.summary is not None and curve_of(result.summary) is not None
    assert not curve_of(result.summary).oracle_feedback and curve_of(result.summary).evaluator == "judge"


async def test_the_progress_line_names_the_trial_as_well_as_the_step(tmp_path: Path, key: None) -> None:
    """Steps count from 1 again in every trial: the run's sinks are told each trial as it starts
    (not recorded in an episode), and the bar shows ``trial k/n, step s``."""
    from react_bench.console import ProgressBar
    from react_bench.events import MethodStage, StepStarted

    golds = gold_answers(2)
    seen: list[tuple[str, object]] = []
    with MessagesServer(responder=Learner(golds, needs=(2, 0))) as server:
        result = await evaluate(
            config(server, tmp_path, "bar", 2), out=io.StringIO(), on_event=lambda i, e: seen.append((i, e))
        )
    first, second = lines(result.run_dir / "examples.jsonl")
    told = [(i, e.index, e.total) for i, e in seen if isinstance(e, MethodStage) and e.what == "trial"]
    assert told == [(first["id"], 1, 3), (first["id"], 2, 3), (first["id"], 3, 3), (second["id"], 1, 3)]
    assert not any(ev["type"] == "method_stage" for ep in first["trajectory"] for ev in ep["events"])
    # each trial's steps follow its announcement
    order = [type(e).__name__ for i, e in seen if i == first["id"] and isinstance(e, (StepStarted, MethodStage))]
    assert order == ["MethodStage", "StepStarted"] * 3
    out = io.StringIO()
    bar = ProgressBar("hotpotqa reflexion", 2, 0, out, enabled=True)
    bar.stage("5a8c7595aaaa", "trial", 3, 5)
    bar.heartbeat("5a8c7595aaaa", 2)
    bar.close()
    assert "now: 5a8c7595 trial 3/5, step 2" in out.getvalue()
