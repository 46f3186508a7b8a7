"""`mcp serve --ray-address` on a cluster of two Ray nodes over the shared stores (a PostgreSQL catalog
and an S3 bucket on real servers), with no registry directory in common: each replica works in a
scratch directory of its own. A promote and a rollback reach the replicas on both nodes within the sync
interval; stopping the second node (drained first, as KubeRay or the autoscaler do) under load leaves
every request answered, its replica replaced on the first node; and killing it outright (SIGKILL to its
raylet and workers) loses no request either: the front sends the requests its replica held again.

Both nodes run on this machine (``ray.cluster_utils.Cluster``, Ray's own multi-node test harness) in a
private RAY_TMPDIR, so that no other Ray on the machine sees or joins this cluster. The head node is
started once for the module (it was started for each test); each test adds a second node of its own
and loses it."""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from mcp2026ai.deploy.ray_replica import FORWARDED_ENV, REPLICA_HEADER
from mcp2026ai.registry import Stage
from support.models import chained_matmul_model, mlp_model
from tests.support.stores import Backend

from .conftest import listening_line, mcp_command
from .test_ray_serve import BODY, REPLICA_PROCESS, free_port, wait_until

pytest.importorskip("ray.serve", reason="the [ray] extra")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SYNC_INTERVAL_S = 0.5
NODE_MEMORY = {"object_store_memory": 100 << 20, "include_dashboard": False}


@dataclass
class Answers:
    """The latest v2 answer of each replica (``x-mcp-replica: <replica>@<node>``) through the proxy."""

    address: str
    model: str = "mlp"
    body: dict[str, Any] = field(default_factory=lambda: BODY)
    latest: dict[str, str] = field(default_factory=dict)

    def ask(self, http: httpx.Client) -> tuple[str, str]:
        response = http.post(f"http://{self.address}/v2/models/{self.model}/infer", json=self.body)
        assert response.status_code == 200, response.text
        replica, version = response.headers[REPLICA_HEADER], str(response.json()["model_version"])
        self.latest[replica] = version
        return replica, version

    def nodes(self) -> set[str]:
        return {replica.split("@")[1] for replica in self.latest}


@pytest.fixture(scope="module")
def ray_head() -> Iterator[tuple[Any, Path]]:
    """A head node (2 CPUs: room for both replicas once the second node is gone) with a small object
    store, started once for the module (each test adds and loses a second node of its own); yields
    (cluster, the private RAY_TMPDIR).

    Ray's proxies prefer replicas on their own node; here the head's proxy is the one entry point and
    spreads over both nodes (as one proxy behind a load balancer would), and the second node's proxy
    gets a port of its own (on one machine both would otherwise share the port with SO_REUSEPORT)."""
    from ray.cluster_utils import Cluster

    private = tempfile.mkdtemp(prefix="mcp-ray-", dir="/tmp")  # short: Ray's socket paths live below it
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", private)
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        patch.setenv("RAY_SERVE_PROXY_PREFER_LOCAL_NODE_ROUTING", "0")
        patch.setenv("RAY_SERVE_WORKER_PROXY_HTTP_PORT", str(free_port()))
        cluster = Cluster(shutdown_at_exit=False)
        try:
            with node_environment(patch, Path(private) / "scratch" / "head"):
                cluster.add_node(num_cpus=2, **NODE_MEMORY)  # the first node added is the head
            yield cluster, Path(private)
        finally:
            cluster.shutdown()
            stop_leftovers(private)
            if not os.environ.get("KEEP_RAY_TMP"):
                shutil.rmtree(private, ignore_errors=True)


@dataclass(frozen=True)
class Nodes:
    """The module's head and this test's second node, with the TMPDIR of each (where the replicas'
    scratch directories go), and the cluster's private RAY_TMPDIR."""

    cluster: Any
    second: Any
    scratch: tuple[Path, Path]
    ray_tmpdir: Path
    earlier: frozenset[Path] = frozenset()
    """Replica directories an earlier test left on the head (a replica killed on its way out)."""

    def replica_homes(self) -> list[Path]:
        """This test's replicas' scratch directories."""
        found = (path for tmpdir in self.scratch for path in tmpdir.glob("mcp-replica-*"))
        return sorted(path for path in found if path not in self.earlier)


