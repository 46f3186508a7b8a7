from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import InferenceFailedError
from mcp2026ai.ir import import_model
from mcp2026ai.policy.cache import OptimizedModelCache
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.runtime.plan import Plan, Provider


def test_optimized_model_written_once_and_gives_the_same_outputs(tmp_path: Path, mlp_path: Path) -> None:
    cache = OptimizedModelCache(tmp_path / "cache", "hw1")
    plan = Plan(intra_op_threads=1)
    first = cache.ensure(mlp_path, "digest", plan)
    assert first is not None and first.exists() and first.name.startswith("digest-")
    written_at = first.stat().st_mtime_ns
    assert cache.ensure(mlp_path, "digest", plan) == first
    assert first.stat().st_mtime_ns == written_at
    cached_files = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert cached_files == [first.name, first.name + ".sha256"]  # the file and its digest, no temp files left

    signature = import_model(mlp_path, tmp_path / "tmp").signature
    x = np.random.default_rng(1).standard_normal((2, 32)).astype(np.float32)
    reference = OnnxRuntimeBackend(mlp_path, signature, plan)
    reference.load()
    cached = cache.backend(mlp_path, "digest", plan, signature)
    assert cached.model_path == first and cached.plan.graph_optimization == "disable"
    cached.load()
    np.testing.assert_allclose(cached.infer({"x": x})["y"], reference.infer({"x": x})["y"], rtol=1e-5)


def test_cache_key_depends_on_plan_and_hardware(tmp_path: Path) -> None:
    cache = OptimizedModelCache(tmp_path, "hw1")
    one, two = Plan(intra_op_threads=1), Plan(intra_op_threads=2)
    assert cache.path_for("d", one) != cache.path_for("d", two)
    assert cache.path_for("d", one) != OptimizedModelCache(tmp_path, "hw2").path_for("d", one)
    assert cache.path_for("d", one) == OptimizedModelCache(tmp_path, "hw1").path_for("d", one)


def test_uncacheable_plans_use_the_source(tmp_path: Path, mlp_path: Path) -> None:
    cache = OptimizedModelCache(tmp_path / "cache", "hw")
    assert cache.ensure(mlp_path, "d", Plan(provider=Provider.TENSORRT)) is None
    assert cache.ensure(mlp_path, "d", Plan(graph_optimization="disable")) is None
    signature = import_model(mlp_path, tmp_path / "tmp").signature
    assert cache.backend(mlp_path, "d", Plan(graph_optimization="disable"), signature).model_path == mlp_path


def test_broken_model_fails_with_a_domain_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"nope")
    with pytest.raises(InferenceFailedError, match=r"broken\.onnx: cannot write optimized model"):
        OptimizedModelCache(tmp_path / "cache", "hw").ensure(broken, "d", Plan())
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_corrupted_cached_model_is_optimized_again_not_loaded(tmp_path: Path, mlp_path: Path) -> None:
    cache = OptimizedModelCache(tmp_path / "cache", "hw1")
    plan = Plan(intra_op_threads=1)
    first = cache.ensure(mlp_path, "digest", plan)
    assert first is not None
    good = first.read_bytes()
    flip_byte(first, len(good) // 2)
    again = OptimizedModelCache(tmp_path / "cache", "hw1").ensure(mlp_path, "digest", plan)
    assert again == first and again.read_bytes() == good


def flip_byte(path: Path, offset: int) -> None:
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_model_listing_its_weights_as_inputs_is_not_replaced_by_a_broken_copy(tmp_path: Path) -> None:
    """The onnx package's light SqueezeNet (IR 3: weights are graph inputs too): onnxruntime's saved
    optimized copy kept those inputs without their values, and every request failed."""
    from mcp2026ai.bundled import bundled_model_path

    source = bundled_model_path("onnx-squeezenet")
    cache = OptimizedModelCache(tmp_path / "cache", "hw1")
    plan = Plan(intra_op_threads=1)
    assert cache.ensure(source, "digest", plan) is None
    signature = import_model(source, tmp_path / "tmp").signature
    backend = cache.backend(source, "digest", plan, signature)
    backend.load()
    scores = next(iter(backend.infer({"data_0": np.zeros((1, 3, 224, 224), np.float32)}).values()))
    assert scores.shape == (1, 1000, 1, 1)
