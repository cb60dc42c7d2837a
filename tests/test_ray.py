"""Ray: a real local cluster (a head and two worker nodes, each its own ``ray start`` process on
this machine, one CPU per worker node), the Messages API stand-in answering through the real SDK.

- ``executor=ray``: the run's examples.jsonl has the one-process run's predictions, each example
  once; the request cache is shared (a rerun, on Ray or in one process, makes no request);
- a worker process killed, and a whole worker node killed, mid-run: 0 lost, 0 duplicated;
- the driver killed mid-run: ``resume=`` finishes the run on the cluster;
- one rate limit for the cluster: the stand-in's arrival times of all workers' requests;
- a sweep through ``hydra/launcher=ray`` with its combined table.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from react_bench.evaluate import evaluate
from react_bench.events import RunProgress
from react_bench.methods.core import SolveSettings
from react_bench.runconfig import RaySettings, RunConfig
from react_bench.tasks import TaskConfig
from react_bench.testing.messages_server import MessagesServer, claude_model_config
from react_bench.testing.ray_cluster import LocalCluster
from tests.support import composed
from tests.support_oracle import Oracle, gold_answers

pytest.importorskip("ray")

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "REACT_BENCH_TEST_RAY_KEY"
N = 10


@pytest.fixture(scope="module")
def running_cluster(tmp_path_factory: pytest.TempPathFactory):
    """Started from a HOME that holds another cluster's ``~/.ray/auth_token`` (as a user's does
    after any local ``ray.init()``): the cluster's nodes and drivers must not read it."""
    home = tmp_path_factory.mktemp("user-home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text("a-token-another-cluster-wrote\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.delenv("RAY_AUTH_MODE", raising=False)
        with LocalCluster(workers=2) as running:
            yield running


@pytest.fixture
def cluster(running_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> LocalCluster:
    """The module's cluster with both worker nodes up and every CPU free: the previous test's
    actors are released a moment after its driver leaves, and a run sizes its workers by the free
    CPUs (one worker instead of two made the rate-limit test fail in CI). The test's process and
    the drivers it starts join it with the cluster's own HOME and authentication mode."""
    running_cluster.wait_nodes(2, idle=True)
    for name, value in running_cluster.driver_env.items():
        monkeypatch.setenv(name, value)
    return running_cluster


@pytest.fixture(scope="module")
def golds() -> dict[str, str]:
    return gold_answers(N)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-not-real")


def config(server: MessagesServer, results: Path, cluster: LocalCluster | None, **extra: object) -> RunConfig:
    model = claude_model_config(server.base_url, KEY_ENV, **extra.pop("model", {}))  # type: ignore[arg-type]
    return RunConfig(
        task=TaskConfig(name="hotpotqa", n=int(extra.pop("n", N))),  # type: ignore[call-overload]
        model=model,
        solve=SolveSettings(mode="react", runner=str(extra.pop("runner", "text"))),  # type: ignore[arg-type]
        results_dir=results,
        progress=False,
        executor="local" if cluster is None else "ray",
        ray=RaySettings(address=None if cluster is None else cluster.address),
        **extra,  # type: ignore[arg-type]
    )


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("runner", ["text", "tool_use"])
async def test_ray_run_writes_the_one_process_runs_predictions(tmp_path, cluster, golds, runner):
    with MessagesServer(responder=Oracle(golds)) as server:
        local = await evaluate(
            config(server, tmp_path / "local", None, runner=runner, request_cache="off"), out=io.StringIO()
        )
        out = io.StringIO()
        ray_run = await evaluate(
            config(server, tmp_path / "ray", cluster, runner=runner, concurrency=4, request_cache="off"), out=out
        )
    assert "2 worker(s)" in out.getvalue()  # one per worker node's CPU
    got, want = records(ray_run.run_dir), records(local.run_dir)
    assert len(got) == N and len({r["id"] for r in got}) == N
    assert {r["id"]: r["prediction"] for r in got} == {r["id"]: r["prediction"] for r in want}
    assert ray_run.metrics["em"]["mean"] == 1.0 and ray_run.metrics["errors"] == 0
    assert all(r["worker"] for r in got) and not any("worker" in r for r in want)
    # the cassette has a line per example, as the one-process run's
    cassette = [json.loads(x) for x in (ray_run.run_dir / "calls.jsonl").read_text().splitlines()]
    assert sorted(c["id"] for c in cassette) == sorted(r["id"] for r in want)


async def test_the_request_cache_is_shared_by_the_workers(tmp_path, cluster, golds):
    """The conftest's private cache folder is the driver's; the workers get it (worker_env)."""
    with MessagesServer(responder=Oracle(golds)) as server:
        first = await evaluate(config(server, tmp_path / "a", cluster, concurrency=2), out=io.StringIO())
        sent = len(server.requests)
        again = await evaluate(config(server, tmp_path / "b", cluster, concurrency=2), out=io.StringIO())
        local = await evaluate(config(server, tmp_path / "c", None), out=io.StringIO())
        assert len(server.requests) == sent == 2 * N  # no request on either rerun
    assert first.metrics["request_cache"]["misses"] == 2 * N
    for rerun in (again, local):
        assert rerun.metrics["request_cache"]["hits"] == 2 * N and rerun.metrics["request_cache"]["misses"] == 0
        assert {r["id"]: r["prediction"] for r in records(rerun.run_dir)} == {
            r["id"]: r["prediction"] for r in records(first.run_dir)
        }


def _busy_worker(results: Path, example_id: str) -> int:
    """The pid of the worker that solved ``example_id`` (its line names it): a worker that is up
    and, with examples still waiting, busy with the next one."""
    (lines,) = list(results.rglob("examples.jsonl"))
    record = next(r for r in map(json.loads, lines.read_text().splitlines()) if r["id"] == example_id)
    return int(record["worker"].rpartition("/")[2])


def _node_of(cluster: LocalCluster, pid: int) -> int:
    """The worker node (0: the first) that started ``pid``: its raylet, an ancestor, is in the
    process group of the node's ``ray start``."""
    groups = {node.pid: i for i, node in enumerate(cluster.nodes[1:])}
    while pid > 1:
        if os.getpgid(pid) in groups:
            return groups[os.getpgid(pid)]
        pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])  # the parent
    raise AssertionError("the worker is on no worker node of the cluster")


