"""Benchmark a run's first download against hosts that misbehave: ``scripts/eval.py task=hotpotqa
mode=lats lats.protocol=official dry_run=true`` needs LATS's pinned ``hotpot/hotpot.py`` (73,543
bytes), fetched from ``$REACT_BENCH_GITHUB``, here each of three hostile hosts in turn
(``react_bench.testing.hostile_raw``):

- ``huge``: ``Content-Length: 10000000000``, then zeros until the client hangs up;
- ``huge-unannounced``: the same with no length said (only the byte cap stops it);
- ``drip``: one byte a second;
- ``html``: a 200 sign-in page.

    python bench/bench_downloads.py   # writes results/bench/downloads.{md,json}

Each run is a fresh process with an empty cache and no prepared folder for the pinned files
(``REACT_BENCH_DATA_DIR=none``; the questions from ``data_dir=``, a folder this script generates), the
default deadline (no ``REACT_BENCH_DOWNLOAD_DEADLINE_S``). Goals (issue 69): exit 2 within 60 s, one
line naming the file and the variable to set, no traceback, at most 1 MB read (the bytes the run says
it read; the host's count of what it handed to the connection is shown beside it, an upper bound
that includes what sat unread in the socket's buffers), nothing left in the cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import REPO, check, checks_markdown, environment, environment_line, write_results

KINDS = ("huge", "huge-unannounced", "drip", "html")
GOALS = {"wall_s": 60.0, "read_mb": 1.0}
LABEL = "lapisrocks/LanguageAgentTreeSearch@853d816:hotpot/hotpot.py"


def data_folder() -> Path:
    """A generated data folder (the tests' SynthWiki one): the run's questions, no pinned file."""
    sys.path.insert(0, str(REPO))
    from tests.generated import write_generated

    return write_generated(Path(tempfile.mkdtemp(prefix="bench-downloads-data-")))


def run_against(kind: str, data: Path) -> dict[str, Any]:
    from react_bench.testing.hostile_raw import HostileHost

    work = Path(tempfile.mkdtemp(prefix=f"bench-downloads-{kind}-"))
    env = {k: v for k, v in os.environ.items() if k != "REACT_BENCH_DOWNLOAD_DEADLINE_S"}
    env |= {"REACT_BENCH_CACHE": str(work / "cache"), "REACT_BENCH_DATA_DIR": "none"}
    with HostileHost(kind) as host:
        env["REACT_BENCH_GITHUB"] = host.base_url
        started = time.perf_counter()
        ran = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "eval.py"), "task=hotpotqa", "mode=lats", "lats.protocol=official"]
            + ["dry_run=true", "n=1", "progress=false", f"data_dir={data}", f"results_dir={work / 'results'}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        wall = time.perf_counter() - started
        sent = host.sent
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
    said = errors[0] if errors else ""
    cut = re.search(r"stopped reading at ([\d,]+)", said)
    came = re.search(r"\(([\d,]+) bytes came", said) or re.search(r", ([\d,]+) bytes: ", said)
    found = cut or came
    read = int(found.group(1).replace(",", "")) if found is not None else 0  # "nothing was read": 0
    upstream = work / "cache" / "upstream"  # (the cache also holds the wiki built from data_dir)
    left = [p for p in upstream.rglob("*") if p.is_file()] if upstream.is_dir() else []
    return {
        "kind": kind,
        "exit": ran.returncode,
        "wall_s": round(wall, 1),
        "read_bytes": read,
        "host_sent_bytes": sent,
        "one_line": len(errors) == 1 and "Traceback" not in ran.stderr,
        "names_file_and_variable": LABEL in said and "REACT_BENCH_GITHUB" in said,
        "left_in_cache": len(left),
        "said": said[:400],
    }


def checks_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    checks = []
    for r in result["runs"]:
        k = r["kind"]
        checks += [
            check(f"{k}: exit code", r["exit"], "2", r["exit"] == 2),
            check(f"{k}: wall (s)", r["wall_s"], f"<= {GOALS['wall_s']:.0f}", r["wall_s"] <= GOALS["wall_s"]),
            check(
                f"{k}: bytes read (MB)",
                round(r["read_bytes"] / 1e6, 3),
                f"<= {GOALS['read_mb']:.0f}",
                r["read_bytes"] <= GOALS["read_mb"] * 1e6,
            ),
            check(
                f"{k}: one line naming the file and the variable, no traceback",
                r["one_line"],
                "true",
                r["one_line"] and r["names_file_and_variable"],
            ),  # fmt: skip
            check(f"{k}: files left in the cache", r["left_in_cache"], "0", r["left_in_cache"] == 0),
        ]
    return checks


def render(result: dict[str, Any]) -> str:
    lines = [
        "# A run's first download from hosts that misbehave",
        "",
        environment_line(result["environment"]),
        "",
        "Produced by `python bench/bench_downloads.py`: `scripts/eval.py task=hotpotqa mode=lats "
        "lats.protocol=official dry_run=true` with an empty cache, `REACT_BENCH_GITHUB` at each hostile host "
        "(`react_bench/testing/hostile_raw.py`), the default deadline (20 s + the file's 73,543 bytes at 50 kB/s).",
        "",
        *checks_markdown(result["checks"]),
        "",
        "| host | exit | wall (s) | bytes read | bytes the host handed out | what the run said |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in result["runs"]:
        said = r["said"].replace("|", "\\|")
        lines.append(
            f"| {r['kind']} | {r['exit']} | {r['wall_s']} | {r['read_bytes']:,} | {r['host_sent_bytes']:,} | {said} |"
        )
    return "\n".join(lines)


def main() -> int:
    data = data_folder()
    runs = []
    for kind in KINDS:
        runs.append(run_against(kind, data))
        print({k: v for k, v in runs[-1].items() if k != "said"}, flush=True)
    result = {"runs": runs, "environment": environment()}
    result["checks"] = checks_of(result)
    write_results("downloads", result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
