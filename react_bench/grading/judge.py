"""A second reading of a run's free-text answers beside the paper's exact match: an LLM judge
(``judge=<configs/model name>``) or the rule tier (``judge=rules``, a heuristic: ``grading.rules``).

Decisions a next engineer needs:

- **The prompt** is SimpleQA's published grader, ``GRADER_TEMPLATE`` of openai/simple-evals'
  ``simpleqa_eval.py`` at ee3b031 (MIT), pinned in ``upstream.json`` and read as data (fetched on
  first use, checksummed, cached: ``upstream.text``). It is filled exactly as SimpleQA fills it
  (``str.format`` with ``question``, the gold as ``target``, ``predicted_answer``) and sent as one
  user message. The reply is read strictly (``parse_verdict``): A / B / C (or the grade's own
  word) alone; anything else is recorded as unreadable and counted, never guessed (SimpleQA's own
  code takes the first A, B or C anywhere and falls back to C: this does not).
- **What is asked**: an exact-match hit is CORRECT by rule without a call (``judge.all=true``
  sends those too), an empty answer NOT_ATTEMPTED without a call; every other answer once.
- **Where verdicts live**: ``judged.jsonl`` (the judge) or ``rules.jsonl`` (the heuristic) beside
  ``examples.jsonl``, a line per example attempt: the verdict, how it was reached (``by``:
  exact_match | empty | judge | rules), the judge as configured and the model the API reported,
  the prompt's sha256, the request's key and its price. examples.jsonl is the episode's own record
  and is never rewritten: a verdict is a second opinion on it, the same file whether the run was
  judged as it ran (``judge=`` on eval.py) or afterwards (``scripts/judge.py``). One judge per
  run folder: judging with another is refused in one line.
- **Calls** go through the model's own stack (retries, rate limits) and the request cache, so a
  second judging sends nothing; a replayed run (``model=replay``) takes the verdicts its cassette's
  run holds for the same requests first. ``batch=true`` sends them through the provider's batch
  API (half price), their answers stored in the request cache. A call that fails after its
  retries leaves its example unjudged: nothing is invented, the count is reported, and the same
  command judges the rest.
- ``metrics.json`` gains ``judged`` (or ``rules``): the share of examples judged CORRECT, with its
  interval, only once every example has a verdict line; and a ``judge`` block with the counts
  (misses accepted, hits rejected, unreadable replies, examples left unjudged) and the spend.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from react_bench.errors import ConfigError
from react_bench.grading.rules import VERDICTS, Verdict, rules_verdict
from react_bench.grading.verdicts import (
    JudgeSettings,
    verdict_lines,
    verdicts,
)
from react_bench.metrics import exact_match, normalize_answer
from react_bench.models.base import ModelError, ModelRequest, generate
from react_bench.types import Message, ModelResponse, Usage

TEMPLATE = "simpleqa/grader_template"  # upstream.json's text
LETTERS: dict[str, Verdict] = {"A": "CORRECT", "B": "INCORRECT", "C": "NOT_ATTEMPTED"}
MAX_TOKENS = 16  # "Just return the letters": room for a letter and a little more, never an essay
CONCURRENCY = 8  # judge calls at once (live)
REPLY_KEPT = 200  # characters of an unreadable reply kept in its line


def grader_template(out: TextIO | None = None) -> str:
    from react_bench import upstream

    return upstream.text(TEMPLATE, out)


def fill(template: str, question: str, gold: str, prediction: str) -> str:
    """SimpleQA's filling, exactly (``GRADER_TEMPLATE.format(question=, target=, predicted_answer=)``)."""
    return template.format(question=question, target=gold, predicted_answer=prediction)


def judge_request(prompt: str) -> ModelRequest:
    return ModelRequest(messages=(Message.user(prompt),), max_tokens=MAX_TOKENS, temperature=0.0)


