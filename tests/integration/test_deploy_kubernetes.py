"""`mcp deploy kubernetes` end to end: the real console script renders a real model's assets, then
the container's entrypoint, exactly as rendered into the Dockerfile, serves the registry export
(no docker needed: the same command on this machine, ports made ephemeral).

Bounded: ocr-cls is registered with its example contract capped at batches of 1, so the policy the
entrypoint runs at start (no plan travels with the export) measures one batch size per runtime
setting instead of four, within its 15 s budget."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.contract import BatchingSpec, load_contract
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.security import KeyRing, Scope, TokenStore
from tests.support import REPO_ROOT
from tests.support.cli import CONTRACT, mcp_executable, run_console_script
from tests.support.images import png_bytes, render_text

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    preprocessing = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    contract = load_contract(CONTRACT).model_copy(update={"batching": BatchingSpec(max_batch_size=1)})
    model = bundled_model_path("ocr-cls")
    ModelRegistry(home).register("ocr-cls", model, contract=contract, preprocessing=preprocessing)
    return home


@pytest.fixture
def out(home: Path, tmp_path: Path, mounts: Mounts) -> Path:
    out = tmp_path / "deploy"
    args = ["deploy", "kubernetes", "--name", "ocr-cls", "--namespace", "vision", "--out", str(out), "--validate",
            "--auth-secret", "mcp-tokens", "--trusted-keys", "configmap/mcp-trusted"]  # fmt: skip
    done = run_console_script(args, tmp_path, {"MCP_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "rendered ocr-cls:1.0.0" in done.stdout and "memory 1536Mi" in done.stdout
    assert done.stdout.count("  valid ") == 7 and done.stdout.count("  not checked kserve/") == 2
    return out


def dockerfile_entrypoint(dockerfile: Path) -> list[str]:
    line = next(line for line in dockerfile.read_text().splitlines() if line.startswith("ENTRYPOINT "))
    command: list[str] = json.loads(line.removeprefix("ENTRYPOINT "))
    return command


def dockerfile_env(dockerfile: Path) -> dict[str, str]:
    """The runtime stage's ENV lines (``NAME=value`` pairs continued with backslashes)."""
    text = dockerfile.read_text().split(" AS runtime", 1)[1]
    block = text.split("\nENV ", 1)[1].split("\nUSER ", 1)[0]
    pairs = [part.strip() for part in block.replace("\\\n", " ").split()]
    return dict(pair.split("=", 1) for pair in pairs)


@dataclass(frozen=True)
class Mounts:
    """What the pod's Secret and ConfigMap volumes hold, as folders on this machine."""

    tokens: Path
    trusted: Path
    token: str


@pytest.fixture
def mounts(tmp_path: Path, home: Path) -> Mounts:
    """tokens.json (the --auth-secret Secret) and the trusted key (the --trusted-keys ConfigMap); the
    version is signed with that key, as `mcp model sign` does before a release."""
    ring = KeyRing(tmp_path / "keys")
    key = ring.create("release")
    registry = ModelRegistry(home)
    sign_version(registry, registry.resolve("ocr-cls"), key)
    (tmp_path / "trusted").mkdir()
    shutil.copyfile(ring.public_path("release"), tmp_path / "trusted" / "release.pub")
    issued = TokenStore(tmp_path / "auth" / "tokens.json").create("client", frozenset({Scope.INFER}))
    return Mounts(tmp_path / "auth" / "tokens.json", tmp_path / "trusted", issued.token)


