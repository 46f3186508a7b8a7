"""BatchingExecutor on the real bundled PaddleOCR text-direction classifier ("ocr-cls", dynamic batch)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.contract import SLAClass, parse_contract
from mcp2026ai.errors import NotFoundError
from mcp2026ai.ir import import_model
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingConfig, BatchingExecutor

from .support import GatedBackend, metric, no_deadlines, run


@pytest.fixture(scope="module")
def ocr_cls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OnnxRuntimeBackend]:
    try:
        path = bundled_model_path("ocr-cls")
    except NotFoundError as exc:
        pytest.skip(str(exc))
    imported = import_model(path, Path(tmp_path_factory.mktemp("ocr-cls")))
    backend = OnnxRuntimeBackend(imported.onnx_path, imported.signature)
    backend.load()
    yield backend
    backend.unload()


def _images(count: int, width: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.uniform(-1, 1, (1, 3, 48, width)).astype(np.float32)} for _ in range(count)]


def test_ocr_cls_batches_match_one_by_one_and_widths_never_mix(ocr_cls: OnnxRuntimeBackend, model_name: str) -> None:
    contract = parse_contract({"batching": {"max_batch_size": 8, "max_queue_delay_ms": 50}})
    config = BatchingConfig.from_contract(contract, ocr_cls.signature).model_copy(update={"classes": no_deadlines()})
    assert config.batching, "ocr-cls has a dynamic batch dimension"
    requests = _images(10, 192, seed=1) + _images(5, 96, seed=2)
    requests.insert(3, {"x": np.concatenate([r["x"] for r in _images(2, 192, seed=3)])})
    expected = [ocr_cls.infer(inputs) for inputs in requests]
    recorder = GatedBackend(ocr_cls)
    recorder.gate.set()

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(recorder, config, model=model_name, version="1")
        await executor.start()
        classes = list(SLAClass)
        submits = [
            executor.submit(inputs, None, sla_class=classes[i % 2 + 1], deadline=None)
            for i, inputs in enumerate(requests)
        ]
        results = await asyncio.gather(*submits)
        await executor.stop(drain_timeout_s=10)
        return list(results)

    results = run(scenario())
    for got, want in zip(results, expected, strict=True):
        (name,) = want
        assert got[name].shape == want[name].shape
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)
    assert len(recorder.calls) < len(requests), "requests shared batches"
    rows_by_width: dict[int, int] = {}
    for call in recorder.calls:
        rows_by_width[call["x"].shape[3]] = rows_by_width.get(call["x"].shape[3], 0) + call["x"].shape[0]
    assert rows_by_width == {192: 12, 96: 5}, "each width ran in batches of its own"
    assert max(recorder.rows) > 1 and max(recorder.rows) <= 8
    assert sum(recorder.rows) == 17
    assert metric("mcp_scheduler_batch_rows_sum", model=model_name, version="1") == 17
