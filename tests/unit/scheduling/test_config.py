"""BatchingConfig: defaults, validation, and derivation from a contract and a signature."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp2026ai.contract import SLAClass, parse_contract
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.scheduling.config import BatchingConfig, ClassPolicy

BATCHABLE = Signature(
    inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 3, -1, -1])],
    outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1, 2])],
)
FIXED = Signature(
    inputs=[TensorSpec(name="x", datatype="FP32", shape=[1, 8])],
    outputs=[TensorSpec(name="y", datatype="FP32", shape=[1, 4])],
)


def test_class_defaults() -> None:
    classes = BatchingConfig().classes
    assert {cls: policy.weight for cls, policy in classes.items()} == {
        SLAClass.LATENCY_CRITICAL: 5.0,
        SLAClass.THROUGHPUT_GUARANTEED: 3.0,
        SLAClass.BEST_EFFORT: 1.0,
    }
    assert classes[SLAClass.LATENCY_CRITICAL].deadline_ms == 50.0
    assert classes[SLAClass.THROUGHPUT_GUARANTEED].deadline_ms == 2000.0
    assert classes[SLAClass.BEST_EFFORT].deadline_ms is None


def test_from_contract_takes_the_batching_section() -> None:
    contract = parse_contract(
        {"batching": {"max_batch_size": 16, "max_queue_delay_ms": 5, "preferred_batch_sizes": [4, 8]}}
    )
    config = BatchingConfig.from_contract(contract, BATCHABLE)
    assert (config.max_batch_size, config.max_queue_delay_ms, config.preferred_batch_sizes) == (16, 5.0, [4, 8])
    assert config.batching


def test_without_a_contract_the_contract_defaults_apply() -> None:
    config = BatchingConfig.from_contract(None, BATCHABLE)
    assert (config.max_batch_size, config.max_queue_delay_ms) == (32, 2.0)
    assert config.adaptive.high_p99_ms == 200.0


def test_a_signature_without_a_dynamic_batch_dimension_disables_batching() -> None:
    contract = parse_contract({"batching": {"max_batch_size": 16}})
    config = BatchingConfig.from_contract(contract, FIXED)
    assert (config.batch_dim, config.max_batch_size, config.batching) == (False, 1, False)


def test_the_contract_latency_budget_sets_the_adaptive_thresholds() -> None:
    contract = parse_contract({"latency": {"p99_ms": 50}})
    adaptive = BatchingConfig.from_contract(contract, BATCHABLE).adaptive
    assert (adaptive.high_p99_ms, adaptive.low_p99_ms) == (50.0, 20.0)
    assert adaptive.high_backlog == 1000


def test_preferred_sizes_must_fit_max_batch_size() -> None:
    with pytest.raises(ValidationError, match=r"preferred_batch_sizes \[64\] must lie in 1..max_batch_size \(8\)"):
        BatchingConfig(max_batch_size=8, preferred_batch_sizes=[4, 64])


def test_every_class_needs_a_policy() -> None:
    with pytest.raises(ValidationError, match="no policy for"):
        BatchingConfig(classes={SLAClass.BEST_EFFORT: ClassPolicy(weight=1.0)})


def test_weights_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="greater than 0"):
        ClassPolicy(weight=0.0)


def test_no_batch_dimension_means_batches_of_one() -> None:
    with pytest.raises(ValidationError, match="max_batch_size must be 1 without a batch dimension"):
        BatchingConfig(batch_dim=False, max_batch_size=4)
