"""A real ``mcp serve --config serve.yaml``: the whole default configuration as a file starts a server that
answers, and a flag given beside the file overrides it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from support.models import mlp_model

from .conftest import listening_line, mcp_command

pytestmark = pytest.mark.slow


def test_a_server_starts_from_the_printed_defaults_and_a_flag_overrides_the_file(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    printed = subprocess.run(
        [*mcp_command(), "serve", "--print-config"], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    document = yaml.safe_load(printed.stdout)
    document |= {"http_port": 0, "grpc_port": 0, "plan_with_policy": False}  # ports free here, no measuring
    config = tmp_path / "serve.yaml"
    config.write_text(yaml.safe_dump(document))
    model = mlp_model(tmp_path / "mlp.onnx")
    command = [*mcp_command(), "serve", "--config", str(config), "--model-path", str(model), "--grpc-port", "off"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=off models=mlp:1\.0\.0", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}/v2/models/mlp/infer"
        body = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}]}
        answer = httpx.post(url, json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["shape"] == [1, 10]
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=90)
    assert process.returncode == 0 and "Traceback" not in err, err
