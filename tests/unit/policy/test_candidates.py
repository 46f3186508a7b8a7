from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.policy.candidates import (
    Variant,
    batch_sizes,
    enumerate_candidates,
    registry_variants,
    thread_counts,
)
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.quantization.verification_store import Verification, record_verification
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.plan import Provider

from .support import write_mlp


def _hardware(cores: int, providers: list[str] | None = None) -> HardwareProfile:
    return HardwareProfile(
        cpu_model="test", logical_cores=cores, online_cpus=cores, ort_providers=providers or ["CPUExecutionProvider"]
    )


def test_thread_counts_are_powers_of_two_up_to_cores() -> None:
    assert thread_counts(1) == [1]
    assert thread_counts(2) == [1, 2]
    assert thread_counts(6) == [1, 2, 4, 6]
    assert thread_counts(8) == [1, 2, 4, 8]


def test_batch_sizes_include_preferred_and_max() -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 12, "preferred_batch_sizes": [3]}})
    assert batch_sizes(contract, batchable=True) == [1, 2, 3, 4, 8, 12]
    assert batch_sizes(contract, batchable=False) == [1]


def test_candidates_cover_threads_and_batches(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate(
        {"batching": {"max_batch_size": 4, "max_queue_delay_ms": 3}, "objective": "throughput"}
    )
    record = registry.register("mlp", mlp_path, contract=contract)
    candidates = enumerate_candidates(record, contract, _hardware(2), [])
    assert len(candidates) == 3 * 3
    assert {(c.plan.intra_op_threads, c.plan.instances, c.plan.max_batch_size) for c in candidates} == {
        (t, n, b) for t, n in ((1, 1), (2, 1), (1, 2)) for b in (1, 2, 4)
    }
    assert {c.plan.lone_threads for c in candidates if c.plan.instances == 2} == {2}, "a lone request: all cores"
    assert {c.plan.lone_threads for c in candidates if c.plan.instances == 1} == {0}
    delays = {c.plan.max_batch_size: c.plan.max_queue_delay_ms for c in candidates}
    assert delays == {1: 0.0, 2: 3.0, 4: 3.0}
    assert all(c.variant.digest == record.digest and c.variant.drift == 0.0 for c in candidates)


def test_latency_objective_plans_are_work_conserving(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 4, "max_queue_delay_ms": 3}})
    assert contract.objective == "latency"
    record = registry.register("mlp", mlp_path, contract=contract)
    candidates = enumerate_candidates(record, contract, _hardware(1), [])
    assert {(c.plan.max_batch_size, c.plan.max_queue_delay_ms) for c in candidates} == {(1, 0.0), (2, 0.0), (4, 0.0)}


def test_fixed_batch_model_gets_only_batch_one(registry: ModelRegistry, tmp_path: Path) -> None:
    record = registry.register("fixed", write_mlp(tmp_path / "fixed.onnx", batch_dim=1))
    candidates = enumerate_candidates(record, InferenceContract(), _hardware(1), [])
    assert [c.plan.max_batch_size for c in candidates] == [1]


def test_gpu_providers_get_one_thread_setting(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 1}})
    record = registry.register("mlp", mlp_path, contract=contract)
    hardware = _hardware(4, ["CUDAExecutionProvider", "CPUExecutionProvider"])
    candidates = enumerate_candidates(record, contract, hardware, [])
    by_provider = {
        p: [(c.plan.intra_op_threads, c.plan.instances) for c in candidates if c.plan.provider is p] for p in Provider
    }
    assert by_provider[Provider.CPU] == [(1, 1), (2, 1), (4, 1), (1, 4), (2, 2)]
    assert by_provider[Provider.CUDA] == [(4, 1)]


def test_variants_multiply_candidates_with_their_precision(registry: ModelRegistry, mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"batching": {"max_batch_size": 1}})
    record = registry.register("mlp", mlp_path, contract=contract)
    int8 = Variant(version="1.1.0", digest="abc", precision=Precision.INT8, drift=0.004)
    candidates = enumerate_candidates(record, contract, _hardware(1), [int8])
    assert [(c.plan.precision, c.variant.version) for c in candidates] == [
        (Precision.FP32, "1.0.0"),
        (Precision.INT8, "1.1.0"),
    ]


def test_registry_variants_reads_verified_children(registry: ModelRegistry, tmp_path: Path) -> None:
    contract = InferenceContract.model_validate({"precision": {"allowed": ["fp32", "int8"]}})
    parent = registry.register("mlp", write_mlp(tmp_path / "a.onnx"), contract=contract)
    int8 = {"precision": "int8"}
    verified = registry.register("mlp", write_mlp(tmp_path / "b.onnx", width=16), parent=parent.version, tags=int8)
    unverified = registry.register("mlp", write_mlp(tmp_path / "c.onnx", width=8), parent=parent.version, tags=int8)
    failed = registry.register("mlp", write_mlp(tmp_path / "e.onnx", width=6), parent=parent.version, tags=int8)
    fp16 = registry.register(
        "mlp-fp16", write_mlp(tmp_path / "d.onnx", width=4), parent=parent.ref, tags={"precision": "fp16"}
    )
    now = datetime.now(UTC)

    def verification(drift: float, passed: bool, precision: str) -> Verification:
        return Verification(baseline=parent.version, precision=precision, rel_l2=drift, tolerance=0.01, passed=passed)

    record_verification(registry, "mlp", verified.version, verification(0.003, True, "int8"), now)
    record_verification(registry, "mlp", failed.version, verification(0.3, False, "int8"), now)
    record_verification(registry, "mlp-fp16", fp16.version, verification(0.001, True, "fp16"), now)
    variants = registry_variants(registry)(parent, contract)
    assert variants == [
        Variant(version=verified.version, digest=verified.digest, precision=Precision.INT8, drift=0.003)
    ]
    assert unverified.version not in {v.version for v in variants}
    assert failed.version not in {v.version for v in variants}  # only passing verifications count
    widened = contract.model_copy(
        update={"precision": contract.precision.model_copy(update={"allowed": list(Precision)})}
    )
    assert {v.precision for v in registry_variants(registry)(parent, widened)} == {Precision.INT8, Precision.FP16}