@pytest.fixture
def two_nodes(ray_head: tuple[Any, Path], request: pytest.FixtureRequest) -> Iterator[Nodes]:
    """The module's head and a second node (1 CPU) added for this test. The nodes start without the
    stores' settings (the driver must forward them) and with a TMPDIR of their own."""
    cluster, private = ray_head
    scratch = (private / "scratch" / "head", private / "scratch" / request.node.name)
    with pytest.MonkeyPatch.context() as patch, node_environment(patch, scratch[1]):
        second = cluster.add_node(num_cpus=1, **NODE_MEMORY)
    try:
        yield Nodes(cluster, second, scratch, private, frozenset(scratch[0].glob("mcp-replica-*")))
    finally:
        if second in cluster.worker_nodes:  # a test that failed before removing it
            cluster.remove_node(second, allow_graceful=False)


def stop_leftovers(private: str) -> None:
    """Kill what a node that failed to start left running (its processes name the private RAY_TMPDIR)."""
    import psutil

    for process in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(private in part for part in process.info["cmdline"] or []):
                process.kill()


@contextmanager
def node_environment(monkeypatch: pytest.MonkeyPatch, tmpdir: Path) -> Iterator[None]:
    """The environment a node starts with (its processes inherit it): no store settings, its TMPDIR
    (made here)."""
    tmpdir.mkdir(parents=True, exist_ok=True)
    with monkeypatch.context() as env:
        for name in FORWARDED_ENV:
            env.delenv(name, raising=False)
        env.setenv("TMPDIR", str(tmpdir))
        yield


