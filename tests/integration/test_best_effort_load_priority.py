"""Best-effort models computing below the pinned latency-critical one (host tuning ``best_effort_load_nice``,
scheduling/load_priority.py), on the real server under a memory budget: the OCR classifier pinned,
SqueezeNet and SmolLM2 best-effort, each loaded by its first request.

The threads each load creates are read back from /proc/self/task (the server runs in this process): the
best-effort models' onnxruntime workers (SqueezeNet's session, SmolLM2's decoder) and the SmolLM2
engine's step thread run 10 nicer, the pinned model's threads keep their priority; with
``bulk_batch_nice`` too, SqueezeNet's batch right after a latency-critical batch of the OCR classifier
runs on its bulk pool (one window for the server's executors); every answer is what it is without the
knobs.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import numpy as np
import onnx
import pytest

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.runtime.cpu_affinity import usable_physical_cores
from mcp2026ai.runtime.thread_priority import THREAD_PRIORITIES, thread_nice
from mcp2026ai.scheduling.host import HostTuning
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.slow,
    pytest.mark.skipif(not THREAD_PRIORITIES, reason="threads have no nice value of their own here"),
]
NICE = 10
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "temperature": 0}


def task_nices() -> dict[int, int]:
    """Each thread of this process by id, with its nice value (field 19 of /proc/self/task/TID/stat)."""
    nices = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        nices[int(task.name)] = int(fields[16])
    return nices


def native_threads(nices: dict[int, int]) -> dict[int, int]:
    """Those not started by Python (onnxruntime's workers)."""
    python_threads = {thread.native_id for thread in threading.enumerate()}
    return {tid: nice for tid, nice in nices.items() if tid not in python_threads}


def squeezenet_file(folder: Path) -> Path:
    """The onnx package's light SqueezeNet with its data input only (its weights are listed as inputs too)."""
    model = onnx.load(str(bundled_model_path("onnx-squeezenet")))
    weights = {init.name for init in model.graph.initializer}
    data = [value for value in model.graph.input if value.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(data)
    model.ir_version = max(model.ir_version, 4)  # initializers need not be inputs from IR 4 on
    onnx.save(model, str(folder / "squeezenet.onnx"))
    return folder / "squeezenet.onnx"


def serve(home: Path, smollm2: Path, nice: int | None) -> BackgroundServer:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        if not registry.model_names():
            ocr = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
            critical = InferenceContract(sla_class=SLAClass.LATENCY_CRITICAL)
            registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=ocr, contract=critical)
            registry.register("squeezenet", squeezenet_file(home))
            registry.register("smollm2", smollm2)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        memory_budget_mb=1000,
        generation=EngineConfig(max_num_seqs=2, max_model_len=256),
        host_tuning=HostTuning(best_effort_load_nice=nice, bulk_batch_nice=nice),
    )
    return BackgroundServer(registry, ["ocr-cls"], config)


def squeezenet_answer(client: httpx.Client) -> list[float]:
    data = np.random.default_rng(0).random((1, 3, 224, 224), np.float32).round(2)
    body = {
        "inputs": [{"name": "data_0", "shape": [1, 3, 224, 224], "datatype": "FP32", "data": data.ravel().tolist()}]
    }
    response = client.post("/v2/models/squeezenet/infer", json=body)
    assert response.status_code == 200, response.text
    return [float(value) for value in response.json()["outputs"][0]["data"]]


def engine_thread_nice() -> int:
    engine = next(thread for thread in threading.enumerate() if thread.name == "generate-smollm2")
    assert engine.native_id is not None
    return thread_nice(engine.native_id)


def test_best_effort_models_compute_on_lowered_threads_and_the_pinned_one_does_not(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    base = thread_nice()
    answers: dict[int | None, tuple[list[float], str]] = {}
    for nice in (NICE, None):
        with (
            serve(tmp_path / "home", smollm2_gguf, nice) as server,
            httpx.Client(base_url=f"http://{server.http_url}", timeout=120) as client,
        ):
            before = task_nices()
            classified = squeezenet_answer(client)  # loaded by this request
            loaded = task_nices()
            workers = {tid: n for tid, n in native_threads(loaded).items() if tid not in before}
            before_chat = task_nices()
            chat = client.post("/v1/chat/completions", json=CHAT)  # loads SmolLM2
            assert chat.status_code == 200, chat.text
            decoder_workers = {tid: n for tid, n in native_threads(task_nices()).items() if tid not in before_chat}
            answers[nice] = (classified, chat.json()["choices"][0]["message"]["content"])
            ocr = client.post("/v2/models/ocr-cls/infer", json=ocr_body(), headers={"X-SLA-Class": "latency-critical"})
            assert ocr.status_code == 200, ocr.text
            assert squeezenet_answer(client) == classified  # right after a latency-critical batch of another model
            expected = min(19, base + nice) if nice else base
            bulk = [thread for thread in threading.enumerate() if thread.name.startswith("mcp-batch-bulk")]
            assert bool(bulk) == bool(nice), "with --bulk-batch-nice, SqueezeNet's batch ran on its bulk pool"
            assert all(thread_nice(thread.native_id) == expected for thread in bulk if thread.native_id)
            if usable_physical_cores() > 1:  # one intra-op thread is the caller's own: no worker to read
                assert workers and set(workers.values()) == {expected}, workers
                assert decoder_workers and set(decoder_workers.values()) == {expected}, decoder_workers
            assert engine_thread_nice() == expected, "the engine's step thread (its decode steps) runs lower too"
            kept = {tid: n for tid, n in task_nices().items() if tid in before}
            assert kept == {tid: before[tid] for tid in kept}, "threads that were there keep their priority"
            assert thread_nice() == base
    assert answers[NICE] == answers[None], "the same kernels give the same answers at any priority"


def ocr_body() -> dict[str, object]:
    image = np.random.default_rng(1).random((1, 3, 48, 192), np.float32).round(2)
    return {"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": image.ravel().tolist()}]}
