"""System shared memory vs the socket for a 224x224 image classifier (~600 KB a request), where moving
the tensor costs about as much as the model: perf_analyzer at concurrency 8 over gRPC and HTTP, with
and without ``--shared-memory system``, against the offline onnxruntime ceiling of the same model.

    .venv/bin/python benchmarks/compare/shared_memory.py [--model onnx-squeezenet] [--seconds 3]
"""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.compare.models import plain_inputs
from benchmarks.engine.ceiling import offline_throughput, open_session
from benchmarks.local_server import serve_model
from mcp2026ai.bundled import bundled_model_path

PERF = str(Path(sys.executable).parent / "perf_analyzer")


def serve(home: Path, model: Path, http: int, grpc: int) -> subprocess.Popen[str]:
    return serve_model(home, "clf", model, ["--port", str(http), "--grpc-port", str(grpc)])


def perf(url: str, protocol: str, seconds: float, shared: bool) -> float:
    command = [PERF, "-m", "clf", "-i", protocol, "-u", url, "--concurrency-range", "8"]
    command += ["--measurement-interval", str(int(seconds * 1000)), "--stability-percentage", "999"]
    if shared:
        command += ["--shared-memory", "system", "--output-shared-memory-size", "65536"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    match = re.search(r"Concurrency: 8, throughput: ([\d.]+) infer/sec", done.stdout)
    if done.returncode != 0 or match is None:
        raise RuntimeError((done.stdout + done.stderr)[-800:])
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="onnx-squeezenet")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--http-port", type=int, default=18700)
    parser.add_argument("--grpc-port", type=int, default=18701)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-shm-") as folder:
        model = plain_inputs(bundled_model_path(args.model), Path(folder) / "clf.onnx")
        session = open_session(model)
        shape = tuple(int(d) for d in session.get_inputs()[0].shape[1:])
        ceiling = offline_throughput(session, shape, 1, 20, args.seconds).rows_per_s
        del session
        server = serve(Path(folder) / "home", model, args.http_port, args.grpc_port)
        try:
            rows = []
            for protocol, port in (("grpc", args.grpc_port), ("http", args.http_port)):
                for shared in (False, True):
                    throughput = perf(f"127.0.0.1:{port}", protocol, args.seconds, shared)
                    rows.append((protocol, "system shared memory" if shared else "in the request", throughput))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
    print(f"{args.model}: offline onnxruntime ceiling {ceiling:.0f} infer/s (batch 1, back to back)")
    print("| protocol | tensors | infer/s at c=8 | / ceiling |")
    print("|---|---|---:|---:|")
    for protocol, mode, throughput in rows:
        print(f"| {protocol} | {mode} | {throughput:.0f} | {throughput / ceiling:.2f} |")


if __name__ == "__main__":
    main()
