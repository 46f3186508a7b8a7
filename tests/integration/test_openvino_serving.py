"""`mcp serve --backend openvino`: a real model served through OpenVINO answers tritonclient (gRPC and
HTTP) as onnxruntime does, within float tolerance; an unknown backend is one clear line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from mcp2026ai.bundled import bundled_model_path

from .conftest import listening_line, mcp_command

pytest.importorskip("openvino", reason="the [openvino] extra")
pytestmark = pytest.mark.timeout(180)

INPUT = "x"


def reference(model: Path, batch: np.ndarray) -> tuple[str, np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    output = session.get_outputs()[0].name
    return output, session.run([output], {INPUT: batch})[0]


def test_serve_with_the_openvino_backend(tmp_path: Path) -> None:
    model = tmp_path / "cls.onnx"
    model.write_bytes(bundled_model_path("ocr-cls").read_bytes())
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    serve = [*mcp_command(), "serve", "--model-path", str(model), "--port", "0", "--grpc-port", "0"]
    process = subprocess.Popen(
        [*serve, "--backend", "openvino"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        plan_line = process.stdout.readline()
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=(\d+)", line)
        assert match, line + (process.stderr.read() if process.stderr else "")
        assert plan_line.startswith("plan for cls: openvino:cpu/fp32"), plan_line
        batch = np.random.default_rng(3).random((2, 3, 48, 192), dtype=np.float32)
        output, want = reference(model, batch)
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{match.group(2)}")
        request = grpcclient.InferInput(INPUT, list(batch.shape), "FP32")
        request.set_data_from_numpy(batch)
        got = grpc.infer("cls", [request]).as_numpy(output)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert np.argmax(got, axis=1).tolist() == np.argmax(want, axis=1).tolist()
        http = httpclient.InferenceServerClient(f"127.0.0.1:{match.group(1)}")
        request = httpclient.InferInput(INPUT, list(batch.shape), "FP32")
        request.set_data_from_numpy(batch, binary_data=True)
        np.testing.assert_allclose(http.infer("cls", [request]).as_numpy(output), want, rtol=1e-4, atol=1e-5)
        assert http.get_model_metadata("cls")["platform"] == "openvino"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    trace = subprocess.run(
        [*mcp_command(), "policy", "trace", "--model", "cls", "--json"], env=env, capture_output=True, text=True
    )
    assert trace.returncode == 0, trace.stderr
    assert '"runtime": "openvino"' in trace.stdout and '"outside_cores"' in trace.stdout


def test_an_unknown_backend_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*mcp_command(), "serve", "--model-path", str(bundled_model_path("ocr-cls")), "--backend", "tensorflow"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "unknown runtime 'tensorflow' (known: onnxruntime, openvino)" in done.stderr
    assert "Traceback" not in done.stderr