@pytest.mark.parametrize("what", ["process", "node"])
async def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path, cluster, golds, what):
    killed: list[str] = []

    def on_event(example_id: str, event: object) -> None:
        if isinstance(event, RunProgress) and event.done == 3 and not killed:
            killed.append(example_id)
            pid = _busy_worker(tmp_path, example_id)
            if what == "process":
                os.kill(pid, signal.SIGKILL)
            else:
                node = _node_of(cluster, pid)
                threading.Thread(target=cluster.kill_node, args=(node,)).start()

    try:
        with MessagesServer(responder=Oracle(golds), latency_s=0.3) as server:
            out = io.StringIO()
            cfg = config(server, tmp_path, cluster, concurrency=4, request_cache="off")
            result = await evaluate(cfg, out=out, on_event=on_event)
            sent = len(server.requests)
    finally:
        if what == "node":  # the module's cluster gets its second worker node back
            cluster.add_worker()
            cluster.wait_nodes(2)
    assert killed
    got = records(result.run_dir)
    assert len(got) == N and len({r["id"] for r in got}) == N  # none lost, none written twice
    assert result.metrics["errors"] == 0 and result.metrics["em"]["mean"] == 1.0  # each lost episode ran again
    assert "a worker was lost" in out.getvalue()
    assert sent >= 2 * N  # every example's two calls answered (a call cut off by the kill is not counted)
    assert len({r["worker"] for r in got}) >= 2


