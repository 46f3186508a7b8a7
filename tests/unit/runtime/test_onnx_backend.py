"""OnnxRuntimeBackend on real bundled models and small generated ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import InferenceFailedError, InvalidInputError, ModelNotReadyError
from mcp2026ai.ir import Signature, import_model
from mcp2026ai.runtime import Backend
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend, session_options
from mcp2026ai.runtime.plan import Plan


def loaded_backend(path: Path, plan: Plan | None = None) -> OnnxRuntimeBackend:
    signature = import_model(path, path.parent).signature
    backend = OnnxRuntimeBackend(path, signature, plan) if plan else OnnxRuntimeBackend(path, signature)
    backend.load()
    return backend


def reference_run(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # the light zoo models carry unused initializers ORT warns about
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs), strict=True))


def random_input(signature: Signature, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    fill = {0: batch, 2: 48, 3: 160}
    inputs = {}
    for spec in signature.inputs:
        shape = [dim if dim > 0 else fill.get(axis, 4) for axis, dim in enumerate(spec.shape)]
        inputs[spec.name] = rng.standard_normal(shape).astype(np.float32)
    return inputs


REAL_MODELS = [("ocr-cls", 3), ("onnx-squeezenet", 1), ("onnx-resnet50", 1)]


@pytest.mark.parametrize(("name", "batch"), REAL_MODELS, ids=[case[0] for case in REAL_MODELS])
def test_real_model_outputs_equal_a_direct_session(name: str, batch: int) -> None:
    path = bundled_model_path(name)
    backend = loaded_backend(path)
    inputs = random_input(backend.signature, batch)
    got = backend.infer(inputs)
    want = reference_run(path, inputs)
    assert list(got) == [spec.name for spec in backend.signature.outputs]
    for output_name, expected in want.items():
        assert got[output_name].dtype == expected.dtype
        assert np.array_equal(got[output_name], expected), output_name


def test_ocr_classifier_scores_are_probabilities() -> None:
    backend = loaded_backend(bundled_model_path("ocr-cls"))
    (scores,) = backend.infer(random_input(backend.signature, 2)).values()
    assert scores.shape == (2, 2)
    assert np.allclose(scores.sum(axis=1), 1.0, atol=1e-5)


def test_backend_satisfies_the_protocol(mlp_path: Path) -> None:
    backend = OnnxRuntimeBackend(mlp_path, import_model(mlp_path, mlp_path.parent).signature)
    assert isinstance(backend, Backend)
    assert not backend.loaded
    backend.load()
    assert backend.loaded
    backend.unload()
    assert not backend.loaded


def test_infer_before_load(mlp_path: Path) -> None:
    backend = OnnxRuntimeBackend(mlp_path, import_model(mlp_path, mlp_path.parent).signature)
    with pytest.raises(ModelNotReadyError, match=r"mlp\.onnx: backend is not loaded"):
        backend.infer({"x": np.zeros((1, 4), np.float32)})


@pytest.mark.parametrize("batch", [1, 3, 17])
def test_dynamic_batch(mlp_path: Path, batch: int) -> None:
    backend = loaded_backend(mlp_path)
    x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
    got = backend.infer({"x": x})["y"]
    assert got.shape == (batch, 3)
    assert np.array_equal(got, reference_run(mlp_path, {"x": x})["y"])


def test_requested_outputs_subset(two_input_path: Path) -> None:
    backend = loaded_backend(two_input_path)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2.0, dtype=np.float32)
    assert list(backend.infer({"a": a, "b": b}, outputs=["prod"])) == ["prod"]
    both = backend.infer({"a": a, "b": b})
    assert np.array_equal(both["sum"], a + b)
    assert np.array_equal(both["prod"], a * b)


def test_int64_model(int64_path: Path) -> None:
    backend = loaded_backend(int64_path)
    ids = np.arange(10, dtype=np.int64).reshape(2, 5)
    doubled = backend.infer({"ids": ids})["doubled"]
    assert doubled.dtype == np.int64
    assert np.array_equal(doubled, ids * 2)


def test_plan_options_are_applied(mlp_path: Path, tmp_path: Path) -> None:
    plan = Plan(intra_op_threads=1, inter_op_threads=1, graph_optimization="basic")
    optimized = tmp_path / "optimized.onnx"
    signature = import_model(mlp_path, tmp_path).signature
    backend = OnnxRuntimeBackend(mlp_path, signature, plan, optimized_model_path=optimized)
    backend.load()
    x = np.ones((2, 4), np.float32)
    assert np.allclose(backend.infer({"x": x})["y"], reference_run(mlp_path, {"x": x})["y"], rtol=1e-6)
    assert optimized.exists() and optimized.stat().st_size > 0


def test_intra_op_workers_stop_spinning_when_a_run_ends() -> None:
    """Between two batches the cores belong to the event loop and co-located processes (the co-located
    overload benchmark: 3-6 ms less CPU per batch, docs/llm-reliability.md)."""
    options = session_options(Plan(intra_op_threads=2))
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    with pytest.raises(RuntimeError):  # not set: within a run they spin (onnxruntime's default)
        options.get_session_config_entry("session.intra_op.allow_spinning")


def test_runtime_failure_on_valid_looking_input(two_input_path: Path) -> None:
    backend = loaded_backend(two_input_path)
    a = np.zeros((2, 3), np.float32)
    b = np.zeros((3, 3), np.float32)  # both batch dims are dynamic, but Add cannot broadcast 2 with 3
    with pytest.raises(InferenceFailedError, match=r"^onnxruntime failed: ") as info:
        backend.infer({"a": a, "b": b})
    assert "\n" not in str(info.value)


# --- input validation: InvalidInputError naming the tensor -------------------------------------


def test_missing_input(two_input_path: Path) -> None:
    backend = loaded_backend(two_input_path)
    with pytest.raises(InvalidInputError, match=r"^missing input 'b'$"):
        backend.infer({"a": np.zeros((1, 3), np.float32)})


def test_unexpected_input(mlp_path: Path) -> None:
    backend = loaded_backend(mlp_path)
    with pytest.raises(InvalidInputError, match=r"^unexpected input 'z'; the model takes \['x'\]$"):
        backend.infer({"x": np.zeros((1, 4), np.float32), "z": np.zeros(1, np.float32)})


@pytest.mark.parametrize(("dtype", "v2"), [(np.float64, "FP64"), (np.int64, "INT64"), (np.float16, "FP16")])
def test_wrong_dtype(mlp_path: Path, dtype: type, v2: str) -> None:
    backend = loaded_backend(mlp_path)
    with pytest.raises(InvalidInputError, match=rf"^input 'x': datatype {v2} does not match the model's FP32$"):
        backend.infer({"x": np.zeros((1, 4), dtype)})


def test_wrong_dtype_int64_model(int64_path: Path) -> None:
    backend = loaded_backend(int64_path)
    with pytest.raises(InvalidInputError, match="input 'ids': datatype INT32 does not match the model's INT64"):
        backend.infer({"ids": np.zeros((1, 5), np.int32)})


@pytest.mark.parametrize("shape", [(4,), (1, 4, 1)], ids=["rank1", "rank3"])
def test_wrong_rank(mlp_path: Path, shape: tuple[int, ...]) -> None:
    backend = loaded_backend(mlp_path)
    with pytest.raises(InvalidInputError, match=r"^input 'x': shape \[.*\] does not match the model's \[-1, 4\]$"):
        backend.infer({"x": np.zeros(shape, np.float32)})


def test_wrong_fixed_dim(mlp_path: Path) -> None:
    backend = loaded_backend(mlp_path)
    with pytest.raises(InvalidInputError, match=r"input 'x': shape \[2, 5\] does not match"):
        backend.infer({"x": np.zeros((2, 5), np.float32)})


def test_wrong_fixed_dim_on_real_models() -> None:
    squeezenet = loaded_backend(bundled_model_path("onnx-squeezenet"))
    with pytest.raises(InvalidInputError, match=r"input 'data_0': shape \[2, 3, 224, 224\] does not match"):
        squeezenet.infer({"data_0": np.zeros((2, 3, 224, 224), np.float32)})
    ocr = loaded_backend(bundled_model_path("ocr-cls"))
    with pytest.raises(
        InvalidInputError, match=r"input 'x': shape \[1, 4, 48, 192\] does not match .*\[-1, 3, -1, -1\]"
    ):
        ocr.infer({"x": np.zeros((1, 4, 48, 192), np.float32)})


def test_unknown_requested_output(mlp_path: Path) -> None:
    backend = loaded_backend(mlp_path)
    with pytest.raises(InvalidInputError, match=r"^unknown output 'logits'; the model produces \['y'\]$"):
        backend.infer({"x": np.zeros((1, 4), np.float32)}, outputs=["logits"])
