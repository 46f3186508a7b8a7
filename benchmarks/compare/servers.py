"""Start, wait for and stop each server under test as a child process on 127.0.0.1.

Every server serves one :class:`BenchModel` with the same batching limits (max batch 32, 2 ms
queue delay) and the same onnxruntime thread setting. A server that cannot be started here raises
:class:`Unavailable` with the reason, and the benchmark reports that instead of a figure.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import yaml

BENCH_DIR = Path(__file__).resolve().parents[1]
ROOT = BENCH_DIR.parent
VENVS = BENCH_DIR / ".venvs"
MAX_BATCH = 32
QUEUE_DELAY_MS = 2.0
READY_TIMEOUT_S = 180.0


class Unavailable(RuntimeError):
    """This server cannot run here; the message says why."""


@dataclass(frozen=True)
class BenchModel:
    name: str
    path: Path
    input_name: str
    sample_shape: tuple[int, ...]
    datatype: str = "FP32"
    outputs: tuple[tuple[str, tuple[int, ...]], ...] = ()
    p99_budget_ms: float | None = None
    """Our contract's latency budget (the policy picks a plan that keeps it); None: the default."""
    objective: str = "latency"
    """What our policy optimises once the budget is kept (the contract's ``objective``)."""

    @property
    def perf_shape(self) -> str:
        return f"{self.input_name}:{','.join(map(str, self.sample_shape))}"


