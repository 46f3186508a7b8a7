"""What the pipeline benchmarks share: a pipeline served by ``mcp serve`` and driven over HTTP by
tritonclient at a fixed concurrency, against a direct loop of the same work on one thread.

Both sides answer the same list of requests (each round: the same inputs, in the same order), and a
side's figure is requests over the wall-clock time it took to answer them all, so a slow request is
counted whole (a time window would cut it).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

MCP = [sys.executable, "-m", "mcp2026ai.cli"]
CONTENTION = "measured under contention (other work on the machine's cores)"


def mcp(home: Path, *args: str) -> str:
    """Run ``mcp ARGS`` against the registry in ``home``; its stdout (a failure raises with its stderr)."""
    env = {**os.environ, "MCP_HOME": str(home)}
    done = subprocess.run([*MCP, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"mcp {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


@contextmanager
def serving(home: Path, name: str) -> Iterator[str]:
    """``mcp serve --name NAME`` on an ephemeral port (HTTP only, the stored plans); yields host:port."""
    env = {**os.environ, "MCP_HOME": str(home)}
    command = [*MCP, "serve", "--name", name, "--port", "0", "--grpc-port", "off"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield _listening(server)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def _listening(server: subprocess.Popen[str]) -> str:
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("listening"):
            port = line.split("http=")[1].split()[0]
            threading.Thread(target=_drain, args=(server.stdout,), daemon=True).start()
            return f"127.0.0.1:{port}"
    raise RuntimeError("mcp serve exited before it listened")


def _drain(stream: Any) -> None:
    for _ in stream:  # keep the server's stdout pipe from filling
        pass


def http_inputs(inputs: dict[str, np.ndarray]) -> list[Any]:
    """tritonclient's InferInputs of one request (BYTES as object arrays of bytes)."""
    import tritonclient.http as httpclient

    from mcp2026ai.ir.dtypes import v2_datatype

    tensors = []
    for name, array in inputs.items():
        datatype = "BYTES" if array.dtype == np.object_ else v2_datatype(array.dtype)
        tensor = httpclient.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    return tensors


def served_rps(url: str, model: str, requests: Sequence[dict[str, np.ndarray]], concurrency: int) -> float:
    """Every request of ``requests`` once, ``concurrency`` in flight (one client and connection per
    worker thread); requests per second of wall-clock time."""
    import tritonclient.http as httpclient

    prepared = [http_inputs(inputs) for inputs in requests]
    taken = iter(range(len(prepared)))
    lock = threading.Lock()

    def worker() -> int:
        client = httpclient.InferenceServerClient(url, network_timeout=120.0, connection_timeout=120.0)
        count = 0
        while True:
            with lock:
                index = next(taken, None)
            if index is None:
                return count
            client.infer(model, prepared[index])
            count += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answered = sum(pool.map(lambda _: worker(), range(concurrency)))
    return answered / (time.perf_counter() - started)


def direct_rps(run: Callable[[dict[str, np.ndarray]], Any], requests: Sequence[dict[str, np.ndarray]]) -> float:
    """Every request of ``requests`` through ``run``, one after another on this thread."""
    started = time.perf_counter()
    for inputs in requests:
        run(inputs)
    return len(requests) / (time.perf_counter() - started)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, min and max of a figure's rounds."""
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]