def parse_verdict(reply: str) -> Verdict | None:
    """A / B / C alone (a trailing period or colon allowed), or CORRECT / INCORRECT / NOT_ATTEMPTED
    (NOT ATTEMPTED) alone; None for anything else: unreadable, never guessed."""
    text = reply.strip().rstrip(".:").strip().strip('"').strip()
    if text in LETTERS:
        return LETTERS[text]
    word = text.upper().replace(" ", "_")
    return next((v for v in VERDICTS if v == word), None)


def model_spec(settings: JudgeSettings) -> Any:
    """The judge's ``ModelSpec``: configs/model/<name>.yaml with ``judge.base_url`` / ``judge.api_key_env``."""
    from react_bench.models.stack import ModelSpec
    from react_bench.paths import model_file

    name = settings.model or ""
    values = model_file(name, "judge")  # (or judge=rules: the heuristic)
    if values.get("provider") in ("replay", "scripted"):
        raise ConfigError(f"judge={name}: a judge is a model that answers (claude-*, openai, local), not {name}")
    for key in ("base_url", "api_key_env"):
        if getattr(settings, key) is not None:
            values[key] = getattr(settings, key)
    return ModelSpec.from_mapping(values)


def check_judge(settings: JudgeSettings) -> None:
    """Before a run: the judge's model file exists and its key's variable is set (one line, exit 2)."""
    spec = model_spec(settings)
    variable = spec.settings.get("api_key_env")
    if variable and not os.environ.get(str(variable), "").strip():
        raise ConfigError(
            f"judge={settings.model}: the environment variable {variable} (its key) is not set; "
            "judge.api_key_env names another"
        )


# ------------------------------------------------------------------------------------ verdict lines