@dataclass
class Endpoints:
    http: str
    grpc: str | None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess(ABC):
    """One server under test; subclasses say how to launch it."""

    def __init__(self, label: str, workdir: Path) -> None:
        self.label = label
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = workdir / f"{label}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @abstractmethod
    def launch(self, model: BenchModel, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        """The command line and extra environment that serve ``model`` on these ports."""

    def spawn(self, command: list[str], env: dict[str, str]) -> None:
        """Run ``command`` in its own process group (stop() then ends workers and tritonserver too),
        its output appended to the server's log."""
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            command,
            cwd=self.workdir,
            env={**os.environ, **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def start(self, model: BenchModel) -> Endpoints:
        http, grpc = free_port(), free_port()
        self.spawn(*self.launch(model, http, grpc))
        self._wait_ready(f"http://127.0.0.1:{http}/v2/models/{model.name}/ready")
        return Endpoints(http=f"127.0.0.1:{http}", grpc=f"127.0.0.1:{grpc}")

    def _wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise Unavailable(f"{self.label} exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.stop()
        raise Unavailable(f"{self.label} not ready within {READY_TIMEOUT_S:.0f} s: {self.log_tail()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGINT, 15.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by every process of the server's process group."""
        if self.process is None:
            return 0.0
        return group_cpu_seconds(self.process.pid)

    def log_tail(self, lines: int = 3) -> str:
        if not self.log_path.exists():
            return "(no log)"
        text = self.log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(line.strip()[:200] for line in text[-lines:])


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of the live processes in process group ``pgid`` (Linux /proc)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the command: state, ppid, pgrp, ..., utime (11), stime (12)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _venv_python(name: str) -> Path:
    python = VENVS / name / "bin" / "python"
    if not (VENVS / name / ".installed").exists():
        raise Unavailable(f"{python} missing: run benchmarks/peers/setup_peers.sh")
    return python


class OurServer(ServerProcess):
    """``mcp serve`` with the model registered under a batching contract in a private MCP_HOME."""

    workers = 1
    backend: str | None = None
    """``mcp serve --backend``: the one runtime the policy may pick (None: every installed one)."""
    objective: str | None = None
    """The contract's objective when it should differ from the model's (None: the model's)."""

    def launch(self, model: BenchModel, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        env = {"MCP_HOME": str(self.workdir / "home"), "PYTHONPATH": str(ROOT / "src")}
        contract = self.workdir / "contract.yaml"
        document: dict[str, object] = {
            "objective": self.objective or model.objective,
            "batching": {"max_batch_size": MAX_BATCH, "max_queue_delay_ms": QUEUE_DELAY_MS},
        }
        if model.p99_budget_ms is not None:
            document["latency"] = {"p99_ms": model.p99_budget_ms}
        contract.write_text(yaml.safe_dump(document))
        cli = [sys.executable, "-m", "mcp2026ai.cli"]
        register = [*cli, "model", "register", "--name", model.name, "--path", str(model.path)]
        register += ["--contract", str(contract)]
        done = subprocess.run(register, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
        if done.returncode != 0 and "already has version" not in done.stderr + done.stdout:
            raise Unavailable(f"mcp model register failed: {(done.stderr or done.stdout).strip()[-300:]}")
        serve = [*cli, "serve", "--name", model.name, "--port", str(http), "--grpc-port", str(grpc)]
        serve += ["--backend", self.backend] if self.backend else []
        return serve + (["--workers", str(self.workers)] if self.workers > 1 else []), env


def chosen_plan(endpoints: Endpoints, model: str) -> str | None:
    """The execution plan ``mcp serve`` runs ``model`` with (its model config's ``mcp_plan``), if it says."""
    url = f"http://{endpoints.http}/v2/models/{model}/config"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            config = json.load(response)
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None
    plan = config.get("parameters", {}).get("mcp_plan", {}).get("string_value")
    return str(plan) if plan else None


class OurServerTwoWorkers(OurServer):
    """The same, as two worker processes sharing the ports (``mcp serve --workers 2``, SO_REUSEPORT)."""

    workers = 2


class OurServerThroughput(OurServer):
    """The same model under a ``throughput`` contract: the policy may then take a multi-instance plan
    (the cores split among single-threaded instances), the choice for a service that sees many
    concurrent requests, where the default ``latency`` objective takes the best lone request."""

    objective = "throughput"


class MLServerPeer(ServerProcess):
    """MLServer 1.7 with the custom onnxruntime runtime (peers/mlserver_onnx.py), adaptive batching on."""

    def launch(self, model: BenchModel, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        python = _venv_python("mlserver")
        root = self.workdir / "mlserver"
        (root / model.name).mkdir(parents=True, exist_ok=True)
        settings = {
            "host": "127.0.0.1",
            "http_port": http,
            "grpc_port": grpc,
            "metrics_port": free_port(),
            "debug": False,
        }  # debug=True (the default) adds an access-log line per request
        (root / "settings.json").write_text(json.dumps(settings))
        (root / model.name / "model-settings.json").write_text(json.dumps(_mlserver_model_settings(model)))
        command = [str(python.parent / "mlserver"), "start", str(root)]
        return command, {"PYTHONPATH": str(BENCH_DIR / "peers")}


def _mlserver_model_settings(model: BenchModel) -> dict[str, object]:
    def tensor(name: str, shape: tuple[int, ...]) -> dict[str, object]:
        return {"name": name, "datatype": model.datatype, "shape": [-1, *shape]}

    return {
        "name": model.name,
        "implementation": "mlserver_onnx.OnnxRuntimeModel",
        "max_batch_size": MAX_BATCH,
        "max_batch_time": QUEUE_DELAY_MS / 1000,
        "inputs": [tensor(model.input_name, model.sample_shape)],
        "outputs": [tensor(name, shape) for name, shape in model.outputs],
        "parameters": {"uri": str(model.path), "extra": {"intra_op_threads": 0}},
    }


class PyTritonPeer(ServerProcess):
    """PyTriton 0.7 (bundled tritonserver 2.51, dynamic batching on) calling onnxruntime."""

    def launch(self, model: BenchModel, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        python = _venv_python("pytriton")
        # The bundled Python-backend stub links the system libpython3.11; point it at the one the
        # venv's interpreter was built with, or its C modules and stdlib disagree (RLock errors).
        libdir = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        command = [
            str(python),
            str(BENCH_DIR / "peers" / "pytriton_server.py"),
            "--model",
            str(model.path),
            "--name",
            model.name,
            "--http-port",
            str(http),
            "--grpc-port",
            str(grpc),
            "--metrics-port",
            str(free_port()),
            "--max-batch-size",
            str(MAX_BATCH),
            "--max-queue-delay-us",
            str(int(QUEUE_DELAY_MS * 1000)),
        ]
        env = {"LD_LIBRARY_PATH": os.pathsep.join(filter(None, [libdir, os.environ.get("LD_LIBRARY_PATH")]))}
        return command, env


SERVERS: dict[str, type[ServerProcess]] = {
    "mcp2026ai": OurServer,
    "mcp2026ai-w2": OurServerTwoWorkers,
    "mcp2026ai-tput": OurServerThroughput,
    "mlserver": MLServerPeer,
    "pytriton": PyTritonPeer,
}
