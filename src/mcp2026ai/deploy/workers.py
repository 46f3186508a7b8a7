"""``mcp serve --workers N``: N server processes sharing the HTTP and gRPC ports via SO_REUSEPORT.

The kernel spreads new connections across the workers; each worker loads its own copy of the
models. Statistics (Triton's stats endpoint and RPC) are summed over the workers through a private
directory of unix sockets (server/statistics.py); Prometheus metrics are merged over the workers by
``prometheus_client``'s multiprocess mode, in a directory next to those sockets
(observability/metrics.py, ``SHARED_DIR``). The parent forwards SIGINT/SIGTERM and waits.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_any
from multiprocessing.context import SpawnProcess
from pathlib import Path

from prometheus_client.multiprocess import mark_process_dead

from mcp2026ai.errors import MCPError, UnavailableError
from mcp2026ai.observability.metrics import MULTIPROCESS_DIR_VARIABLE
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.lifecycle import BoundPorts, ensure_ports_free


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def shared_worker_config(config: ServerConfig) -> ServerConfig:
    """Workers must agree on ports, so an ephemeral request (0) is resolved once, here, and a port
    another server holds is refused here (the workers' SO_REUSEPORT would share it); they also share a
    fresh directory where they answer each other's statistics queries."""
    ensure_ports_free(config)
    peer_dir = tempfile.mkdtemp(prefix="mcp-workers-")
    atexit.register(shutil.rmtree, peer_dir, ignore_errors=True)
    updates: dict[str, object] = {"reuse_port": True, "peer_dir": Path(peer_dir)}
    if config.http_port == 0:
        updates["http_port"] = free_port(config.host)
    if config.grpc_port == 0:
        updates["grpc_port"] = free_port(config.host)
    return config.model_copy(update=updates)


def metrics_dir(config: ServerConfig) -> Path:
    """Where the workers' Prometheus series live (inside the private ``peer_dir``)."""
    assert config.peer_dir is not None
    return config.peer_dir / "metrics"


@contextlib.contextmanager
def _worker_environment(shared_metrics: Path) -> Iterator[None]:
    """The variable that puts a spawned worker's ``prometheus_client`` in multiprocess mode, set only
    while workers start (a spawned child copies the environment then): this process and anything it
    starts later keep ordinary, in-memory metrics."""
    before = os.environ.get(MULTIPROCESS_DIR_VARIABLE)
    os.environ[MULTIPROCESS_DIR_VARIABLE] = str(shared_metrics)
    try:
        yield
    finally:
        if before is None:
            del os.environ[MULTIPROCESS_DIR_VARIABLE]
        else:
            os.environ[MULTIPROCESS_DIR_VARIABLE] = before


def _worker_main(home: str, names: list[str], config: ServerConfig, ready: Connection) -> None:
    from mcp2026ai.app import serve_blocking
    from mcp2026ai.registry.stores import open_registry
    from mcp2026ai.server.process_exit import arm_exit_watchdog, exit_grace_s

    def report(ports: BoundPorts, loaded: object) -> None:
        ready.send(ports)
        ready.close()

    try:
        serve_blocking(open_registry(home=Path(home)), names, config, on_ready=report)
    except MCPError as exc:  # e.g. a port in use: the parent says it in one line
        if not ready.closed:
            ready.send(WorkerFailed(str(exc)))
        sys.exit(2)
    finally:  # a Python model's execute that never returns must not hold the worker at exit
        arm_exit_watchdog(exit_grace_s(config.drain_timeout_s))


@dataclass(frozen=True)
class WorkerFailed:
    """What a worker that could not start sends its parent instead of its ports."""

    reason: str


@dataclass
class Workers:
    """Running worker processes, the ports they share and the directory of their metrics."""

    ports: BoundPorts
    processes: list[SpawnProcess]
    shared_metrics: Path

    def wait(self) -> None:
        """Block until every worker has exited."""
        wait_for_exits(self.processes, self.shared_metrics)


def wait_for_exits(processes: list[SpawnProcess], shared_metrics: Path) -> None:
    """Block until every one of ``processes`` has exited. One that ends drops its live gauges from the
    others' scrapes at once (its counters stay in the sums, as counters must)."""
    running = {process.sentinel: process for process in processes}
    while running:
        for ended in wait_for_any(list(running)):
            assert isinstance(ended, int)  # a process sentinel is a file descriptor
            process = running.pop(ended)
            process.join()
            if process.pid is not None:
                mark_process_dead(process.pid, str(shared_metrics))  # type: ignore[no-untyped-call]


def run_workers(home: Path, names: list[str], config: ServerConfig, count: int) -> Workers:
    """Start ``count`` workers and return once each serves (:meth:`Workers.wait` blocks until they exit)."""
    config = shared_worker_config(config)
    shared_metrics = metrics_dir(config)
    shared_metrics.mkdir()
    context = multiprocessing.get_context("spawn")
    processes: list[SpawnProcess] = []
    signalled = _forward_signals(processes)  # from the first worker on: a signal while they start orphans none
    ports: BoundPorts | None = None
    for _ in range(count):
        if signalled:
            break
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_worker_main, args=(str(home), names, config, sender), daemon=False)
        with _worker_environment(shared_metrics):
            process.start()
        sender.close()  # the worker holds it now: a worker that ends before it serves reads as EOF here
        processes.append(process)
        if not receiver.poll(timeout=300):
            _terminate(processes)
            raise UnavailableError("a server worker did not become ready within 300 s")
        if signalled:  # the worker may have ended on the forwarded signal: nothing to read, no one to stop
            break
        ports = _started(receiver, processes)
    if signalled:
        signalled.forward()  # to a worker started as the signal came, too
        wait_for_exits(processes, shared_metrics)  # each drains and exits
        raise UnavailableError(f"stopped by {signalled.received[0].name} while the workers were starting")
    assert ports is not None
    return Workers(ports, processes, shared_metrics)


