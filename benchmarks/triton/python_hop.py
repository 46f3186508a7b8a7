"""What a Triton python model and a BLS hop cost, served: one interleaved run over gRPC, sequential.

Serves Triton's own example models (tests/support/triton_python_repository.py: the python ``add_sub``,
``bls_sync`` and the ONNX ``pytorch``, all FP32 [4]) with ``mcp serve --model-repository --no-policy``
and times, round-robin so that every case sees the same machine, ``--requests`` calls of each:

- ``onnx``: the ONNX model directly (the floor: transport, routing, queue, onnxruntime);
- ``python``: the python add_sub (adds the python backend: request objects, execute, response);
- ``bls->onnx``: bls_sync calling the ONNX model through ``InferenceRequest.exec()`` (adds a python
  model and one BLS hop back into the data plane);
- ``bls->python``: bls_sync calling the python add_sub.

The BLS hop is ``bls->onnx`` minus ``python`` at p50 (one python model in both, plus the hop and the
ONNX run): printed last. Bounded: 400 requests per case by default (~10 s on 2 busy cores).

    .venv/bin/python benchmarks/triton/python_hop.py [--requests 400]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.triton_python_repository import build_python_repository

MCP = [sys.executable, "-m", "mcp2026ai.cli"]


def inputs(target: str | None = None) -> list[grpcclient.InferInput]:
    tensors = [grpcclient.InferInput(name, [4], "FP32") for name in ("INPUT0", "INPUT1")]
    for tensor in tensors:
        tensor.set_data_from_numpy(np.ones(4, dtype=np.float32))
    if target is not None:
        name = grpcclient.InferInput("MODEL_NAME", [1], "BYTES")
        name.set_data_from_numpy(np.array([target], dtype=np.object_))
        tensors.append(name)
    return tensors


def measure(url: str, requests: int) -> dict[str, list[float]]:
    client = grpcclient.InferenceServerClient(url)
    cases = {
        "onnx": ("pytorch", inputs()),
        "python": ("add_sub", inputs()),
        "bls->onnx": ("bls_sync", inputs("pytorch")),
        "bls->python": ("bls_sync", inputs("add_sub")),
    }
    times: dict[str, list[float]] = {case: [] for case in cases}
    for _ in range(20):  # warm-up
        for model, tensors in cases.values():
            client.infer(model, tensors)
    for _ in range(requests):
        for case, (model, tensors) in cases.items():
            started = time.perf_counter()
            client.infer(model, tensors)
            times[case].append((time.perf_counter() - started) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        repository = build_python_repository(Path(work) / "repository")
        command = [*MCP, "serve", "--model-repository", str(repository), "--port", "0", "--grpc-port", "0"]
        env = {**os.environ, "MCP_HOME": str(Path(work) / "home")}
        server = subprocess.Popen(
            [*command, "--no-policy"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            assert server.stdout is not None
            line = next(line for line in server.stdout if line.startswith("listening"))
            port = re.search(r"grpc=(\d+)", line)
            assert port is not None, line
            times = measure(f"127.0.0.1:{port.group(1)}", args.requests)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    p50 = {case: float(np.percentile(values, 50)) for case, values in times.items()}
    for case, values in times.items():
        print(f"{case:12s} p50 {p50[case]:.3f} ms   p90 {np.percentile(values, 90):.3f} ms   ({len(values)} requests)")
    print(f"BLS hop (bls->onnx - python, p50): {p50['bls->onnx'] - p50['python']:.3f} ms")


if __name__ == "__main__":
    main()