def _append(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        return
    with open(path, "a", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


# ------------------------------------------------------------------------------------ judging a run


@dataclass
class Judged:
    """What one judging did: lines written, calls sent (live or batched), left unjudged."""

    run_dir: Path
    settings: JudgeSettings
    written: int = 0
    calls: int = 0
    from_cache: int = 0
    replayed: int = 0
    unjudged: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Ask:
    key: tuple[str, int]
    record: Mapping[str, Any]
    request: ModelRequest
    request_key: str


def _cassette_verdicts(run_dir: Path, file: str) -> dict[str, dict[str, Any]]:
    """A replayed run: the verdicts its cassette's run holds, by request key."""
    try:
        config = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError):
        return {}
    model = config.get("model") or {}
    cassette = (model.get("settings") or {}).get("cassette") or model.get("cassette")
    if not cassette:
        return {}
    source = Path(str(cassette)).parent
    if source.resolve() == run_dir.resolve():
        return {}
    return {str(row.get("request")): row for row in verdict_lines(source, file) if row.get("request")}


async def judge_run(
    run_dir: Path,
    settings: JudgeSettings,
    *,
    batch: bool = False,
    poll_s: float = 30.0,
    request_cache: str = "on",
    out: TextIO | None = None,
) -> Judged:
    """Judge every example of ``run_dir`` that has no verdict yet (module docstring); then its
    metrics.json is written again with the verdicts in it."""
    from react_bench.results import iter_records

    run_dir = Path(run_dir)
    say: Callable[[str], None] = lambda line: print(line, file=out or sys.stdout, flush=True)  # noqa: E731
    path = run_dir / settings.file
    have = verdicts(run_dir, settings.file)
    earlier = next(iter(have.values()), None)
    if earlier is not None and settings.kind == "judge" and earlier.get("judge") not in (None, settings.model):
        raise ConfigError(
            f"{run_dir} was judged by judge={earlier.get('judge')}; one judge per run folder "
            f"(remove {settings.file} to judge it with {settings.model} instead)"
        )
    done = Judged(run_dir, settings)
    template = grader_template(out) if settings.kind == "judge" else ""
    prompt_sha = hashlib.sha256(template.encode()).hexdigest() if template else None
    stack = None
    asks: list[_Ask] = []
    rows: list[dict[str, Any]] = []
    if settings.kind == "judge":
        from react_bench.models import build_stack

        spec = model_spec(settings)
        stack = build_stack(spec, request_cache=request_cache, record=False)  # type: ignore[arg-type]
    for record in iter_records(run_dir):
        key = (str(record["id"]), int(record.get("epoch") or 1))
        if key in have:
            continue
        prediction, gold = str(record.get("prediction") or ""), str(record.get("gold") or "")
        base = {"id": key[0], "epoch": key[1], "em": bool(exact_match(prediction, gold))}
        if settings.kind == "rules":
            rows.append({**base, "verdict": rules_verdict(prediction, gold), "by": "rules"})
        elif not normalize_answer(prediction):
            rows.append({**base, "verdict": "NOT_ATTEMPTED", "by": "empty", "judge": settings.model})
        elif base["em"] and not settings.all:
            rows.append({**base, "verdict": "CORRECT", "by": "exact_match", "judge": settings.model})
        else:
            request = judge_request(fill(template, str(record.get("question") or ""), gold, prediction))
            rkey = _request_key(stack, request)
            asks.append(_Ask(key, record, request, rkey))
    _append(path, rows)
    done.written += len(rows)
    if stack is not None:
        try:
            replayed = _cassette_verdicts(run_dir, settings.file)
            again = [a for a in asks if a.request_key in replayed]
            _append(path, [{**replayed[a.request_key], "id": a.key[0], "epoch": a.key[1]} for a in again])
            done.replayed, done.written = len(again), done.written + len(again)
            todo = [a for a in asks if a.request_key not in replayed]
            if todo:
                say(
                    f"judge: {len(todo)} answer(s) to {settings.model}"
                    + (" in a batch (half price)" if batch else "")
                    + f" (SimpleQA's grader; {len(rows) + len(again)} settled without a call)"
                )
            if batch and todo:
                answers = await _batched(stack, todo, poll_s, say, run_dir)
            else:
                answers = await _live(stack, todo)
            lines = []
            for ask in todo:
                answer = answers.get(ask.request_key)
                if isinstance(answer, tuple):
                    response, cached, batched = answer
                    lines.append(_judge_line(ask, response, settings, prompt_sha, cached=cached, batched=batched))
                    done.calls += not cached
                    done.from_cache += cached
                else:
                    done.unjudged += 1
                    if answer and len(done.errors) < 3:
                        done.errors.append(answer)
            _append(path, lines)
            done.written += len(lines)
        finally:
            await stack.aclose()
    rewrite_metrics(run_dir)
    return done


async def ask(
    settings: JudgeSettings,
    triples: Sequence[tuple[str, str, str]],
    *,
    batch: bool = False,
    poll_s: float = 30.0,
    request_cache: str = "on",
    out: TextIO | None = None,
) -> list[Verdict | None | str]:
    """The judge's verdict on each (question, gold, prediction), asked as a run's are (the audit's
    agents): a verdict, None for an unreadable reply, or why it could not be asked (a str)."""
    from react_bench.models import build_stack

    say: Callable[[str], None] = lambda line: print(line, file=out or sys.stdout, flush=True)  # noqa: E731
    template = grader_template(out)
    stack = build_stack(model_spec(settings), request_cache=request_cache, record=False)  # type: ignore[arg-type]
    try:
        todo = []
        for n, (question, gold, prediction) in enumerate(triples):
            request = judge_request(fill(template, question, gold, prediction))
            todo.append(
                _Ask((str(n), 1), {"gold": gold, "prediction": prediction}, request, _request_key(stack, request))
            )
        answers = await (_batched(stack, todo, poll_s, say) if batch else _live(stack, todo))
    finally:
        await stack.aclose()
    found: list[Verdict | None | str] = []
    for a in todo:
        answer = answers.get(a.request_key)
        found.append(parse_verdict(answer[0].text) if isinstance(answer, tuple) else str(answer or "no answer"))
    return found


def _request_key(stack: Any, request: ModelRequest) -> str:
    from react_bench.models.cache import request_key

    return request_key(stack.client, stack.client.name, request)


def _judge_line(
    ask: _Ask, response: ModelResponse, settings: JudgeSettings, prompt_sha: str | None, *, cached: bool, batched: bool
) -> dict[str, Any]:
    from react_bench.models.capabilities import cost_usd

    reply = response.text
    verdict = parse_verdict(reply)
    price = None if cached else cost_usd(response.model or (settings.model or ""), response.usage)
    row: dict[str, Any] = {
        "id": ask.key[0],
        "epoch": ask.key[1],
        "em": bool(exact_match(str(ask.record.get("prediction") or ""), str(ask.record.get("gold") or ""))),
        "verdict": verdict,
        "by": "judge",
        "judge": settings.model,
        "model": response.model,
        "prompt_sha256": prompt_sha,
        "request": ask.request_key,
        "usage": response.usage.to_dict(),
        "cost_usd": None if price is None else (price * 0.5 if batched else price),
        "cached": cached,
    }
    if verdict is None:
        row["reply"] = reply[:REPLY_KEPT]
    return row


async def _live(stack: Any, todo: Sequence[_Ask]) -> dict[str, tuple[ModelResponse, bool, bool] | str]:
    gate = asyncio.Semaphore(CONCURRENCY)
    answers: dict[str, tuple[ModelResponse, bool, bool] | str] = {}

    async def one(ask: _Ask) -> None:
        async with gate:
            cached = stack.cache is not None and stack.cache.mode == "on" and stack.cache.path(ask.request).is_file()
            try:
                answers[ask.request_key] = (await generate(stack.top, ask.request), cached, False)
            except ModelError as exc:
                answers[ask.request_key] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    await asyncio.gather(*(one(a) for a in todo))
    return answers


BATCHES_FILE = (
    "judge_batches.json"  # the judge's batches of a run folder: a killed judging collects them, never resends
)


async def _batched(
    stack: Any, todo: Sequence[_Ask], poll_s: float, say: Callable[[str], None], state_dir: Path | None = None
) -> dict[str, tuple[ModelResponse, bool, bool] | str]:
    """The requests not in the request cache in batches (the API's limits), polled until they
    end; each answer stored in the request cache, as a batch round's are. ``state_dir``: each
    batch's id and requests are written to its judge_batches.json as it is made, so a judging killed
    while a batch runs collects that batch the next time (by its id) instead of sending it again."""
    from react_bench import rundir
    from react_bench.executors.rounds import batch_client
    from react_bench.models.cache import read_entry, write_entry
    from react_bench.types import response_to_dict

    cache, client = batch_client(stack)
    answers: dict[str, tuple[ModelResponse, bool, bool] | str] = {}
    send: dict[str, ModelRequest] = {}
    for ask in todo:
        stored = read_entry(cache.path(ask.request)) if cache.mode == "on" else None
        if stored is not None:
            answers[ask.request_key] = (stored, True, False)
        else:
            send[ask.request_key] = ask.request
    state_path = state_dir / BATCHES_FILE if state_dir is not None else None
    state: dict[str, Any] = {"batches": []}
    if state_path is not None and state_path.is_file():
        state = json.loads(state_path.read_text(encoding="utf-8"))
    made = [
        (b["id"], [(cid, send[cid]) for cid in b["requests"] if cid in send])
        for b in state["batches"]
        if not b.get("collected")
    ]
    made = [(bid, chunk) for bid, chunk in made if chunk]
    if made:
        say(f"judge: {len(made)} batch(es) of an earlier judging, collected by id")
    taken = {cid for _, chunk in made for cid, _ in chunk}
    items = [(cid, r) for cid, r in send.items() if cid not in taken]
    size = max(1, int(client.batch_limits[0]))
    for start in range(0, len(items), size):
        made.append(("", items[start : start + size]))
    for batch_id, chunk in made:
        try:
            if not batch_id:
                batch_id = await client.batch_create(chunk)
                state["batches"].append({"id": batch_id, "requests": [cid for cid, _ in chunk]})
                if state_path is not None:
                    rundir.write_json(state_path, state)
            started = time.monotonic()
            say(f"judge: batch {batch_id}: {len(chunk)} request(s)")
            while True:
                ended, _ = await client.batch_status(batch_id)
                if ended:
                    break
                await asyncio.sleep(poll_s)
            results = await client.batch_results(batch_id, {cid: client.batch_stops(r) for cid, r in chunk})
            say(f"judge: batch {batch_id}: answered in {time.monotonic() - started:.1f} s")
        except ModelError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            answers.update({cid: reason for cid, _ in chunk})
            continue
        for cid, request in chunk:
            result = results.get(cid)
            if isinstance(result, ModelResponse):
                write_entry(cache.path(request), response_to_dict(result))
                answers[cid] = (result, False, True)
            else:
                answers[cid] = str(result or "no result in the batch")
        for entry in state["batches"]:
            if entry["id"] == batch_id:
                entry["collected"] = True
        if state_path is not None:
            rundir.write_json(state_path, state)
    return answers


# ------------------------------------------------------------------------------------ figures


def judge_line(metrics: Any) -> str:
    """``judged by <model>: 60.0 [..] (exact match 40.0); 1 miss(es) accepted, ...``: a run's verdicts in one line."""
    block = metrics.judge or {}
    name = block.get("metric") or "judged"
    score = metrics.scores.get(name)
    primary = metrics.primary
    what = "rules (a heuristic)" if name == "rules" else f"judged by {block.get('model') or block.get('judge')}"
    shown = (
        "unknown until every example is judged"
        if score is None
        else f"{100 * score.mean:.1f} [{100 * score.ci95[0]:.1f}, {100 * score.ci95[1]:.1f}]"
    )
    em = "" if primary is None else f" (exact match {100 * primary.mean:.1f})"
    return (
        f"{what}: {shown}{em}; {block.get('accepted_misses', 0)} miss(es) accepted, "
        f"{block.get('rejected_hits', 0)} hit(s) rejected, {block.get('unreadable', 0)} reply(ies) unreadable"
    )


def rewrite_metrics(run_dir: Path) -> None:
    """metrics.json again, with the verdicts (``results.summarize`` reads them)."""
    from dataclasses import replace

    from react_bench import rundir
    from react_bench.record import RunHeader, RunMetrics
    from react_bench.results import summarize
    from react_bench.tasks import task_info

    header = RunHeader.read(run_dir)
    metrics = summarize(run_dir, task_info(header.task))
    path = run_dir / rundir.METRICS
    if path.is_file():  # what only the run knew (the examples its budget kept out) stays
        before = RunMetrics.from_dict(json.loads(path.read_text(encoding="utf-8")))
        metrics = replace(metrics, over_budget=before.over_budget)
    rundir.write_json(path, metrics.to_dict())


def estimate(
    settings: JudgeSettings, questions: Sequence[tuple[str, str]], *, batch: bool, out: TextIO | None = None
) -> tuple[dict[str, Any], str]:
    """The dry run's price of judging ``questions`` ((question, gold) each): an upper bound, every
    answer a miss that reaches the judge (a prediction as long as its gold)."""
    from react_bench.models import build_stack
    from react_bench.models.cache import estimate_input_tokens
    from react_bench.models.capabilities import calls_cost_usd

    if settings.kind != "judge":
        return {"judge": settings.model, "calls": 0, "cost_usd": 0.0}, "judge: the rule tier (a heuristic): no call"
    name = build_stack(model_spec(settings), record=False, sends=False).client.name
    template = grader_template(out)
    usages = [
        Usage(input_tokens=estimate_input_tokens(judge_request(fill(template, q, g, g))), output_tokens=MAX_TOKENS)
        for q, g in questions
    ]
    cost = calls_cost_usd(name, usages)
    if cost is not None and batch:
        cost *= 0.5
    total = sum(u.input_tokens for u in usages)
    said = "unknown (no price for this model)" if cost is None else f"${cost:.4f}"
    line = (
        f"judge: at most {len(usages)} calls to {name} (every answer a miss; hits need none), about {total} input "
        f"and at most {MAX_TOKENS * len(usages)} output tokens: estimated {said}" + (" (batched)" if batch else "")
    )
    return {
        "judge": settings.model,
        "model": name,
        "calls_at_most": len(usages),
        "input_tokens": total,
        "cost_usd": cost,
    }, line
