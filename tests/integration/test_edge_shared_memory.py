"""Issue 50, finding 3: system shared memory maps only what its clients own, and cannot kill the server.

A region is a regular file directly under /dev/shm owned by the server's user, never followed through
a symbolic link; a region its owner truncates gives an error naming it (it used to be SIGBUS, the
whole server gone); registering needs the ``shm`` scope when ``--auth`` is on, on both transports.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import AuthConfig, Scope, ServingSecurity, TokenStore
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

pytestmark = pytest.mark.timeout(120)

SHM = Path("/dev/shm")
ROW = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)  # one [1, 4] FP32 row: 16 bytes


@pytest.fixture()
def shm_file() -> Iterator[Path]:
    path = SHM / f"mcp-test-{uuid.uuid4().hex}"
    try:
        yield path
    finally:
        if path.is_symlink() or path.exists():
            path.unlink()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    root = tmp_path_factory.mktemp("shm")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    with BackgroundServer(registry, ["add_sub"], ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5)) as running:
        yield running


def register(server: BackgroundServer, region: str, key: str, size: int, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    document = {"key": key, "offset": 0, "byte_size": size}
    return httpx.post(
        f"http://{server.http_url}/v2/systemsharedmemory/region/{region}/register", json=document, headers=headers
    )


def infer_from(server: BackgroundServer, region: str, output_region: str | None = None) -> httpx.Response:
    memory = {"shared_memory_region": region, "shared_memory_byte_size": 16}
    inputs = [{"name": n, "shape": [1, 4], "datatype": "FP32", "parameters": memory} for n in ("INPUT0", "INPUT1")]
    document: dict[str, object] = {"inputs": inputs}
    if output_region is not None:
        target = {"shared_memory_region": output_region, "shared_memory_byte_size": 16}
        document["outputs"] = [{"name": "OUTPUT0", "parameters": target}]
    return httpx.post(f"http://{server.http_url}/v2/models/add_sub/infer", json=document)


def test_a_symbolic_link_in_dev_shm_is_not_followed(server: BackgroundServer, shm_file: Path, tmp_path: Path) -> None:
    secret = tmp_path / "root-only"
    secret.write_bytes(b"root:$6$SUPERSECRETHASH:...\n")
    secret.chmod(0o600)
    shm_file.symlink_to(secret)
    answer = register(server, "peek", shm_file.name, 16)
    assert answer.status_code == 400
    assert "symbolic links are not followed" in answer.json()["error"]
    assert secret.read_bytes() == b"root:$6$SUPERSECRETHASH:...\n"
    assert "peek" not in httpx.get(f"http://{server.http_url}/v2/systemsharedmemory/status").text


def test_only_regular_files_of_the_servers_user_are_mapped(server: BackgroundServer, shm_file: Path) -> None:
    os.mkfifo(shm_file)
    fifo = register(server, "fifo", shm_file.name, 16)
    assert fifo.status_code == 400 and "not a regular file owned by the server's user" in fifo.json()["error"]
    shm_file.unlink()
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    shm_file.write_bytes(ROW * 2)
    os.chown(shm_file, 65534, 65534)  # another process's segment (nobody's)
    foreign = register(server, "other", shm_file.name, 16)
    assert foreign.status_code == 400 and "owned by the server's user" in foreign.json()["error"]
    assert shm_file.read_bytes() == ROW * 2


def test_a_truncated_region_is_an_error_not_a_crash(server: BackgroundServer, shm_file: Path) -> None:
    shm_file.write_bytes(ROW)
    assert register(server, "bus", shm_file.name, 16).status_code == 200
    try:
        served = infer_from(server, "bus")
        assert served.status_code == 200 and served.json()["outputs"][0]["data"] == [2.0, 4.0, 6.0, 8.0]
        os.truncate(shm_file, 0)
        for answer in (infer_from(server, "bus"), infer_from(server, "bus", output_region="bus")):
            assert answer.status_code == 400
            assert "region 'bus' was truncated" in answer.json()["error"]
        shm_file.write_bytes(ROW)  # back to its size: works again
        assert infer_from(server, "bus").status_code == 200
        os.truncate(shm_file, 0)
        with shm_file.open("r+b") as grown:  # a region written into must not grow or fault either
            grown.truncate(16)
        assert infer_from(server, "bus", output_region="bus").status_code == 200
        assert httpx.get(f"http://{server.http_url}/v2/health/live").status_code == 200
    finally:
        httpx.post(f"http://{server.http_url}/v2/systemsharedmemory/region/bus/unregister")


def test_with_auth_shared_memory_needs_its_own_scope(tmp_path: Path, shm_file: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    store = TokenStore(tmp_path / "tokens.json")
    infer = store.create("app", frozenset({Scope.INFER})).token
    manage = store.create("ops", frozenset({Scope.MANAGE})).token
    shm = store.create("shm-client", frozenset({Scope.INFER, Scope.SHM})).token
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=store.path))
    shm_file.write_bytes(ROW)
    with BackgroundServer(registry, ["add_sub"], ServerConfig(http_port=0, grpc_port=0, security=security)) as server:
        for token in (infer, manage):
            refused = register(server, "r1", shm_file.name, 16, token)
            assert refused.status_code == 403 and "lacks the 'shm' scope" in refused.json()["error"]
        status = httpx.get(
            f"http://{server.http_url}/v2/systemsharedmemory/status", headers={"Authorization": f"Bearer {infer}"}
        )
        assert status.status_code == 403
        with grpc.insecure_channel(server.grpc_url) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            request = pb.SystemSharedMemoryRegisterRequest(name="r1", key=shm_file.name, offset=0, byte_size=16)
            with pytest.raises(grpc.RpcError) as caught:
                stub.SystemSharedMemoryRegister(request, metadata=[("authorization", f"Bearer {infer}")])
            assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "'shm' scope" in (caught.value.details() or "")
            stub.SystemSharedMemoryRegister(request, metadata=[("authorization", f"Bearer {shm}")])
        assert register(server, "r2", shm_file.name, 16, shm).status_code == 200
