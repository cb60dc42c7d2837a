"""``batch=true``: the single-call modes through the Message Batches API, at half price.

A batch is a different way to *execute* the same requests, not a different mode. Before the
examples run, every request of the mode's single-call part (Standard, CoT, each CoT-SC
sample; the first pass of CoT-SC->ReAct) is built by the policies exactly as the run would
send it and submitted in batches; each result is written into the request cache
(``models.cache``) under that request's key. The run then goes as usual and is served from
the cache, so trajectories, scoring, cassettes and resume are the same as without a batch;
what still needs a live call (an errored batch result, ReAct after a CoT-SC backoff) makes one.

Resumable: the batch ids and the requests they carry are in ``batches.json`` in the run
folder, written right after each submission. A run that is started again (``resume``) polls
and collects the batches it finds there instead of submitting them again. Results that came
from a batch of this run are priced at half (``responses`` in ``batches.json``).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, TextIO

from react_bench import rundir
from react_bench.errors import ConfigError
from react_bench.models.base import BatchClient, ModelRequest
from react_bench.models.cache import CachedModel, write_entry
from react_bench.models.stack import ModelStack
from react_bench.modes import Solver
from react_bench.types import response_to_dict

BATCHES = "batches.json"
_CACHE_KEY = re.compile(r"[0-9a-f]{16,128}")  # a request cache key (its file's name): what a custom_id is
MAX_PER_BATCH = 10_000  # the API takes up to 100,000 requests (256 MB) in one batch


def batch_client(stack: ModelStack) -> tuple[CachedModel, BatchClient]:
    """The run's request cache and its provider's batch API (both are needed)."""
    cache, client = stack.cache, stack.client
    if not isinstance(cache, CachedModel) or not isinstance(client, BatchClient):
        raise ConfigError("batch=true needs a Claude model (model=claude-*) and the request cache (cache=true)")
    return cache, client


def load_state(run_dir: Path) -> dict[str, Any]:
    path = run_dir / BATCHES
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"batches": []}


def batch_response_ids(run_dir: Path) -> set[str]:
    """Ids of the responses that came from this run's batches (priced at half)."""
    return {i for b in load_state(run_dir)["batches"] for i in b.get("responses", [])}


async def prefetch(
    stack: ModelStack, solver: Solver, questions: list[str], run_dir: Path, out: TextIO, poll_s: float = 30.0
) -> dict[str, int]:
    """Submit what the cache lacks, collect every batch of this run into the cache."""
    cache, client = batch_client(stack)
    state = load_state(run_dir)
    pending_ids = {cid for b in state["batches"] if not b.get("collected") for cid in b["requests"]}
    todo: dict[str, ModelRequest] = {}
    for question in questions:
        for request in solver.single_call_requests(question):
            custom_id = cache.path(request).stem
            if custom_id not in pending_ids and not cache.path(request).exists():
                todo[custom_id] = request
    items = list(todo.items())
    for start in range(0, len(items), MAX_PER_BATCH):
        chunk = items[start : start + MAX_PER_BATCH]
        batch_id = await client.batch_create(chunk)
        stops = {cid: client.plan(r).client_stops for cid, r in chunk}
        state["batches"].append({"id": batch_id, "requests": {cid: list(stops[cid]) for cid, _ in chunk}})
        rundir.write_json(run_dir / BATCHES, state)  # before anything else: a crash now loses no batch
    paths = {cid: cache.path(r) for cid, r in todo.items()}
    totals = {"submitted": len(items), "succeeded": 0, "errored": 0}
    for batch in state["batches"]:
        if batch.get("collected"):
            continue
        await _wait(client, batch["id"], out, poll_s)
        stops = {cid: tuple(s) for cid, s in batch["requests"].items()}
        results = await client.batch_results(batch["id"], stops)
        batch["responses"] = []
        for custom_id, result in results.items():
            if custom_id not in stops or not _CACHE_KEY.fullmatch(custom_id):
                # an id this run did not send (a server's, or a received batches.json's): never a path
                totals["ignored"] = totals.get("ignored", 0) + 1
                continue
            if isinstance(result, str):
                totals["errored"] += 1  # left to the run, which calls the model for it
                continue
            path = paths.get(custom_id) or cache.directory / custom_id[:2] / f"{custom_id}.json"
            write_entry(path, response_to_dict(result))
            batch["responses"].append(result.id)
            totals["succeeded"] += 1
        batch["collected"] = True
        rundir.write_json(run_dir / BATCHES, state)
    return totals


async def _wait(client: Any, batch_id: str, out: TextIO, poll_s: float) -> None:
    from tqdm import tqdm

    bar = tqdm(desc=f"batch {batch_id}", unit="req", file=out, dynamic_ncols=True)
    try:
        while True:
            ended, counts = await client.batch_status(batch_id)
            done = sum(v for k, v in counts.items() if k != "processing")
            bar.total = done + counts.get("processing", 0)
            bar.n = done
            bar.refresh()
            if ended:
                return
            await asyncio.sleep(poll_s)
    finally:
        bar.close()
