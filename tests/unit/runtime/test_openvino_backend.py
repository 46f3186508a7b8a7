"""OpenVinoBackend on real bundled models: its outputs match onnxruntime's, its plan reaches the plugin."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import InferenceFailedError, InvalidArgumentError, InvalidInputError, ModelNotReadyError
from mcp2026ai.ir import Signature, import_model
from mcp2026ai.runtime import Backend
from mcp2026ai.runtime.catalog import backend_class, create_backend, installed_runtimes
from mcp2026ai.runtime.plan import Plan
from support.models import mlp_model

ov = pytest.importorskip("openvino", reason="the [openvino] extra")

from mcp2026ai.runtime.openvino import PLATFORM, OpenVinoBackend, compile_config, cpu_precisions  # noqa: E402

LATENCY = Plan(runtime="openvino", intra_op_threads=1, performance_hint="LATENCY", streams=1)


def signature_of(path: Path) -> Signature:
    return import_model(path, path.parent).signature


def random_inputs(signature: Signature, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    fill = {0: batch, 2: 48, 3: 192}
    inputs = {}
    for spec in signature.inputs:
        shape = [dim if dim > 0 else fill.get(axis, 4) for axis, dim in enumerate(spec.shape)]
        inputs[spec.name] = rng.random(shape, dtype=np.float32)
    return inputs


def both(path: Path, plan: Plan = LATENCY) -> tuple[Backend, Backend]:
    signature = signature_of(path)
    reference = create_backend(path, signature, Plan(intra_op_threads=1))
    candidate = create_backend(path, signature, plan)
    reference.load()
    candidate.load()
    return reference, candidate


REAL_MODELS = [("ocr-cls", 3), ("onnx-densenet121", 1), ("onnx-squeezenet", 1)]


@pytest.mark.parametrize(("name", "batch"), REAL_MODELS, ids=[case[0] for case in REAL_MODELS])
def test_outputs_match_onnxruntime_within_tolerance(name: str, batch: int) -> None:
    reference, candidate = both(bundled_model_path(name))
    assert isinstance(candidate, OpenVinoBackend) and candidate.platform == PLATFORM
    inputs = random_inputs(candidate.signature, batch)
    want, got = reference.infer(inputs), candidate.infer(inputs)
    assert list(got) == list(want)
    for output, expected in want.items():
        assert got[output].dtype == expected.dtype and got[output].shape == expected.shape
        np.testing.assert_allclose(got[output], expected, rtol=1e-4, atol=1e-5)
    assert np.abs(next(iter(want.values()))).max() > 0  # a real answer, not all zeros


def test_dynamic_batches_and_selected_outputs(tmp_path: Path) -> None:
    path = mlp_model(tmp_path / "mlp.onnx")
    throughput = LATENCY.model_copy(update={"performance_hint": "THROUGHPUT", "streams": 2, "intra_op_threads": 2})
    reference, candidate = both(path, throughput)
    for batch in (1, 5, 32):
        inputs = random_inputs(candidate.signature, batch, seed=batch)
        want = reference.infer(inputs)
        got = candidate.infer(inputs, [candidate.signature.outputs[0].name])
        (name,) = got
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_plan_settings_reach_the_cpu_plugin(tmp_path: Path) -> None:
    path = mlp_model(tmp_path / "mlp.onnx")
    plan = LATENCY.model_copy(update={"intra_op_threads": 2, "streams": 1})
    config = compile_config(plan)
    compiled = ov.Core().compile_model(str(path), "CPU", config)
    assert compiled.get_property("NUM_STREAMS") == 1
    assert compiled.get_property("INFERENCE_NUM_THREADS") == 2
    assert str(compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    assert "f32" in cpu_precisions()


def test_model_bytes_load_and_errors_are_domain_errors(tmp_path: Path) -> None:
    path = mlp_model(tmp_path / "mlp.onnx")
    signature = signature_of(path)
    backend = OpenVinoBackend(path.read_bytes(), signature, LATENCY)
    with pytest.raises(ModelNotReadyError, match="backend is not loaded"):
        backend.infer(random_inputs(signature, 1))
    backend.load()
    assert backend.infer(random_inputs(signature, 2))
    with pytest.raises(InvalidInputError, match="datatype FP64"):
        backend.infer({signature.inputs[0].name: np.zeros((1, 16), np.float64)})
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not onnx")
    with pytest.raises(InferenceFailedError, match=r"broken\.onnx: OpenVINO cannot compile it"):
        OpenVinoBackend(broken, signature, LATENCY).load()


def test_catalog_lists_openvino_and_hints_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert installed_runtimes() == ["onnxruntime", "openvino"]
    assert backend_class("openvino") is OpenVinoBackend
    monkeypatch.setitem(sys.modules, "openvino", None)  # as if the extra were not installed
    with pytest.raises(InvalidArgumentError) as caught:
        backend_class("openvino")
    assert "pip install 'mcp2026ai[openvino]'" in str(caught.value)


def test_one_stream_per_instance_with_its_threads(tmp_path: Path) -> None:
    path = mlp_model(tmp_path / "mlp.onnx")
    plan = LATENCY.model_copy(
        update={"performance_hint": "THROUGHPUT", "intra_op_threads": 1, "streams": 2, "instances": 2}
    )
    compiled = ov.Core().compile_model(str(path), "CPU", compile_config(plan))
    assert compiled.get_property("NUM_STREAMS") == 2
    assert compiled.get_property("INFERENCE_NUM_THREADS") == 2  # one thread per stream
    reference, candidate = both(path, plan)
    inputs = random_inputs(candidate.signature, 3)
    with ThreadPoolExecutor(max_workers=2) as pool:  # both instances at once, each its own infer request
        results = list(pool.map(lambda _: candidate.infer(inputs), range(4)))
    want = reference.infer(inputs)
    for got in results:
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5)
