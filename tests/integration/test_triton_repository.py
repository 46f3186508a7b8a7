"""Triton's own example clients, unchanged, against ``mcp serve --model-repository``.

The repository is laid out like Triton's docs/examples/model_repository (config.pbtxt files in
Triton's words, numeric version directories); the clients are tritonclient's examples, vendored in
tests/support/triton_examples (BSD-3-Clause), run as scripts with only ``-u`` pointing here. Triton's
HTTP model-control example wants seven repository entries, its gRPC one eight: two servers.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from PIL import Image

from tests.integration.conftest import listening_line, mcp_command
from tests.support.triton_repository import DENSENET_LABELS, add_int8_model, build_repository

EXAMPLES = Path(__file__).parents[1] / "support" / "triton_examples"


@contextmanager
def serve_repository(repository: Path, home: Path) -> Iterator[tuple[str, str]]:
    """``mcp serve --model-repository`` on ephemeral ports: (http, grpc) addresses; SIGTERM ends it cleanly."""
    command = [*mcp_command(), "serve", "--model-repository", str(repository), "--port", "0", "--grpc-port", "0"]
    process = subprocess.Popen(
        [*command, "--no-policy"],
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=(\d+)", line)
        assert match, line + (process.stderr.read() if process.stderr else "")
        yield f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{match.group(2)}"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "failed to load 'broken_dims'" in err


@pytest.fixture(scope="module")
def seven(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("seven")
    with serve_repository(build_repository(root / "repository"), root / "home") as addresses:
        yield addresses


@pytest.fixture(scope="module")
def eight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("eight")
    repository = build_repository(root / "repository")
    add_int8_model(repository)
    with serve_repository(repository, root / "home") as addresses:
        yield addresses


def run_example(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, (
        f"{script} {args}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    )
    return done.stdout


def test_simple_over_http(seven: tuple[str, str]) -> None:
    out = run_example("simple_http_infer_client.py", "-u", seven[0])
    assert "15 + -1 = 14" in out and "15 - -1 = 16" in out  # its own checks exit 1 on a wrong sum


def test_simple_over_grpc(eight: tuple[str, str]) -> None:
    assert "PASS: infer" in run_example("simple_grpc_infer_client.py", "-u", eight[1])


def test_typed_contents_beside_raw_refused_in_tritons_words(eight: tuple[str, str]) -> None:
    assert "PASS: explicit int" in run_example("grpc_explicit_int_content_client.py", "-u", eight[1])


@pytest.mark.parametrize(
    ("script", "protocol", "dyna"),
    [
        ("simple_http_sequence_sync_infer_client.py", "http", False),
        ("simple_http_sequence_sync_infer_client.py", "http", True),
        ("simple_grpc_sequence_sync_infer_client.py", "grpc", True),
        ("simple_grpc_sequence_stream_infer_client.py", "grpc", False),
        ("simple_grpc_sequence_stream_infer_client.py", "grpc", True),
    ],
)
def test_sequences(seven: tuple[str, str], eight: tuple[str, str], script: str, protocol: str, dyna: bool) -> None:
    """simple_sequence (START, READY), simple_dyna_sequence (END, CORRID, oldest) and the accumulator
    simple_string_dyna_sequence (string CORRID, implicit state) as their configs declare them."""
    address = seven[0] if protocol == "http" else eight[1]
    assert "PASS: Sequence" in run_example(script, "-u", address, *(["-d"] if dyna else []))


def test_densenet_image_classification(eight: tuple[str, str], tmp_path: Path) -> None:
    """densenet_onnx: dims [3,224,224] reshaped to the model's [1,3,224,224], FORMAT_NCHW and the label
    file read by image_client from /config; the classification extension answers with the labels."""
    image = tmp_path / "picture.jpg"
    Image.fromarray((np.random.default_rng(0).random((240, 320, 3)) * 255).astype(np.uint8)).save(image)
    out = run_example(
        "image_client.py", "-i", "grpc", "-u", eight[1], "-m", "densenet_onnx", "-c", "3", "-s", "INCEPTION", str(image)
    )
    assert "PASS" in out and DENSENET_LABELS[0] in out


def test_index_and_version_policy(seven: tuple[str, str]) -> None:
    """The refused model is UNAVAILABLE with Triton's reason naming file, field and value; the others
    load; simple_specific serves only version 2 (version_policy specific)."""
    client = httpclient.InferenceServerClient(seven[0])
    index = {row["name"]: row for row in client.get_model_repository_index()}
    assert len(index) == 7
    broken = index["broken_dims"]
    assert broken["state"] == "UNAVAILABLE"
    assert (
        broken["reason"].startswith("failed to load 'broken_dims': ")
        and "config.pbtxt: input 'INPUT0': dims: -2" in broken["reason"]
    )
    assert {row["state"] for name, row in index.items() if name != "broken_dims"} == {"READY"}
    assert not client.is_model_ready("broken_dims")
    x = httpclient.InferInput("INPUT0", [1, 16], "INT32")
    x.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
    y = httpclient.InferInput("INPUT1", [1, 16], "INT32")
    y.set_data_from_numpy(np.ones((1, 16), np.int32))
    result = client.infer("simple_specific", [x, y], model_version="2")
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.arange(16).reshape(1, 16) + 1)
    with pytest.raises(Exception, match="Request for unknown model"):
        client.infer("simple_specific", [x, y], model_version="3")
    config = client.get_model_config("simple_sequence")
    assert config["max_batch_size"] == 8 and config["instance_group"][0]["count"] == 2
    assert {c["name"] for c in config["sequence_batching"]["control_input"]} == {"START", "READY"}


def test_model_control_over_http(seven: tuple[str, str]) -> None:
    """Last on its server: it unloads simple. Seven entries; "failed to load" for a bad override and an
    unknown model."""
    assert "PASS: model control" in run_example("simple_http_model_control.py", "-u", seven[0])


def test_model_control_over_grpc(eight: tuple[str, str]) -> None:
    assert "PASS: model control" in run_example("simple_grpc_model_control.py", "-u", eight[1])
