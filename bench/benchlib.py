"""What the harness benchmarks share: the machine they ran on, checks, writing the result
files, the walk plans, and a Messages API server in its own process.

Each benchmark writes ``results/bench/<name>.json`` (figures, ``environment``, ``checks``: a
list of ``{"name", "value", "goal", "ok"}``, one per target) and ``<name>.md`` (the same for a
reader). ``bench/bench_readme.py`` gathers every JSON into ``results/bench/README.md``.

The server runs in a separate process (``ServerProcess``), so that the benchmark's CPU
figures are the client's alone, as they would be against the real API.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / "results" / "bench"
KEY_ENV = "REACT_BENCH_BENCH_KEY"  # a made-up key for the local server; never a real one

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def environment() -> dict[str, Any]:
    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return {
        "date": dt.date.today().isoformat(),
        "commit": commit.stdout.strip() or None,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1m_at_start": round(os.getloadavg()[0], 2),
        "versions": {p: version(p) for p in ("anthropic", "httpx", "httpx2", "llama-cpp-python", "datasets")},
    }


def wait_for_quiet(max_load: float = 0.5, timeout_s: float = 300.0) -> float:
    """Wait (up to ``timeout_s``) until the 1-minute load average is at most ``max_load``: a
    start-up time measured beside a test suite measures the suite. Returns the load it starts at."""
    import time

    deadline = time.monotonic() + timeout_s
    while os.getloadavg()[0] > max_load and time.monotonic() < deadline:
        time.sleep(5)
    return round(os.getloadavg()[0], 2)


def check(name: str, value: float, goal: str, ok: bool) -> dict[str, Any]:
    return {"name": name, "value": value, "goal": goal, "ok": bool(ok)}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def checks_markdown(checks: list[dict[str, Any]]) -> list[str]:
    lines = ["| check | value | goal | ok |", "|---|---|---|---|"]
    return lines + [f"| {c['name']} | {c['value']} | {c['goal']} | {'yes' if c['ok'] else 'NO'} |" for c in checks]


def environment_line(env: dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    return (
        f"Measured {env['date']} at commit {env['commit']} on {env['cpus']} CPUs ({env['platform']}), "
        f"Python {env['python']}, {versions}; load average at start {env['load_average_1m_at_start']}."
    )


def write_results(name: str, result: dict[str, Any], markdown: str) -> None:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (BENCH_DIR / f"{name}.md").write_text(markdown.rstrip() + "\n", encoding="utf-8")
    failed = [c["name"] for c in result["checks"] if not c["ok"]]
    n = len(result["checks"])
    print(f"wrote {BENCH_DIR / name}.{{json,md}}; checks {n - len(failed)}/{n} ok")
    for name_ in failed:
        print(f"  NOT OK: {name_}")


OFFLINE = 685  # questions of the offline split (their pages are in the offline wiki)


def render_stored(name: str, checks_of: Any, render: Any) -> int:
    """``--render``: the checks and the page again from the stored ``<name>.json`` (no measuring)."""
    stored = json.loads((BENCH_DIR / f"{name}.json").read_text(encoding="utf-8"))
    stored["checks"] = checks_of(stored)
    write_results(name, stored, render(stored))
    return 0


def hotpotqa_split(n: int) -> Literal["offline", "all"]:
    """The split a run of ``n`` HotpotQA questions takes: the offline one while it is enough."""
    return "offline" if n <= OFFLINE else "all"


def hotpotqa_plans(n: int) -> dict[str, tuple[tuple[str, ...], str]]:
    """Question -> (pages to visit, its gold answer) for the first ``n`` questions of
    ``hotpotqa_split(n)``: a walk that searches real pages of the offline wiki (a question's
    own supporting pages, or beyond the offline split, another offline question's) and
    answers right."""
    from react_bench.console import quiet_console
    from react_bench.tasks import TaskConfig, load_task

    quiet_console()
    task = load_task("hotpotqa")
    offline = task.examples(TaskConfig(name="hotpotqa", n=min(n, OFFLINE)))
    titles = [tuple(e.metadata["supporting_titles"]) for e in offline]
    examples = task.examples(TaskConfig(name="hotpotqa", n=n, split=hotpotqa_split(n)))
    return {e.question.strip(): (titles[i % len(titles)], e.gold) for i, e in enumerate(examples)}


def claude_model(base_url: str, **extra: Any) -> dict[str, Any]:
    """The model config of a Claude run against the local server."""
    from react_bench.testing.messages_server import claude_model_config

    return claude_model_config(base_url, KEY_ENV, **{"max_retries": 4, "timeout_s": 120, **extra})


# ------------------------------------------------------------------ the server, apart


@dataclass
class ServerStats:
    received: list[float] = field(default_factory=list)  # time.monotonic() (one clock for all processes)
    answered: list[float] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    rejected: int = 0  # answered 429 by the rate limiter
    cpu_s: float = 0.0
    usage: list[dict[str, int]] = field(default_factory=list)  # each answered request's usage, as billed

    def max_in_window(self, seconds: float) -> int:
        """The most requests that arrived within any window of ``seconds`` (429s excluded)."""
        times = sorted(t for t, s in zip(self.received, self.statuses, strict=True) if s != 429)
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while t - times[lo] >= seconds:
                lo += 1
            best = max(best, hi - lo + 1)
        return best


def _serve(conn: Any, steps: int, plans: int, latency_s: float, rpm: float | None) -> None:
    from react_bench.testing.messages_server import MessagesServer
    from react_bench.testing.walker import Walk, WalkResponder

    walk = Walk(steps=steps, plans=hotpotqa_plans(plans) if plans else {})
    server = MessagesServer(responder=WalkResponder(walk), latency_s=latency_s, requests_per_minute=rpm)
    server.start()
    conn.send(server.base_url)
    conn.recv()  # stop
    server.stop()
    rejected = server.limiter.rejected if server.limiter is not None else 0
    conn.send(
        ServerStats(
            [r.received for r in server.requests],
            [r.answered for r in server.requests],
            [r.status for r in server.requests],
            rejected,
            time.process_time(),
            [b["usage"] for b in server.billed],
        )
    )


@contextmanager
def server_process(*, steps: int, plans: int, latency_s: float = 0.0, rpm: float | None = None) -> Iterator[Any]:
    """A Messages API server answering a walk of ``steps`` steps (planned for the first ``plans``
    HotpotQA questions), in its own process. Yields a handle: ``.base_url``, then ``.stats``."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child, steps, plans, latency_s, rpm), daemon=True)
    process.start()
    handle = _Handle(parent.recv())
    os.environ.setdefault(KEY_ENV, "local-bench-key-not-real")
    try:
        yield handle
    finally:
        parent.send("stop")
        handle.stats = parent.recv()
        process.join(timeout=10)


@dataclass
class _Handle:
    base_url: str
    stats: ServerStats | None = None
