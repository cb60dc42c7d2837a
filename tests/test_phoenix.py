"""A run traced live into a real Arize Phoenix server (``make phoenix-setup``: its own environment),
the trace found through Phoenix's REST API, and seen in its trace view by headless Chromium (the
study report's screenshot helper, ``scripts/screenshot_report.py``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from react_bench.evaluate import evaluate
from react_bench.results import iter_example_records
from react_bench.testing.messages_server import MessagesServer
from tests.test_tracing import KEY_ENV, MODEL, free_port, respond, run_config

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def phoenix_binary() -> str:
    found = os.environ.get("REACT_BENCH_PHOENIX") or str(REPO / ".venv-phoenix" / "bin" / "phoenix")
    if not Path(found).is_file():
        if os.environ.get("CI"):
            pytest.fail("CI needs Phoenix: .ci/run runs make phoenix-setup")
        pytest.skip("no Phoenix here: make phoenix-setup (or set REACT_BENCH_PHOENIX to its phoenix command)")
    if not (shutil.which("chromium") or os.environ.get("CHROMIUM")):
        if os.environ.get("CI"):
            pytest.fail("CI needs Debian's chromium (.ci/run installs it)")
        pytest.skip("no chromium here (apt-get install chromium)")
    return found


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.fixture
def phoenix(tmp_path: Path):
    """A Phoenix server of this test alone: its own ports, working folder and HOME."""
    binary = phoenix_binary()
    port = free_port()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (tmp_path / "phoenix.log").open("w")
    server = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # it migrates its database first: tens of seconds
            if server.poll() is not None:
                pytest.fail(f"Phoenix exited: {(tmp_path / 'phoenix.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"Phoenix did not start: {(tmp_path / 'phoenix.log').read_text()[-2000:]}")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


async def test_a_run_traced_into_phoenix_is_found_by_its_api_and_seen_in_its_trace_view(
    tmp_path: Path, phoenix: str, monkeypatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "local-test-key-not-real")
    out = io.StringIO()
    with MessagesServer(responder=respond) as server:
        result = await evaluate(run_config(server, tmp_path, phoenix), out=out)
    records = list(iter_example_records(result.run_dir))
    expected = sum(1 + r.calls + len(r.executed()) for r in records)  # agent, chat and tool spans
    assert f"trace: {expected} span(s) to {phoenix}/v1/traces: {expected} sent\n" in out.getvalue()

    projects: list[dict[str, Any]] = []
    spans: list[dict[str, Any]] = []
    for _ in range(240):  # Phoenix takes spans in asynchronously: the project, then its spans, appear
        projects = [p for p in get(phoenix + "/v1/projects")["data"] if p["name"] == "react-bench"]
        if projects:
            spans = get(f"{phoenix}/v1/projects/react-bench/spans?limit=1000")["data"]
            if len(spans) >= expected:
                break
        time.sleep(0.5)
    (project,) = projects
    assert len(spans) == expected
    record = records[0]
    (agent,) = [
        s for s in spans if s["name"] == "invoke_agent react" and s["attributes"]["react_bench.example.id"] == record.id
    ]
    trace_id = agent["context"]["trace_id"]
    children = [s for s in spans if s["parent_id"] == agent["context"]["span_id"]]
    chats = [s for s in children if s["name"] == f"chat {MODEL}"]
    tools = [s for s in children if s["name"].startswith("execute_tool ")]
    assert len(chats) == record.calls and len(tools) == len(record.executed()) > 0
    assert all(s["context"]["trace_id"] == trace_id for s in children)
    assert agent["span_kind"] == "AGENT" and {c["span_kind"] for c in chats} == {"LLM"}

    # the trace view, as a browser renders it
    page = f"{phoenix}/projects/{project['id']}/traces/{trace_id}"
    shot = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "screenshot_report.py"),
            page,
            str(tmp_path / "trace.png"),
            "--width",
            "1400",
            "--height",
            "760",
            "--dom",
            str(tmp_path / "trace.html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shot.returncode == 0, shot.stderr
    dom = (tmp_path / "trace.html").read_text(encoding="utf-8", errors="replace")
    assert trace_id in dom and "invoke_agent react" in dom and f"chat {MODEL}" in dom
    for tool in tools:
        assert tool["name"] in dom
    from PIL import Image

    image = Image.open(tmp_path / "trace.png").convert("L")
    low, high = image.getextrema()
    assert image.size == (1400, 760) and high - low > 100  # a page drawn, not a blank one
    if os.environ.get("REACT_BENCH_DOCS_SHOT"):  # docs/traces.png: the picture the guide shows
        shutil.copy(tmp_path / "trace.png", os.environ["REACT_BENCH_DOCS_SHOT"])
