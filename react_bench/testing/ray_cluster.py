"""A real Ray cluster on this machine for tests and benchmarks: a head and worker nodes, each a
``ray start --block`` process of its own (its own process group), so one node can be killed
like a lost machine (``kill_node``: SIGKILL to the node's raylet and every worker under it).

The head reserves no CPU (``--num-cpus=0``): episodes go to the worker nodes only, as on a
cluster whose head is the driver's machine. Each node gets a temp folder and a block of ports
of its own: nodes of one machine started at once would otherwise pick the same socket names
and Ray's fixed default ports. The folders are short (Unix socket paths are limited to 107
bytes); the object store is small; usage stats are off.

Hermetic: nothing of the user's HOME is read or written. Ray reads ``~/.ray/auth_token`` and, with
``RAY_AUTH_MODE`` unset, turns token authentication on when it finds one (a local ``ray.init()``
writes it). So every process of the cluster gets ``RAY_AUTH_MODE`` stated (``disabled`` unless
the cluster's ``env`` says otherwise) and a HOME of its own under the cluster's temp folder: each
node ``home/<n>``, the readiness probe ``home/probe``; ``driver_env`` is what a driver (a test's
own process, or a script it starts) sets to join it the same way, ``home/driver``.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # stated, so a token in a HOME (the user's ~/.ray/auth_token) never turns authentication on
    "RAY_AUTH_MODE": "disabled",
    # a dead node is noticed in seconds, not the default ~30 s; a live node on a loaded 2-core
    # machine (a CI run) must still answer in time: six checks of 2 s missed before it is dead
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "2000",
    "RAY_health_check_failure_threshold": "6",
}
OBJECT_STORE = str(80 * 1024 * 1024)


def _ray_bin() -> str:
    local = Path(sys.executable).with_name("ray")
    return str(local) if local.exists() else "ray"


SPAN = 1000  # ports of one cluster: base .. base + SPAN - 1


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _port_base() -> int:
    """A block of ports below Linux's ephemeral range (32768-60999), so that no client connection
    made while the nodes start (gRPC to the GCS) takes a port a node is about to listen on."""
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(20000, 32768 - SPAN, 10)
        if all(_free(base + k) for k in (0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15)):
            return base
    raise RuntimeError("no free block of ports between 20000 and 32768")


@dataclass
class LocalCluster:
    """``with LocalCluster(workers=2) as cluster:`` ... ``cluster.address`` ... ``cluster.kill_node(0)``."""

    workers: int = 2
    cpus_per_worker: int = 1
    base: int = field(default_factory=_port_base)
    temp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rbray-", dir="/tmp")))
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return self.base  # the head's GCS

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ports(self) -> list[str]:
        """Ports of this node's own: nodes on one machine would otherwise collide on Ray's fixed
        defaults (the dashboard agent's, the metrics exporter's, the runtime-env agent's)."""
        n = len(self.nodes)  # nodes 0 (the head) .. 8: ten ports each from base + 10, workers' from base + 100
        named = (
            "node-manager",
            "object-manager",
            "metrics-export",
            "dashboard-agent-listen",
            "dashboard-agent-grpc",
            "runtime-env-agent",
        )
        if n > 8:
            raise RuntimeError("a LocalCluster has at most 9 nodes")
        own = self.base + 10 * (n + 1)
        low = self.base + 100 * (n + 1)
        return [f"--{name}-port={own + i}" for i, name in enumerate(named)] + [
            f"--min-worker-port={low}",
            f"--max-worker-port={low + 99}",
        ]

    def home(self, name: str) -> str:
        """A HOME of this cluster's own (made on first use): nothing a node or driver reads or
        writes there (``~/.ray``) is the user's."""
        path = self.temp / "home" / name
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    @property
    def driver_env(self) -> dict[str, str]:
        """The variables a driver sets to join this cluster as its nodes were started: the
        authentication mode stated (and the token, where the cluster's ``env`` has one) and a
        HOME of the cluster's."""
        return {**RAY_ENV, "HOME": self.home("driver"), **self.env}

    def _start_node(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        env = {**os.environ, **RAY_ENV, "HOME": self.home(str(len(self.nodes))), **self.env, **(env or {})}
        log = open(self.temp / f"node{len(self.nodes)}.log", "wb")  # noqa: SIM115 - the node's own, closed by stop
        node = subprocess.Popen(
            [
                _ray_bin(),
                "start",
                "--block",
                "--disable-usage-stats",
                f"--object-store-memory={OBJECT_STORE}",
                f"--temp-dir={self.temp / str(len(self.nodes))}",
                *self._ports(),
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.nodes.append(node)
        return node

    def start(self) -> None:
        try:
            self._start_node(
                "--head",
                f"--port={self.port}",
                "--num-cpus=0",
                "--include-dashboard=false",
                f"--ray-client-server-port={self.base + 1}",
            )
            self.wait_port()
            for _ in range(self.workers):
                self.add_worker()
            self.wait_nodes(self.workers)
        except BaseException:
            self.stop(keep_logs=True)  # nothing left running; the logs kept for the error's reader
            raise

    def add_worker(self, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """A worker node (``env``: its own variables over the cluster's, as another host's)."""
        return self._start_node(f"--address={self.address}", f"--num-cpus={self.cpus_per_worker}", env=env)

    def wait_port(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.nodes[0].poll() is not None:
                raise RuntimeError(f"the Ray head exited: {self.log(0)}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"the Ray head did not listen within {timeout_s} s: {self.log(0)}")

    def wait_nodes(self, n_workers: int, timeout_s: float = 180.0, idle: bool = False) -> None:
        """Until ``n_workers`` worker nodes are alive (asked of the cluster from a subprocess, so
        the caller's process is not connected to Ray); ``idle``: and every CPU of theirs is free
        (a previous run's actors are released a moment after its driver leaves, and a run sizes
        its workers by the free CPUs)."""
        free = "ray.available_resources().get('CPU',0)" if idle else "cpus"
        probe = (
            "import ray,sys,time\n"
            f"ray.init(address='{self.address}', logging_level='ERROR')\n"
            f"end=time.monotonic()+{timeout_s}\n"
            "while time.monotonic()<end:\n"
            "    nodes=[x for x in ray.nodes() if x['Alive'] and x['Resources'].get('CPU',0)>0]\n"
            "    cpus=sum(x['Resources']['CPU'] for x in nodes)\n"
            f"    if len(nodes)=={n_workers} and {free}==cpus: sys.exit(0)\n"
            "    time.sleep(0.2)\n"
            "sys.exit(1)\n"
        )
        env = {**os.environ, **RAY_ENV, "HOME": self.home("probe"), **self.env}
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=timeout_s + 60)
        if done.returncode != 0:
            logs = " | ".join(self.log(i) for i in range(len(self.nodes)))
            raise TimeoutError(
                f"{n_workers} Ray worker node(s) not alive (logs: {self.temp}): {done.stderr.decode()[-500:]} {logs}"
            )

    def kill_node(self, index: int) -> None:
        """SIGKILL worker node ``index`` (0: the first worker) and every process it started, at
        once, as a host that dies takes them all: the node's process group and each descendant
        (Ray's worker processes are in groups of their own; left alone, a worker outlives its
        raylet for a while and goes on answering the driver)."""
        node = self.nodes[1 + index]
        for pid in [*_descendants(node.pid), node.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.wait()

    def log(self, i: int) -> str:
        path = self.temp / f"node{i}.log"
        return path.read_text(errors="replace")[-800:] if path.exists() else ""

    def stop(self, keep_logs: bool = False) -> None:
        """Every node killed at once (a test cluster keeps nothing worth a graceful stop)."""
        for node in reversed(self.nodes):
            try:
                os.killpg(node.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            node.wait()
        if not keep_logs:
            shutil.rmtree(self.temp, ignore_errors=True)


def _descendants(root: int) -> list[int]:
    """Every living process below ``root`` (from /proc), children before their parents' parents."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found[::-1]
