"""mcp2026ai.edge.ModelProxy against the real server: pulled and verified models run locally, the
server serves when the device cannot (unsigned, busy, stale, missing), and pulling needs a scope."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.client import V2HttpClient
from mcp2026ai.edge import AsyncModelProxy, ModelProxy
from mcp2026ai.errors import InvalidInputError, UnavailableError
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.security import AuthConfig, KeyRing, Scope, ServingSecurity, TokenStore
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.images import png_bytes, render_text
from support.models import add_sub_model, mlp_model

pytestmark = pytest.mark.timeout(120)

ONES = np.ones((1, 4), np.float32)
TWOS = np.full((1, 4), 2.0, np.float32)


@dataclass
class Cloud:
    server: BackgroundServer
    public_key: Path
    pull_token: str
    infer_token: str

    @property
    def url(self) -> str:
        return f"http://{self.server.http_url}"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    """A server with auth on, serving signed add_sub and ocr-cls and an unsigned mlp."""
    root = tmp_path_factory.mktemp("cloud")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    prep = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=prep)
    registry.register("mlp", mlp_model(root / "mlp.onnx"))
    key = KeyRing(root / "keys").create("release")
    for name in ("add_sub", "ocr-cls"):
        sign_version(registry, registry.resolve(name), key)
    store = TokenStore(root / "tokens.json")
    pull = store.create("device", frozenset({Scope.INFER, Scope.PULL})).token
    infer_only = store.create("app", frozenset({Scope.INFER})).token
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=store.path))
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security)
    with BackgroundServer(registry, ["add_sub", "ocr-cls", "mlp"], config) as server:
        yield Cloud(server, root / "keys" / "release.pub", pull, infer_only)


def proxy(cloud: Cloud, device: Path, model: str, token: str | None = None, **options: object) -> ModelProxy:
    return ModelProxy(
        model,
        cache_ttl=options.pop("cache_ttl", 300),  # type: ignore[arg-type]
        fallback_url=f"{cloud.url}/v1/infer",
        home=device,
        token=token or cloud.pull_token,
        trusted_keys=[cloud.public_key],
        **options,
    )


def test_a_pulled_signed_model_runs_locally_and_agrees_with_the_server(cloud: Cloud, tmp_path: Path) -> None:
    image = png_bytes(render_text(rotate=True))
    with proxy(cloud, tmp_path, "ocr-cls") as edge:
        local = edge.infer(image)
        assert (local.path, local.reason) == ("local", f"pulled from {cloud.url}")
        assert (local.model, local.version) == ("ocr-cls", "1.0.0")
    with V2HttpClient(cloud.url, cloud.infer_token) as client:
        remote = client.predict_image("ocr-cls", image, top_k=5)
    assert [p["label"] for p in local.predictions] == [p["label"] for p in remote["predictions"]]
    np.testing.assert_allclose(
        [p["score"] for p in local.predictions], [p["score"] for p in remote["predictions"]], rtol=1e-5
    )
    cached = list((tmp_path / "edge-cache").iterdir())
    assert len(cached) == 1 and cached[0].stat().st_size == bundled_model_path("ocr-cls").stat().st_size


def test_arrays_run_locally_and_a_bad_tensor_is_the_callers_error(cloud: Cloud, tmp_path: Path) -> None:
    with proxy(cloud, tmp_path, "add_sub") as edge:
        result = edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
        assert result.path == "local"
        np.testing.assert_array_equal(result.outputs["OUTPUT0"], ONES + TWOS)
        with pytest.raises(InvalidInputError, match="INPUT1"):
            edge.infer({"INPUT0": ONES})  # never retried on the server: it would fail there too


def test_an_unsigned_model_is_not_run_locally(cloud: Cloud, tmp_path: Path) -> None:
    with proxy(cloud, tmp_path, "mlp") as edge:
        result = edge.infer({"x": np.ones((1, 16), np.float32)})
    assert result.path == "remote"
    assert "pull failed" in result.reason and "not signed" in result.reason
    assert result.outputs["probs"].shape == (1, 10)
    assert not (tmp_path / "edge-cache").exists() or not list((tmp_path / "edge-cache").iterdir())


def test_pulling_needs_the_pull_scope(cloud: Cloud, tmp_path: Path) -> None:
    refused = httpx.get(
        f"{cloud.url}/v2/models/add_sub/artifact", headers={"Authorization": f"Bearer {cloud.infer_token}"}
    )
    assert refused.status_code == 403 and "'pull' scope" in refused.json()["error"]
    with proxy(cloud, tmp_path, "add_sub", token=cloud.infer_token) as edge:
        result = edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
    assert result.path == "remote" and "pull failed" in result.reason and "403" in result.reason
    np.testing.assert_array_equal(result.outputs["OUTPUT1"], ONES - TWOS)


def test_artifact_etag_is_its_digest(cloud: Cloud) -> None:
    headers = {"Authorization": f"Bearer {cloud.pull_token}"}
    first = httpx.get(f"{cloud.url}/v2/models/add_sub/artifact", headers=headers)
    assert first.status_code == 200 and first.headers["x-model-version"]
    again = httpx.get(
        f"{cloud.url}/v2/models/add_sub/artifact", headers={**headers, "If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304 and again.content == b""
    package = httpx.get(f"{cloud.url}/v2/models/add_sub/package", headers=headers).json()
    assert f'"{package["record"]["digest"]}"' == first.headers["etag"]
    assert package["signatures"][0]["signer"] == "release"


def test_a_busy_device_sends_work_to_the_server(cloud: Cloud, tmp_path: Path) -> None:
    with proxy(cloud, tmp_path, "add_sub", max_local_inflight=0) as edge:
        result = edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
    assert result.path == "remote" and result.reason == "local busy (0 in flight)"


def test_a_model_in_the_device_registry_runs_from_it(cloud: Cloud, tmp_path: Path) -> None:
    device = tmp_path / "device"
    registry = ModelRegistry(device)
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    with ModelProxy("add_sub", home=device, require_signed=False) as edge:  # no server at all
        result = edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
    assert (result.path, result.reason) == ("local", "local registry")
    with ModelProxy("add_sub", home=device) as edge, pytest.raises(UnavailableError, match="not signed"):
        edge.infer({"INPUT0": ONES, "INPUT1": TWOS})  # signatures required by default, and no fallback


def test_a_pulled_copy_is_used_only_while_fresh(cloud: Cloud, tmp_path: Path) -> None:
    inputs = {"INPUT0": ONES, "INPUT1": TWOS}
    edge = ModelProxy(
        "add_sub",
        cache_ttl=1.0,
        server_url=cloud.url,
        home=tmp_path,
        token=cloud.pull_token,
        trusted_keys=[cloud.public_key],
    )  # no fallback: what runs must run here
    assert edge.infer(inputs).path == "local"
    edge.local.server = V2HttpClient("http://127.0.0.1:9", timeout_s=1)  # the server goes away
    assert edge.infer(inputs).reason == f"pulled from {cloud.url}"  # still fresh
    time.sleep(1.2)
    with pytest.raises(UnavailableError, match="pull failed"):
        edge.infer(inputs)
    edge.close()


def test_asyncio_proxy(cloud: Cloud, tmp_path: Path) -> None:
    async def run() -> tuple[str, str]:
        async with AsyncModelProxy(
            "add_sub",
            fallback_url=cloud.url,
            home=tmp_path,
            token=cloud.pull_token,
            trusted_keys=[cloud.public_key],
        ) as edge:
            local = await edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
            edge.max_local_inflight = 0
            remote = await edge.infer({"INPUT0": ONES, "INPUT1": TWOS})
            np.testing.assert_array_equal(remote.outputs["OUTPUT0"], local.outputs["OUTPUT0"])
            return local.path, remote.path

    assert asyncio.run(run()) == ("local", "remote")
