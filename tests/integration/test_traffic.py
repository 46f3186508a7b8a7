"""Traffic management on the live server: hot reload under load, canary split, header override, shadow."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.routing import RolloutConfig, RolloutStore, shadow_report
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(180)
BODY = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.25] * 16}]}


@pytest.fixture()
def registry(tmp_path: Path) -> ModelRegistry:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "v1.onnx", seed=1), version="1.0.0")
    return registry


@pytest.fixture()
def server(registry: ModelRegistry) -> Iterator[BackgroundServer]:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=10, sync_interval_s=0.2)
    with BackgroundServer(registry, ["mlp"], config) as running:
        yield running


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


class Load:
    """HTTP and gRPC clients hammering the default version until stopped; every outcome recorded."""

    def __init__(self, server: BackgroundServer) -> None:
        self.server = server
        self.versions: Counter[str] = Counter()
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._http), threading.Thread(target=self._grpc)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _http(self) -> None:
        with httpx.Client(base_url=f"http://{self.server.http_url}", timeout=30) as client:
            for _ in range(20_000):
                if self._stop.is_set():
                    return
                response = client.post("/v2/models/mlp/infer", json=BODY)
                if response.status_code == 200:
                    self.versions[response.json()["model_version"]] += 1
                else:
                    self.failures.append(f"http {response.status_code} {response.text}")

    def _grpc(self) -> None:
        client = grpcclient.InferenceServerClient(self.server.grpc_url)
        tensor = grpcclient.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.full((1, 16), 0.25, np.float32))
        for _ in range(20_000):
            if self._stop.is_set():
                return
            try:
                result = client.infer("mlp", [tensor])
                self.versions[result.get_response().model_version] += 1
            except Exception as exc:  # noqa: BLE001 - every failure is recorded and asserted on
                self.failures.append(f"grpc {exc}")


def test_hot_reload_swaps_under_load_without_failures(
    server: BackgroundServer, registry: ModelRegistry, tmp_path: Path
) -> None:
    def latest_served(version: str) -> Callable[[], bool]:
        return lambda: server.plane.models.default_version("mlp") == version and load.versions[version] > 5

    with Load(server) as load:
        wait_for(lambda: load.versions["1.0.0"] > 10)
        registry.register("mlp", mlp_model(tmp_path / "v2.onnx", seed=2))  # 1.1.0 becomes the default
        wait_for(latest_served("1.1.0"))
        registry.promote("mlp", "1.0.0", Stage.PRODUCTION)  # production wins over newer dev versions
        wait_for(latest_served("1.0.0"))
        registry.register("mlp", mlp_model(tmp_path / "v3.onnx", seed=3), stage=Stage.PRODUCTION)
        wait_for(latest_served("1.2.0"))
    assert load.failures == []
    assert set(load.versions) == {"1.0.0", "1.1.0", "1.2.0"}
    assert {s.record.version for s in server.plane.models.served_versions("mlp")} == {"1.2.0"}


def test_canary_split_header_override_and_shadow(
    server: BackgroundServer, registry: ModelRegistry, tmp_path: Path
) -> None:
    registry.register("mlp", mlp_model(tmp_path / "v2.onnx", seed=2), version="2.0.0")
    registry.promote("mlp", "1.0.0", Stage.PRODUCTION)
    RolloutStore(registry).put(
        RolloutConfig(name="mlp", stable="1.0.0", canary="2.0.0", weight=30, shadow="2.0.0", shadow_percent=100)
    )
    wait_for(lambda: {s.record.version for s in server.plane.models.served_versions("mlp")} == {"1.0.0", "2.0.0"})
    served: Counter[str] = Counter()
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as client:
        for user in range(200):
            response = client.post("/v2/models/mlp/infer", json=BODY, headers={"X-User-Id": f"user-{user}"})
            assert response.status_code == 200, response.text
            served[response.json()["model_version"]] += 1
        sticky = {
            client.post("/v2/models/mlp/infer", json=BODY, headers={"X-User-Id": "user-7"}).json()["model_version"]
            for _ in range(5)
        }
        forced = client.post("/v2/models/mlp/infer", json=BODY, headers={"X-Model-Version": "2.0.0"}).json()
    assert 30 <= served["2.0.0"] <= 90, served  # ~30% of 200 users
    assert len(sticky) == 1
    assert forced["model_version"] == "2.0.0"
    server.call(server.plane.traffic.drain(timeout_s=10))
    rows = shadow_report(registry.catalog, "mlp")
    assert rows and rows[0]["shadow"] == "2.0.0"
    assert rows[0]["requests"] > 0