def image_env(out: Path, mounts: Mounts | None = None) -> dict[str, str]:
    """The image's environment on this machine: its MCP_HOME is the export, `mcp` is on PATH, and the
    image's MCP_TOKENS_FILE / MCP_TRUSTED_KEYS point at the folders the pod's volumes would mount."""
    bin_dir = str(Path(mcp_executable()).parent)
    src = str(REPO_ROOT / "src")
    env = {**os.environ, "MCP_HOME": str(out / "registry"), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": src, "PYTHONUNBUFFERED": "1"}  # fmt: skip
    declared = dockerfile_env(out / "Dockerfile")
    if mounts is not None:
        assert declared["MCP_TOKENS_FILE"] == "/etc/mcp/auth/tokens.json"
        assert declared["MCP_TRUSTED_KEYS"] == "/etc/mcp/trusted"
        env.update(MCP_TOKENS_FILE=str(mounts.tokens), MCP_TRUSTED_KEYS=str(mounts.trusted))
    return env


@contextmanager
def entrypoint(out: Path, mounts: Mounts | None = None) -> Iterator[str]:
    """The Dockerfile's ENTRYPOINT, unchanged, with ephemeral ports appended (the last --port wins)."""
    command = [*dockerfile_entrypoint(out / "Dockerfile"), "--port", "0", "--grpc-port", "0"]
    env = image_env(out, mounts)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = next((line for line in process.stdout if line.startswith("listening")), "")
        match = re.search(r"http=(\d+) grpc=(\d+) models=ocr-cls:1\.0\.0", line)
        assert match, line
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_the_entrypoint_serves_the_registry_export(out: Path, mounts: Mounts) -> None:
    command = dockerfile_entrypoint(out / "Dockerfile")
    assert command[:4] == ["mcp", "serve", "--name", "ocr-cls"]
    assert "--auth" in command and "--require-signed" in command  # finding 1: never an open API on 0.0.0.0
    headers = {"Authorization": f"Bearer {mounts.token}"}
    with entrypoint(out, mounts) as base, httpx.Client(base_url=base, timeout=30, headers=headers) as http:
        assert http.get("/v2/health/live").status_code == 200
        assert http.get("/v2/health/ready").status_code == 200
        anonymous = httpx.post(f"{base}/v2/repository/models/ocr-cls/unload", timeout=30)
        assert anonymous.status_code == 401, anonymous.text
        upright = base64.b64encode(png_bytes(render_text())).decode()
        rotated = base64.b64encode(png_bytes(render_text(rotate=True))).decode()
        first = http.post("/v1/infer", json={"model": "ocr-cls", "image": upright}).json()
        second = http.post("/v1/infer", json={"model": "ocr-cls", "image": rotated}).json()
        assert [first["predictions"][0]["label"], second["predictions"][0]["label"]] == ["0", "180"]
        pixels = np.random.default_rng(0).random((1, 3, 48, 192), dtype=np.float32)
        tensor = {"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": pixels.ravel().tolist()}
        body = {"inputs": [tensor]}
        answer = http.post("/v2/models/ocr-cls/infer", json=body)
        assert answer.status_code == 200, answer.text
        (output,) = answer.json()["outputs"]
        assert output["shape"] == [1, 2] and abs(sum(output["data"]) - 1) < 1e-4  # softmax over two classes


def test_apply_without_kubectl_says_so_in_one_line(home: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()  # a PATH holding no kubectl
    args = ["deploy", "kubernetes", "--name", "ocr-cls", "--out", str(tmp_path / "o"), "--apply", "--context", "prod",
            "--auth-secret", "mcp-tokens"]  # fmt: skip
    done = run_console_script(args, tmp_path, {"MCP_HOME": str(home), "PATH": str(bare)})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: kubectl not found on PATH: the manifests are in {tmp_path / 'o'}; apply them with kubectl"
    ]
    assert (tmp_path / "o" / "kubernetes" / "deployment.yaml").is_file()  # rendered before applying


def test_apply_with_kubectl_but_no_cluster_says_so_in_one_line(home: Path, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    args = ["deploy", "kubernetes", "--name", "ocr-cls", "--out", str(tmp_path / "o"), "--apply", "--context", "prod",
            "--auth-secret", "mcp-tokens"]  # fmt: skip
    done = run_console_script(args, tmp_path, {"MCP_HOME": str(home), "KUBECONFIG": str(config)})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: no Kubernetes cluster reachable through context 'prod': error: context \"prod\" does not exist"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "nope"], "error: unknown model 'nope'"),
        (["--name", "ocr-cls", "--context", "prod"], "error: --context: only used with --apply"),
        (["--name", "ocr-cls", "--version", "9.9.9"], "error: model 'ocr-cls' has no version 9.9.9"),
    ],
)
def test_mistakes_are_one_line_errors(home: Path, tmp_path: Path, args: list[str], message: str) -> None:
    done = run_console_script(["deploy", "kubernetes", "--out", str(tmp_path / "o"), *args], tmp_path,
                              {"MCP_HOME": str(home)})  # fmt: skip
    assert (done.returncode, done.stderr.strip().splitlines()) == (2, [message])
