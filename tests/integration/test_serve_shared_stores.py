"""`mcp serve` on each backend: a version registered in the stores is served and answers inference,
and a promote made from another process reaches the running server within its sync interval."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient

from mcp2026ai.registry import Stage
from support.models import mlp_model
from tests.support.stores import Backend


def _infer(client: httpclient.InferenceServerClient) -> tuple[str, list[float]]:
    tensor = httpclient.InferInput("x", [1, 16], "FP32")
    tensor.set_data_from_numpy(np.ones((1, 16), dtype=np.float32))
    result = client.infer("mlp", [tensor])
    return str(result.get_response()["model_version"]), result.as_numpy("probs")[0].tolist()


def test_serve_infer_and_a_promote_from_elsewhere(backend: Backend, tmp_path: Path) -> None:
    registry = backend.registry()
    registry.register("mlp", mlp_model(tmp_path / "first.onnx"))
    command = [
        sys.executable, "-m", "mcp2026ai.cli", "serve", "--name", "mlp", "--no-policy",
        "--port", "0", "--grpc-port", "0", "--sync-interval", "0.5",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"listening http=(\d+)", line)
        assert match, line
        client = httpclient.InferenceServerClient(f"127.0.0.1:{match.group(1)}")
        version, first = _infer(client)
        assert version == "1.0.0" and abs(sum(first) - 1.0) < 1e-4
        backend.registry().register("mlp", mlp_model(tmp_path / "second.onnx", seed=7), stage=Stage.PRODUCTION)
        deadline = time.monotonic() + 20
        while _infer(client)[0] != "1.1.0" and time.monotonic() < deadline:
            time.sleep(0.2)
        version, second = _infer(client)
        assert version == "1.1.0" and second != first
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err