@contextmanager
def serving(cluster_address: str, home: Path, model: str = "mlp") -> Iterator[str]:
    """`mcp serve --ray-address ... --replicas 2` from a driver whose MCP_HOME the replicas never see."""
    port = free_port()
    command = [*mcp_command(), "serve", "--name", model, "--port", str(port), "--no-policy", "--replicas", "2"]
    command += ["--ray-address", cluster_address, "--sync-interval", str(SYNC_INTERVAL_S)]
    env = {**os.environ, "MCP_HOME": str(home)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        assert line.startswith(f"listening http={port} grpc=off models={model}:1.0.0 replicas=2"), line
        yield f"127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds until ``condition()`` held (polled without pause: each call is a request)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if condition():
            return time.monotonic() - start
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def every_replica_serves(answers: Answers, http: httpx.Client, version: str, nodes: int) -> Callable[[], bool]:
    def check() -> bool:
        answers.ask(http)
        return len(answers.nodes()) == nodes and set(answers.latest.values()) == {version}

    return check


def promote(home: Path, version: str, stage: Stage) -> None:
    command = [*mcp_command(), "model", "promote", "--name", "mlp", "--version", version, "--stage", stage.value]
    done = subprocess.run(command, env={**os.environ, "MCP_HOME": str(home)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_two_nodes_share_the_stores_and_survive_losing_one(
    shared_stores: Backend, two_nodes: Nodes, tmp_path: Path
) -> None:
    cluster, second = two_nodes.cluster, two_nodes.second
    registry = shared_stores.registry()
    registry.register("mlp", mlp_model(tmp_path / "first.onnx"), stage=Stage.PRODUCTION)
    registry.register("mlp", mlp_model(tmp_path / "second.onnx", seed=7))  # dev: not served yet
    home = tmp_path / "driver"
    with serving(cluster.address, home) as address, httpx.Client(timeout=20) as http:
        answers = Answers(address)
        wait_for(every_replica_serves(answers, http, "1.0.0", nodes=2), 60, "answers from both nodes")
        assert answers.nodes() == {cluster.head_node.node_id, second.node_id}
        replica_homes = two_nodes.replica_homes()  # one each, the artifact fetched from S3 into it
        assert len(replica_homes) == 2 and all(list(home.rglob("*.onnx")) for home in replica_homes)

        promote(home, "1.1.0", Stage.PRODUCTION)
        promoted_s = wait_for(every_replica_serves(answers, http, "1.1.0", nodes=2), 20, "the promote on both")
        promote(home, "1.1.0", Stage.ARCHIVED)  # the rollback: 1.0.0 is the highest production version again
        rolled_back_s = wait_for(every_replica_serves(answers, http, "1.0.0", nodes=2), 20, "the rollback on both")
        print(f"promote reached both nodes in {promoted_s:.2f} s, rollback in {rolled_back_s:.2f} s")
        assert promoted_s < 4 * SYNC_INTERVAL_S + 3 and rolled_back_s < 4 * SYNC_INTERVAL_S + 3

        load = load_while_stopping(address, cluster, second)
        print(f"while the second node stopped: {dict(load.outcomes)}, answered by {dict(load.nodes)}")
        assert {status for _phase, status in load.outcomes} == {200}, load.outcomes
        assert load.nodes["serving", second.node_id] > 0 and load.nodes["draining", second.node_id] > 0
        assert {replica.split("@")[1] for replica in load.replicas_after} == {cluster.head_node.node_id}
        assert len(load.replicas_after) == 2, load.replicas_after  # its replica replaced on the first node
    assert not two_nodes.replica_homes()  # each replica removed its scratch directory as it stopped


def test_a_node_killed_under_load_loses_no_request(shared_stores: Backend, two_nodes: Nodes, tmp_path: Path) -> None:
    """The second node killed outright while six clients post: the requests running on its replica are
    sent again by the front (deploy/ray_front.py) to the head's; every client gets the right answer.
    Each batch takes about 20 ms on the replica (a chain of matrix products), so the kill usually
    catches requests in flight there (how many the front sent again is printed)."""
    cluster, second = two_nodes.cluster, two_nodes.second
    slow = chained_matmul_model(tmp_path / "slow.onnx", depth=600)
    shared_stores.registry().register("slow", slow, stage=Stage.PRODUCTION)
    with serving(cluster.address, tmp_path / "driver", model="slow") as address, httpx.Client(timeout=20) as http:
        answers = Answers(address, "slow", SLOW_BODY)
        wait_for(every_replica_serves(answers, http, "1.0.0", nodes=2), 60, "answers from both nodes")
        expected = http.post(f"http://{address}/v2/models/slow/infer", json=SLOW_BODY).json()["outputs"][0]["data"]
        load = load_while_killing(address, cluster, second, expected)
    retried = front_retries(two_nodes.ray_tmpdir)
    print(f"while the second node was killed: {dict(load.outcomes)}, by {dict(load.nodes)}; {retried} sent again")
    print(f"slowest answer by phase: { {phase: round(s, 2) for phase, s in load.slowest_s.items()} } s")
    assert {status for _phase, status in load.outcomes} == {200}, load.outcomes
    assert load.nodes["serving", second.node_id] > 0  # the killed node was serving
    assert {node for phase, node in load.nodes if phase == "removed"} == {cluster.head_node.node_id}
    assert load.outcomes["removed", 200] > 0


SLOW_BODY = {"inputs": [{"name": "x", "shape": [1, 1024], "datatype": "FP32", "data": [0.5] * 1024}]}


def front_retries(ray_tmpdir: Path) -> int:
    """Requests the front sent again after their replica was lost (its warnings, in Ray's worker logs)."""
    logs = ray_tmpdir.rglob("worker-*.err")
    return sum(path.read_text(errors="replace").count(": replica lost (") for path in logs)


@dataclass
class Load:
    """Every outcome of a bounded load, by phase: status code (or the transport error's type; ``wrong``
    for a 200 whose outputs differ from ``expected``) and the node that answered."""

    address: str
    model: str = "mlp"
    body: dict[str, Any] = field(default_factory=lambda: BODY)
    expected: list[float] | None = None
    phase: str = "serving"
    outcomes: collections.Counter[tuple[str, object]] = field(default_factory=collections.Counter)
    nodes: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    replicas_after: set[str] = field(default_factory=set)
    slowest_s: dict[str, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def client(self) -> None:
        with httpx.Client(base_url=f"http://{self.address}", timeout=30) as http:
            for _ in range(MAX_REQUESTS_PER_CLIENT):
                if self.stop.wait(0.01):
                    return
                phase, sent = self.phase, time.monotonic()
                try:
                    response = http.post(f"/v2/models/{self.model}/infer", json=self.body)
                except httpx.TransportError as error:
                    self.outcomes[phase, type(error).__name__] += 1
                    continue
                self.slowest_s[phase] = max(self.slowest_s.get(phase, 0.0), time.monotonic() - sent)
                self.outcomes[phase, response.status_code if self.right(response) else "wrong"] += 1
                replica = response.headers.get(REPLICA_HEADER, "?@?")
                self.nodes[phase, replica.split("@")[1]] += 1
                if phase == "removed":
                    self.replicas_after.add(replica)

    def answered(self, phase: str) -> int:
        return sum(count for (of, _status), count in self.outcomes.items() if of == phase)

    def right(self, response: httpx.Response) -> bool:
        """An answer other than a 200, or one with the expected outputs (batching may move the last bits)."""
        if self.expected is None or response.status_code != 200:
            return True
        return bool(np.allclose(response.json()["outputs"][0]["data"], self.expected, rtol=1e-4))

    def run_while(
        self,
        stopping: Callable[[], None],
        clients: int,
        around_s: tuple[float, float] = (1.5, 2),
        replicas_after: int = 1,
    ) -> Load:
        """``clients`` threads (no retries) post for ``around_s[0]`` seconds, while ``stopping`` runs, and
        ``around_s[1]`` seconds after it; longer (up to 30 s) until 20 requests sent after it are answered
        by ``replicas_after`` replicas or more: a slow machine still sees the cluster serve on."""
        threads = [threading.Thread(target=self.client) for _ in range(clients)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(around_s[0])
            stopping()
            self.phase = "removed"
            started = time.monotonic()
            time.sleep(around_s[1])
            while time.monotonic() - started < 30:
                if self.answered("removed") >= 20 and len(self.replicas_after) >= replicas_after:
                    break
                time.sleep(0.2)
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(timeout=60)
        return self


MAX_REQUESTS_PER_CLIENT = 600


def load_while_stopping(address: str, cluster: Any, second: Any) -> Load:
    """Two clients post while the second node stops: drained first (Serve starts a replacement replica
    on the head, then stops the old one gracefully), then its processes stopped."""
    load = Load(address)

    def stopping() -> None:
        load.phase = "draining"
        drain(cluster.address, second.node_id, deadline_s=30)
        wait_until(lambda: replicas_on(second) == 0, 60, "the replica to leave the drained node")
        load.phase = "stopping"
        cluster.remove_node(second, allow_graceful=True)

    return load.run_while(stopping, clients=2, replicas_after=2)


def load_while_killing(address: str, cluster: Any, second: Any, expected: list[float]) -> Load:
    """Six clients post while the second node is killed outright (power loss, ``kill -9``): SIGKILL to
    its raylet and every process under it (its workers: the replica, the proxy), all at once."""
    load = Load(address, "slow", SLOW_BODY, expected)

    def killing() -> None:
        load.phase = "killed"
        kill_node(second)
        cluster.remove_node(second, allow_graceful=False)  # the node's other processes; the cluster forgets it

    return load.run_while(killing, clients=6, around_s=(3, 3))


def kill_node(node: Any) -> None:
    import psutil

    raylet = raylet_process(node)
    for process in [*raylet.children(recursive=True), raylet]:
        with contextlib.suppress(psutil.Error):
            process.kill()


def raylet_process(node: Any) -> Any:
    import psutil
    from ray._private import ray_constants

    return psutil.Process(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)


def drain(gcs_address: str, node_id: str, deadline_s: int) -> None:
    """What KubeRay and Ray's autoscaler do before they remove a node (``ray drain-node``)."""
    from ray._raylet import GcsClient
    from ray.core.generated import autoscaler_pb2

    deadline_ms = int(time.time() * 1000) + deadline_s * 1000
    reason = autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION")
    accepted, why = GcsClient(address=gcs_address).drain_node(node_id, reason, "mcp2026ai test", deadline_ms)
    assert accepted, why


def replicas_on(node: Any) -> int:
    """Replica processes under ``node``'s raylet (Ray's workers are its children)."""
    import psutil

    count = 0
    for child in raylet_process(node).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a worker that exits meanwhile
            count += REPLICA_PROCESS in " ".join(child.cmdline())
    return count
