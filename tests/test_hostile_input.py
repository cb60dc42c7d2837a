"""Hostile text and received run folders (docs/security.md): no secret into a file or onto the
console, no write outside the folder it belongs in, no input that stalls a run.

Real files, real servers, real processes: the OpenAI-compatible stand-in behind a base URL with a
password in it, crafted run folders resumed and exported by ``scripts/``, links planted in them,
the WebShop server spoken to over raw sockets, and every pattern run on model or page text timed
on 100 KB of the input that made the old one backtrack."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from react_bench.environment import UNPARSED
from react_bench.envs.alfworld.env import COMMANDS, alfworld_action
from react_bench.envs.wiki.live import page_text
from react_bench.redact import redacted, without_userinfo
from react_bench.runners.parsing import _finish_answer, extract_answer, robust_parse, robust_parse_act
from react_bench.tasks.alfworld import _description
from react_bench.testing.messages_server import MessagesServer
from react_bench.testing.openai_hostile import SHAPES
from react_bench.testing.openai_server import Chunks, OpenAIServer, oracle_chunks
from react_bench.testing.walker import Walk
from tests.support import REPO
from tests.support_oracle import Oracle, gold_answers

CANARY = "canary-" + os.urandom(6).hex()
KB100 = 100_000
# Linear handling of 100 KB takes milliseconds; the patterns replaced here took from seconds
# (quadratic) to hours (cubic) on it. The bound is generous on purpose: a loaded 2-core machine
# must never fail it, a backtracking pattern always does.
BOUND_S = 3.0


def _files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes()]


def _eval(*args: str, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval.py"), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


# ---------------------------------------------------------------------------- secrets


def test_without_userinfo_strips_credentials_and_nothing_else() -> None:
    assert without_userinfo("http://u:p@host:8/v1") == "http://host:8/v1"
    assert (
        without_userinfo("cannot reach https://me@h/x (and http://a:b@c)") == "cannot reach https://h/x (and http://c)"
    )
    assert without_userinfo("mail a@b, see http://h/x?q=a@b") == "mail a@b, see http://h/x?q=a@b"
    assert redacted({"m": {"base_url": "http://u:p@h"}, "l": ["x://k:s@y/"], "n": 3}) == {
        "m": {"base_url": "http://h"},
        "l": ["x://y/"],
        "n": 3,
    }


def test_a_password_in_the_base_url_reaches_no_file_and_no_console(tmp_path: Path) -> None:
    """A run against a server that streams two choices (the warning names the endpoint) and one
    against a server that is not there (the error records name it): the password is nowhere."""
    golds = gold_answers(2)
    walk = Walk(steps=2, answers=golds)
    fan_out = next(s for s in SHAPES if s.name == "a second choice")

    def respond(path: str, body: dict) -> Chunks:
        return fan_out.build(oracle_chunks(walk, path, body))  # type: ignore[return-value]

    with OpenAIServer(respond) as server:
        url = server.base_url.replace("http://", f"http://user:{CANARY}@")
        ran = _eval("model=openai", f"model.base_url={url}", "n=2", f"results_dir={tmp_path / 'a'}", "cache=false")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "streamed more than one choice" in ran.stderr and CANARY not in ran.stdout + ran.stderr
    lost = _eval(
        "model=openai",
        f"model.base_url=http://user:{CANARY}@127.0.0.1:9/v1",
        "model.max_retries=0",
        "n=2",
        f"results_dir={tmp_path / 'b'}",
        "cache=false",
    )
    assert (
        "cannot reach http://127.0.0.1:9/v1"
        in (tmp_path / "b")
        .joinpath(*next((tmp_path / "b").rglob("examples.jsonl")).relative_to(tmp_path / "b").parts)
        .read_text()
    )
    assert CANARY not in lost.stdout + lost.stderr
    assert _files_holding(tmp_path, CANARY) == []
    # the run's own record keeps the endpoint, without the password
    header = json.loads(next((tmp_path / "a").rglob("run.json")).read_text())
    assert header["composed"]["model"]["base_url"] == server.base_url


def _cut_short_run(server: MessagesServer, key_var: str, results: Path, env: dict[str, str]) -> Path:
    """A two-example run against ``server`` with the key in ``key_var``, cut back to one example
    (the other left for a resume): its folder."""
    made = _eval(
        "model=claude-sonnet-4-6",
        f"model.base_url={server.base_url}",
        f"model.api_key_env={key_var}",
        "n=2",
        f"results_dir={results}",
        "run_id=cut",
        "cache=false",
        env=env,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    (run_dir,) = [p.parent for p in results.rglob("run.json")]
    examples = run_dir / "examples.jsonl"
    examples.write_text(examples.read_text().splitlines()[0] + "\n")
    return run_dir


def test_resuming_a_received_folder_sends_no_secret_where_the_user_did_not_say(tmp_path: Path) -> None:
    """A folder whose run.json names its author's server and one of the user's variables: resume
    stops with one line and sends nothing; restating the endpoint and variable resumes."""
    golds = gold_answers(3)
    stolen = {"REACT_BENCH_TEST_SOMEONES_VAR": CANARY, "REACT_BENCH_TEST_OWN_KEY": "own-key"}
    # made on its author's machine: its route signed with a key that is not this user's
    authors = {**stolen, "REACT_BENCH_CACHE": str(tmp_path / "authors-cache")}
    with MessagesServer(responder=Oracle(golds)) as theirs:
        run_dir = _cut_short_run(theirs, "REACT_BENCH_TEST_SOMEONES_VAR", tmp_path / "theirs", authors)
        examples = run_dir / "examples.jsonl"
        assert json.loads((run_dir / "run.json").read_text())["route_signature"]
        before = len(theirs.requests)
        resumed = _eval(f"resume={run_dir}", env=stolen)
        assert len(theirs.requests) == before  # nothing sent
    assert resumed.returncode == 2 and resumed.stderr.count("\n") == 1
    said = resumed.stderr.strip()
    assert said.startswith("error: resume: ") and "model.base_url=" in said and "model.api_key_env=" in said
    assert CANARY not in said
    with MessagesServer(responder=Oracle(golds)) as own:
        restated = _eval(
            f"resume={run_dir}",
            f"model.base_url={own.base_url}",
            "model.api_key_env=REACT_BENCH_TEST_OWN_KEY",
            env=stolen,
        )
        assert restated.returncode == 0, restated.stderr[-2000:]
        assert len(own.requests) == 2  # the one example left, its two steps
    assert len(examples.read_text().splitlines()) == 2
    # a run of the user's own resumes with its folder alone (its route signed by this user)
    with MessagesServer(responder=Oracle(golds)) as own:
        mine_dir = _cut_short_run(own, "REACT_BENCH_TEST_OWN_KEY", tmp_path / "mine", stolen)
        again = _eval(f"resume={mine_dir}", env=stolen)
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(own.requests) == 2 * 2 + 2  # the run's two examples, then the one resumed


# ------------------------------------------------------------------ files outside the folder


def _finished_run(tmp_path: Path, run_id: str = "mine") -> Path:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([" I know.\nAction 1: Finish[X]"] * 2))
    done = _eval("model=scripted", f"model.script={script}", "n=2", f"results_dir={tmp_path / 'r'}", f"run_id={run_id}")
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = [p.parent for p in (tmp_path / "r").rglob("run.json")]
    return run_dir


def _export(run_dir: Path, to: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "export.py"), str(run_dir), "--to", to],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _say_run_id(run_dir: Path, run_id: str) -> None:
    header = json.loads((run_dir / "run.json").read_text())
    header["run_id"] = run_id
    (run_dir / "run.json").write_text(json.dumps(header))


def test_a_run_id_in_a_received_run_json_is_never_a_path(tmp_path: Path) -> None:
    run_dir = _finished_run(tmp_path)
    _say_run_id(run_dir, "../../../escaped")
    before = {p for p in tmp_path.rglob("*")}
    exported = _export(run_dir, "inspect")
    assert exported.returncode == 0, exported.stderr[-2000:]
    added = {p for p in tmp_path.rglob("*")} - before
    assert added and all(run_dir in p.parents for p in added)  # the .eval file is inside the run folder
    assert not list(tmp_path.rglob("escaped*"))
    _say_run_id(run_dir, "/tmp/absolute-escape")
    assert not Path("/tmp/absolute-escape.eval").exists()


@pytest.mark.parametrize("planted", [".lock", "examples.jsonl"])
def test_resume_never_writes_through_a_link_in_the_folder(tmp_path: Path, planted: str) -> None:
    run_dir = _finished_run(tmp_path)
    victim = tmp_path / "users-own-file.txt"
    victim.write_text("the user's own words\n")
    kept = run_dir / planted
    if kept.exists():
        kept.unlink()
    kept.symlink_to(victim)
    resumed = _eval(f"resume={run_dir}", "retry_errors=true")
    assert resumed.returncode == 2 and "is a link" in resumed.stderr.strip().splitlines()[-1]
    assert victim.read_text() == "the user's own words\n"


def test_export_never_writes_through_a_link_in_the_folder(tmp_path: Path) -> None:
    run_dir = _finished_run(tmp_path)
    victim = tmp_path / "users-own-file.txt"
    victim.write_text("the user's own words\n")
    (run_dir / "examples.csv").symlink_to(victim)
    exported = _export(run_dir, "csv")
    assert exported.returncode == 2 and "is a link" in exported.stderr
    assert victim.read_text() == "the user's own words\n"


async def test_a_batch_result_the_run_did_not_send_is_never_a_file(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Batches API that answers with a ``custom_id`` the client never sent (``../../x``, or a
    key-shaped one): ignored and counted; the request cache and the run hold only the run's."""
    import io

    from react_bench.evaluate import evaluate
    from react_bench.methods.core import SolveSettings
    from react_bench.runconfig import RunConfig
    from react_bench.tasks import TaskConfig
    from react_bench.testing.messages_server import Reply, claude_model_config
    from tests.support_oracle import question_of

    monkeypatch.setenv("REACT_BENCH_TEST_HOSTILE_KEY", "test-key-not-real")
    golds = gold_answers(3)
    with MessagesServer(responder=lambda body: Reply.text(golds[question_of(body)])) as server:
        made = server._new_batch

        def hostile(requests: list[dict]) -> object:
            batch = made(requests)
            good = batch.results[0]["result"]
            batch.results += [
                {"custom_id": "../../../escaped-by-batch", "result": good},
                {"custom_id": "ab" * 32, "result": good},
            ]
            return batch

        server._new_batch = hostile  # type: ignore[method-assign]
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=3),
            model=claude_model_config(server.base_url, "REACT_BENCH_TEST_HOSTILE_KEY"),  # type: ignore[arg-type]
            solve=SolveSettings(mode="standard"),
            results_dir=tmp_path,
            run_id="batched",
            progress=False,
            batch=True,
            batch_poll_s=0.01,
        )
        out = io.StringIO()
        result = await evaluate(cfg, out=out)
    assert result.metrics["errors"] == 0 and result.metrics["em"]["mean"] == 1.0
    base = tmp_path_factory.getbasetemp()
    assert not list(base.rglob("escaped-by-batch*")) and not list(base.rglob("ab" * 32 + "*"))