async def test_one_rate_limit_for_the_whole_cluster(tmp_path, cluster, golds):
    """model.requests_per_minute=60 with two workers and four examples in flight: the server sees
    one request a second from all of them together (workers each pacing alone would send two).

    Robust to a loaded machine: the run is long enough (16 requests, ~16 s) that the second
    worker joins before the last examples start however slowly it starts, and the windows allow
    for a request delayed on its way (scheduling, connecting) by up to two seconds."""
    n = 8
    with MessagesServer(responder=Oracle(golds)) as server:
        cfg = config(
            server, tmp_path, cluster, n=n, concurrency=4, request_cache="off", model={"requests_per_minute": 60}
        )
        out = io.StringIO()
        result = await evaluate(cfg, out=out)
        arrived = sorted(r.received for r in server.requests)
    assert result.metrics["errors"] == 0 and len(arrived) == 2 * n
    # both workers sent requests (the run's own lines say how many workers joined, and why not)
    assert len({r["worker"] for r in records(result.run_dir)}) == 2, out.getvalue()
    # Paced at 1 s: the 16 requests span at least 15 s on the limiter's clock (two workers pacing
    # alone: about 8 s); a request's delay on the way only shifts single arrivals later.
    assert arrived[-1] - arrived[0] >= 15.0 - 2.5
    in_four_seconds = max(sum(1 for t in arrived if a <= t < a + 4.0) for a in arrived)
    assert in_four_seconds <= 6  # 4 by the limit, 5 at a window's edges, one more delayed (alone: 8)