def _started(receiver: Connection, processes: list[SpawnProcess]) -> BoundPorts:
    """The ports a worker reports once it serves; its failure (the others stopped) otherwise."""
    try:
        message = receiver.recv()
    except EOFError:
        processes[-1].join(5)
        message = WorkerFailed(f"a server worker exited before serving (exit code {processes[-1].exitcode})")
    if isinstance(message, WorkerFailed):
        _terminate(processes)
        raise UnavailableError(message.reason)
    return message  # type: ignore[no-any-return]


@dataclass
class ForwardedSignals:
    """SIGINT/SIGTERM received by the parent, each sent on to every worker once."""

    processes: list[SpawnProcess]
    received: list[signal.Signals] = field(default_factory=list)
    sent: set[tuple[int, signal.Signals]] = field(default_factory=set)
    """(pid, signal) pairs already forwarded."""

    def __bool__(self) -> bool:
        return bool(self.received)

    def receive(self, signum: int, frame: object) -> None:
        self.received.append(signal.Signals(signum))
        self.forward()

    def forward(self) -> None:
        """Send each signal received to every live worker that has not had it yet."""
        for signum in dict.fromkeys(self.received):
            for process in self.processes:
                if process.is_alive() and process.pid is not None and (process.pid, signum) not in self.sent:
                    self.sent.add((process.pid, signum))
                    os.kill(process.pid, signum)


def _forward_signals(processes: list[SpawnProcess]) -> ForwardedSignals:
    """From now on SIGINT/SIGTERM to the parent reach every worker in ``processes`` (those started so
    far, then the rest), which then drains and exits."""
    forwarded = ForwardedSignals(processes)
    signal.signal(signal.SIGINT, forwarded.receive)
    signal.signal(signal.SIGTERM, forwarded.receive)
    return forwarded


def _terminate(processes: list[SpawnProcess]) -> None:
    for process in processes:
        process.terminate()
        process.join(30)