# ------------------------------------------------------------------ linear in the input


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


HOSTILE: dict[str, Callable[[], object]] = {
    "thought label, a run of spaces": lambda: robust_parse("Thought" + " " * KB100, 1),
    "thought label, spaces after a number": lambda: robust_parse("Thought 1" + " " * KB100, 1),
    "action label, a run of spaces": lambda: robust_parse("x\nAction" + " " * KB100, 1),
    "action label, tabs after a number": lambda: robust_parse_act("Action 1" + "\t" * KB100, 1),
    "observation line, a run of tabs": lambda: robust_parse("x\nObservation" + "\t" * KB100, 1),
    "observation lines, many": lambda: robust_parse("\nObservation 1 " * (KB100 // 15), 1),
    "finish[ repeated": lambda: extract_answer("finish[" * (KB100 // 7)),
    "finish[ with spaces": lambda: extract_answer("finish" + " " * KB100),
    "answer label, spaces": lambda: extract_answer("answer" + " " * KB100),
    "the answer is, repeated": lambda: extract_answer("the answer is " * (KB100 // 14)),
    "a heading of =": lambda: page_text("=" * KB100 + " a b c"),
    "an alfworld command, long": lambda: alfworld_action("put " + "a in/on " * (KB100 // 8)),
    "an alfworld command, no separator": lambda: alfworld_action("take " + "x" * KB100),
    "an alfworld game's task line, unclosed": lambda: _description({"grammar": "Your task is to: x" * (KB100 // 18)}),
    "a url with credentials, long": lambda: without_userinfo("http://" + "a" * KB100 + "@"),
    "many schemes": lambda: without_userinfo("x://" * (KB100 // 4) + "@"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_each_pattern_on_hostile_text_is_linear(case: str) -> None:
    assert _timed(HOSTILE[case]) < BOUND_S


def test_the_linear_readers_read_as_the_patterns_they_replace() -> None:
    """The rewritten readers against the old regular expressions, on random short texts over the
    characters that matter (the same matches, the same groups)."""
    rng = random.Random(7)
    finish = re.compile(r"finish[ \t]*\[(?P<answer>[^\]\n]*)\]", re.IGNORECASE)
    heading = re.compile(r"^=+.*=+$")
    forms = [
        (name, re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.+?)", re.escape(form)) + "$"))
        for name, form, _, _ in COMMANDS
    ]
    for _ in range(4000):
        text = "".join(
            rng.choice(["finish", "[", "]", "\n", " ", "x", "FINISH", "\t"]) for _ in range(rng.randrange(12))
        )
        want = finish.search(text)
        assert _finish_answer(text) == (want["answer"] if want else None), text
        ends = ["".join(rng.choice("=x") for _ in range(rng.randrange(4))) for _ in range(2)]
        line = f"{ends[0]} a b c {ends[1]}".strip()  # three words or more: kept unless a heading
        assert (page_text(line) == "") == bool(heading.match(line)), line
        words = ["put ", "take ", "go to ", " in/on ", " from ", "a", "b", " ", "\n", "look", "desk 1"]
        command = "".join(rng.choice(words) for _ in range(rng.randrange(7)))
        expected = next(((n, m.groupdict()) for n, p in forms if (m := p.match(command))), None)
        grammar = "".join(rng.choice(["Your task is to: ", ".", '"', '."', "\n", "x", " "]) for _ in range(8))
        old = re.search(r"Your task is to: (.*?)\.\"", grammar)
        assert _description({"grammar": grammar}) == (old.group(1) if old else ""), repr(grammar)
        got = alfworld_action(command)
        if command.startswith("think:"):
            continue
        assert (got.name, got.arguments) == (expected or (UNPARSED, {})), repr(command)


# ------------------------------------------------------------------ the WebShop server


@pytest.fixture(scope="module")
def shop():
    from react_bench.envs.webshop.catalog import Catalog
    from react_bench.envs.webshop.server import WebShopServer

    catalog = Catalog.generate(0, 50, 5)
    with WebShopServer(catalog) as server:
        server.session, server.asin = catalog.goals[0].session, catalog.goals[0].asin  # type: ignore[attr-defined]
        yield server


def _raw(server, request: bytes, wait_s: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=wait_s) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", b"400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", b"400"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", b"413"),
        (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", b"400"),
        (b"GET /search_results/SESSION/[" + b"-" * 20000 + b"1]/1 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
        (b"GET /search_results/SESSION/[" + b"[" * 3000 + b"/1 HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
        (b"GET /item_page/SESSION/ASIN/q/1/" + b"{1:" * 1000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"400"),
        (b"GARBAGE\r\n\r\n", b"400"),
    ],
)
def test_every_malformed_request_to_the_webshop_server_is_answered(shop, request_bytes: bytes, status: bytes) -> None:
    request = request_bytes.replace(b"SESSION", shop.session.encode()).replace(b"ASIN", shop.asin.encode())
    answer = _raw(shop, request)
    if answer.startswith(b"HTTP/"):
        assert answer.split(b"\r\n", 1)[0].split(b" ")[1] == status, answer[:200]
    else:  # a request line that is not HTTP/1.x: the stdlib answers as HTTP/0.9, the page alone
        assert b"Error code: " + status in answer, answer[:300]


def test_the_webshop_server_goes_on_after_them(shop) -> None:
    answer = _raw(shop, f"GET /{shop.session} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 200 ")


async def test_an_answer_past_the_size_cap_is_cut_off_and_recorded(tmp_path: Path) -> None:
    """A server that streams 5 million characters as one answer: the call is cut off at 4 million
    (never held whole), retried, then recorded as the example's error, which says why."""
    import io

    from react_bench.evaluate import evaluate
    from react_bench.methods.core import SolveSettings
    from react_bench.models.collector import MAX_RESPONSE_CHARS
    from react_bench.runconfig import RunConfig
    from react_bench.tasks import TaskConfig
    from react_bench.testing.openai_server import model_config

    piece = "x" * 100_000
    chunks = [
        {"id": "c", "object": "text_completion", "created": 1, "model": "m", "choices": [{"index": 0, "text": piece}]}
    ] * (MAX_RESPONSE_CHARS // len(piece) + 10)
    with OpenAIServer(lambda path, body: Chunks(tuple(chunks))) as server:
        cfg = RunConfig(
            task=TaskConfig(name="hotpotqa", n=1),
            model=model_config(server.base_url, max_retries=1),  # type: ignore[arg-type]
            solve=SolveSettings(mode="standard"),
            results_dir=tmp_path,
            progress=False,
            request_cache="off",
        )
        result = await evaluate(cfg, out=io.StringIO())
        tries = len(server.requests)
    (row,) = [json.loads(x) for x in (result.run_dir / "examples.jsonl").read_text().splitlines()]
    assert row["reason"] == "error" and f"passed {MAX_RESPONSE_CHARS:,} characters" in row["error"], row["error"]
    assert tries == 2  # retried once, as a cut stream is


def _module_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern at the top of a react_bench module (the testing stand-ins aside)."""
    import importlib
    import pkgutil

    import react_bench

    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(react_bench.__path__, "react_bench."):
        if ".testing" in info.name:
            continue
        module = importlib.import_module(info.name)
        found.update({f"{info.name}.{k}": v for k, v in vars(module).items() if isinstance(v, re.Pattern)})
    return found


def slow_module_patterns(bound_s: float = BOUND_S) -> list[str]:
    """The package's compiled patterns that take ``bound_s`` or more on one 100 KB run of the
    characters and words that make backtracking patterns blow up (a single character repeated;
    each word of the pattern repeated, or followed by spaces, tabs or a number and spaces)."""
    slow = []
    for name, pattern in _module_patterns().items():
        words = sorted(set(re.findall(r"[A-Za-z]{3,}", pattern.pattern)))[:8]
        texts = [c * KB100 for c in " \t\n=[]*_x0:-.,'\"`<>/\\"]
        for word in words:
            texts += [(word + " ") * (KB100 // (len(word) + 1)), (word + "[") * (KB100 // (len(word) + 1))]
            texts += [word + " " * KB100, word + "\t" * KB100, word + "1" + " " * KB100]
        took = max(_timed(lambda t=text, p=pattern: list(p.finditer(t))) for text in texts)  # type: ignore[misc]
        if took >= bound_s:
            slow.append(f"{name} ({took:.1f} s)")
    return slow


def test_every_module_pattern_is_linear_on_runs_of_its_own_pieces() -> None:
    """The guard for patterns to come, in a process of its own so that a cubic one fails at the
    time limit instead of stalling the suite."""
    assert len(_module_patterns()) >= 20  # the walk finds the package's patterns
    check = "from tests.test_hostile_input import slow_module_patterns; print(slow_module_patterns())"
    try:
        done = subprocess.run([sys.executable, "-c", check], cwd=REPO, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a pattern of the package ran past 120 s on 100 KB of hostile text")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_route_key_is_the_users_alone_and_a_read_only_cache_signs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from react_bench.redact import route_signature, signed_here

    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "cache"))
    route = {"provider": "anthropic", "base_url": "http://h", "api_key_env": "K"}
    signature = route_signature(route)
    assert signature and signed_here(route, signature)
    assert (tmp_path / "cache" / "route.key").stat().st_mode & 0o077 == 0  # the user's alone
    assert not signed_here({**route, "base_url": "http://elsewhere"}, signature)
    monkeypatch.setenv("REACT_BENCH_CACHE", str(tmp_path / "other-users-cache"))
    assert not signed_here(route, signature)  # another key: another user's folder
    blocked = tmp_path / "read-only"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("REACT_BENCH_CACHE", str(blocked / "cache"))
    assert route_signature(route) is None