def test_a_sweep_through_the_ray_launcher(tmp_path, cluster, golds):
    with MessagesServer(responder=Oracle(golds)) as server:
        env = {**os.environ, KEY_ENV: "test-key-not-real"}
        done = subprocess.run(
            [
                sys.executable,
                "scripts/eval.py",
                "-m",
                "mode=react,act",
                "model=claude-sonnet-4-6",
                f"model.base_url={server.base_url}",
                f"model.api_key_env={KEY_ENV}",
                "model.max_retries=0",
                "n=3",
                "hydra/launcher=ray",
                f"ray.address={cluster.address}",
                f"results_dir={tmp_path}",
                "progress=false",
                "cache=false",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "combined table of sweep" in done.stdout and "(2 runs;" in done.stdout
    runs = sorted(tmp_path.glob("hotpotqa/*/*/sweep-*/metrics.json"))
    assert [p.parents[1].name for p in runs] == ["act-text", "react-text"]
    assert all(json.loads(p.read_text())["n"] == 3 for p in runs)
    assert "_run_job pid=" in done.stdout  # the jobs ran as Ray tasks, not in this process


def test_an_error_inside_a_worker_reaches_the_user_as_the_projects_own_line(tmp_path, cluster):
    """A scripted model whose script runs out inside a worker: the same one line as in one process,
    not Ray's wrapper (``ray::_Worker.solve() (pid=..., actor_id=...)``)."""
    script = tmp_path / "short.json"
    script.write_text(json.dumps([" I search.\nAction 1: Search[X]\nObservation 1:"]))
    argv = [
        sys.executable,
        "scripts/eval.py",
        "model=scripted",
        f"model.script={script}",
        "n=1",
        "progress=false",
        f"results_dir={tmp_path}",
        "cache=false",
    ]
    local = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    on_ray = subprocess.run(
        [*argv, "executor=ray", f"ray.address={cluster.address}", "ray.workers=1", f"results_dir={tmp_path / 'ray'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = [p.stderr.strip().splitlines()[-1] for p in (local, on_ray)]
    assert said[0].startswith("error: ") and "script" in said[0], local.stderr[-2000:]
    assert said[1] == said[0] and on_ray.returncode == local.returncode == 2, on_ray.stderr[-2000:]
    assert "ray::" not in said[1]


def test_the_driver_killed_mid_run_resumes_on_the_cluster(tmp_path, cluster, golds):
    with MessagesServer(responder=Oracle(golds), latency_s=0.3) as server:
        env = {**os.environ, KEY_ENV: "test-key-not-real"}
        argv = [
            sys.executable,
            "scripts/eval.py",
            "model=claude-sonnet-4-6",
            f"model.base_url={server.base_url}",
            f"model.api_key_env={KEY_ENV}",
            "model.max_retries=0",
            f"n={N}",
            "executor=ray",
            f"ray.address={cluster.address}",
            f"results_dir={tmp_path}",
            "progress=false",
            "cache=false",
            "run_id=killed",
            "concurrency=2",
        ]
        driver = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        examples = tmp_path / "hotpotqa" / "claude-sonnet-4-6" / "react-text" / "killed" / "examples.jsonl"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            if examples.exists() and len(examples.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        driver.kill()  # SIGKILL: no handler runs
        driver.wait()
        before = len(examples.read_text().splitlines())
        assert 2 <= before < N
        resumed = subprocess.run(
            argv[:-2] + [f"resume={examples.parent}"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    got = records(examples.parent)
    assert len(got) == N and len({r["id"] for r in got}) == N
    assert json.loads((examples.parent / "metrics.json").read_text())["em"]["mean"] == 1.0


def test_executor_ray_settings_are_checked():
    from react_bench.errors import ConfigError

    cfg = RunConfig.from_mapping(composed("executor=ray", "ray.address=auto", "ray.workers=3"))
    assert (cfg.executor, cfg.ray) == ("ray", RaySettings("auto", 3, 1.0))
    assert RunConfig.from_mapping(composed()).executor == "local"
    with pytest.raises(ConfigError, match="executor=spark"):
        RunConfig.from_mapping(composed("executor=spark"))
    with pytest.raises(ConfigError, match="batch=true"):
        RunConfig.from_mapping(composed("executor=ray", "batch=true", "model=claude-haiku-4-5"))
    with pytest.raises(ConfigError, match=r"unknown ray settings \[.nodes.\]"):
        RunConfig.from_mapping(composed("+ray.nodes=2"))


def test_a_cluster_that_is_not_there_is_one_line(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "scripts/eval.py",
            "model=claude-sonnet-4-6",
            "model.base_url=http://127.0.0.1:9",
            "n=1",
            "executor=ray",
            "ray.address=127.0.0.1:9",
            f"results_dir={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ANTHROPIC_API_KEY": "not-a-key"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: executor=ray: could not connect to ray.address=")


def test_the_guides_commands_with_token_authentication(tmp_path):
    """docs/guide.md, 'Past one machine: Ray', as written, with the pinned Ray on fresh hosts (each
    its own HOME): the head's token made with ``ray get-auth-token --generate``, every ``ray start``
    with ``RAY_AUTH_MODE=token``; a worker without the token is refused; with ``RAY_AUTH_TOKEN=...``
    it joins, and ``executor=ray`` and
    ``hydra/launcher=ray`` run on the two-node cluster from a driver given the same two variables."""
    from react_bench.testing.ray_cluster import RAY_ENV, _ray_bin

    head_home, worker_home, driver_home = (tmp_path / name for name in ("head", "worker", "driver"))
    for home in (head_home, worker_home, driver_home):
        home.mkdir()
    env = {**os.environ, **RAY_ENV, "HOME": str(head_home)}
    made = subprocess.run(
        [_ray_bin(), "get-auth-token", "--generate"], env=env, capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr[-2000:]
    token = (head_home / ".ray" / "auth_token").read_text().strip()
    with LocalCluster(workers=0, env={"HOME": str(head_home), "RAY_AUTH_MODE": "token"}) as cluster:
        refused = cluster.add_worker(env={"HOME": str(worker_home)})
        assert refused.wait(timeout=120) != 0
        assert "token" in cluster.log(1).lower() and "authentication" in cluster.log(1).lower()
        with_token = {"HOME": str(worker_home), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        cluster.add_worker(env=with_token)
        cluster.add_worker(env={**with_token, "HOME": str(tmp_path / "worker2")})
        cluster.env.update(RAY_AUTH_TOKEN=token)  # (its probe is a driver too)
        cluster.wait_nodes(2)
        script = tmp_path / "script.json"
        steps = [" I search.\nAction 1: Search[X]\nObservation 1:", " I know.\nAction 2: Finish[X]"]
        script.write_text(json.dumps(steps * 2))
        driver = {**os.environ, "HOME": str(driver_home), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
        common = [
            "model=scripted",
            f"model.script={script}",
            "n=2",
            "progress=false",
            "cache=false",
            f"ray.address={cluster.address}",
        ]
        argv = [sys.executable, "scripts/eval.py", *common, "executor=ray", f"results_dir={tmp_path / 'a'}"]
        run = subprocess.run(argv, cwd=REPO, env=driver, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        assert "on 3 node(s) with 2 CPU(s)" in run.stdout
        one_call = tmp_path / "one_call.json"
        one_call.write_text(json.dumps([" X", " X"]))  # standard and cot: one call an example
        common[1] = f"model.script={one_call}"
        sweep = subprocess.run(
            [
                sys.executable,
                "scripts/eval.py",
                "-m",
                "mode=standard,cot",
                *common,
                "hydra/launcher=ray",
                f"results_dir={tmp_path / 'b'}",
            ],
            cwd=REPO,
            env=driver,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert sweep.returncode == 0, sweep.stderr[-3000:]
        assert "(2 runs;" in sweep.stdout and "_run_job pid=" in sweep.stdout
        common[1] = f"model.script={script}"
        # a driver without the token is told what to set, in one line
        lost = {k: v for k, v in driver.items() if not k.startswith("RAY_AUTH")}
        bare = subprocess.run(
            [sys.executable, "scripts/eval.py", *common, "executor=ray", f"results_dir={tmp_path / 'c'}"],
            cwd=REPO,
            env=lost,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert bare.returncode == 2 and "RAY_AUTH_MODE=token" in bare.stderr.strip().splitlines()[-1]


async def test_the_api_key_reaches_the_workers_and_no_file_ray_writes(tmp_path, cluster, golds, monkeypatch):
    """The key goes to the workers by their setup hook, not as a runtime_env variable (which Ray
    writes in clear into runtime_env_agent.log): the run's calls are made with it, and no file
    under the cluster's folders (every node's session logs) nor the run's folder holds it."""
    canary = "sk-ant-canary-" + os.urandom(8).hex()
    monkeypatch.setenv(KEY_ENV, canary)
    with MessagesServer(responder=Oracle(golds)) as server:
        result = await evaluate(
            config(server, tmp_path / "run", cluster, n=4, concurrency=2, request_cache="off"), out=io.StringIO()
        )
        sent = len(server.requests)
    assert result.metrics["errors"] == 0 and sent == 2 * 4  # the workers had the key (else: no API key, errors)
    assert all(r["worker"] for r in records(result.run_dir))
    leaked = [
        p
        for root in (cluster.temp, tmp_path)
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and canary.encode() in p.read_bytes()
    ]
    assert leaked == []
    assert any(cluster.temp.rglob("runtime_env_agent.log"))  # the log Ray wrote the key into, before


async def test_a_run_that_cannot_start_its_workers_says_so_and_leaves_no_connection(
    tmp_path, cluster, golds, monkeypatch
):
    """ray.num_cpus=3 on worker nodes of one CPU: no worker fits. After waiting a moment for CPUs
    a run just before may still hold, one line names the shortfall, and the process is no longer
    connected (a driver left connected to a cluster that later goes away is ended by Ray, exit 1,
    nothing said)."""
    from dataclasses import replace

    import ray

    import react_bench.executors.ray as cluster_module
    from react_bench.errors import ConfigError

    monkeypatch.setattr(cluster_module, "SLOT_WAIT_S", 1.0)
    with MessagesServer(responder=Oracle(golds)) as server:
        cfg = config(server, tmp_path, cluster, n=2, request_cache="off")
        cfg = replace(cfg, ray=RaySettings(address=cluster.address, num_cpus=3.0))
        with pytest.raises(ConfigError, match=r"free CPU\(s\), a worker needs ray.num_cpus=3"):
            await evaluate(cfg, out=io.StringIO())
        assert not ray.is_initialized()
        assert server.requests == []
