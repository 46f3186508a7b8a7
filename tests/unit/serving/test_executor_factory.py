"""The batching executor a served version gets: the contract's limits, the measured plan's window and cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import BatchingConfig
from mcp2026ai.serving.artifacts import serving_default_plan
from mcp2026ai.serving.executors import batching_executor
from mcp2026ai.serving.overrides import ConfigOverride
from tests.support.models import mlp_model

CONTRACT = InferenceContract.model_validate({"batching": {"max_batch_size": 16, "max_queue_delay_ms": 3}})


@pytest.fixture()
def registry(tmp_path: Path) -> ModelRegistry:
    return ModelRegistry(tmp_path / "home")


def executor(
    registry: ModelRegistry, tmp_path: Path, plan: Plan, override: ConfigOverride | None = None
) -> BatchingConfig:
    record = registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"), contract=CONTRACT)
    backend = create_backend(registry.artifact_path(record), record.signature, plan)
    made = batching_executor(record, backend, ModelStats("mlp", "1"), override)
    assert isinstance(made, BatchingExecutor)
    return made.config


def test_a_batched_plan_caps_the_rows_merged(registry: ModelRegistry, tmp_path: Path) -> None:
    config = executor(registry, tmp_path, Plan(intra_op_threads=1, max_batch_size=4, max_queue_delay_ms=0))
    assert (config.max_batch_size, config.merge_rows, config.max_queue_delay_ms) == (16, 4, 0)


def test_a_batch_one_plan_still_merges_what_is_queued(registry: ModelRegistry, tmp_path: Path) -> None:
    config = executor(registry, tmp_path, Plan(intra_op_threads=1))
    assert (config.max_batch_size, config.merge_rows, config.max_queue_delay_ms) == (16, 16, 0)
    default = executor(registry, tmp_path, DEFAULT_PLAN)
    assert (default.merge_rows, default.max_queue_delay_ms) == (16, 3)


def test_a_configured_max_batch_replaces_the_plans_cap(registry: ModelRegistry, tmp_path: Path) -> None:
    plan = Plan(intra_op_threads=1, max_batch_size=4, max_queue_delay_ms=0)
    config = executor(registry, tmp_path, plan, ConfigOverride(max_batch_size=8))
    assert (config.max_batch_size, config.merge_rows) == (8, 8)


def test_a_multi_instance_plan_runs_that_many_batches_at_once(registry: ModelRegistry, tmp_path: Path) -> None:
    config = executor(registry, tmp_path, Plan(intra_op_threads=1, instances=2))
    assert config.max_concurrent_batches == 2
    assert executor(registry, tmp_path, Plan(intra_op_threads=2)).max_concurrent_batches == 1
    overridden = executor(registry, tmp_path, Plan(intra_op_threads=1, instances=2), ConfigOverride(instance_count=3))
    assert overridden.max_concurrent_batches == 3  # Triton's instance_group count given at load wins


def test_plans_whose_compute_is_not_on_the_calling_thread_never_run_inline(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    """The placement measures the CPU time of the thread calling infer: OpenVINO's THROUGHPUT streams
    compute on the plugin's threads (the caller only waits), and instances run side by side."""
    assert executor(registry, tmp_path, Plan(intra_op_threads=2)).inline_below_ms > 0
    streams = Plan(runtime="openvino", intra_op_threads=1, performance_hint="THROUGHPUT", streams=1)
    latency = Plan(runtime="openvino", intra_op_threads=2, performance_hint="LATENCY", streams=1)
    assert not streams.computes_on_caller and latency.computes_on_caller
    assert not Plan(intra_op_threads=1, instances=2).computes_on_caller
    pytest.importorskip("openvino", reason="the [openvino] extra")
    assert executor(registry, tmp_path, streams).inline_below_ms == 0
    assert executor(registry, tmp_path, Plan(intra_op_threads=1, instances=2)).inline_below_ms == 0


def test_the_serving_default_runs_instances_under_the_contracts_own_window(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    """Not measured, the serving default says nothing of batching: the contract's window and limit
    stand, and only its instances are added (batches run side by side)."""
    default = serving_default_plan(cores=2, lone_session=True)
    assert (default.intra_op_threads, default.instances, default.lone_threads, default.measured) == (1, 2, 2, False)
    config = executor(registry, tmp_path, default)
    assert (config.max_batch_size, config.merge_rows, config.max_queue_delay_ms) == (16, 16, 3)
    assert config.max_concurrent_batches == 2


def test_the_serving_default_is_onnxruntimes_own_unless_host_tuning_asks_for_instances() -> None:
    """One session by default (the weights held once: tests/integration/test_serving_memory.py); the
    lone-session plan (host tuning, opt-in) only where instances pay."""
    assert serving_default_plan(cores=4) == DEFAULT_PLAN and not DEFAULT_PLAN.lone_threads
    assert serving_default_plan(cores=1, lone_session=True) == DEFAULT_PLAN  # one core: nothing side by side
    openvino = serving_default_plan("openvino", cores=2, lone_session=True)  # its threads sleep when they wait
    assert openvino == DEFAULT_PLAN.model_copy(update={"runtime": "openvino"}) and not openvino.measured
    assert "threads=1 instances=4 lone=4" in serving_default_plan(cores=4, lone_session=True).describe()


def test_the_servers_bulk_nice_reaches_every_executor(registry: ModelRegistry, tmp_path: Path) -> None:
    """HostTuning.bulk_batch_nice (app.py hands it to the factory): None, the default, keeps every batch at
    normal priority."""
    record = registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"), contract=CONTRACT)
    backend = create_backend(registry.artifact_path(record), record.signature, DEFAULT_PLAN)
    for bulk_nice in (None, 5):
        made = batching_executor(record, backend, ModelStats("mlp", "1"), bulk_nice=bulk_nice)
        assert isinstance(made, BatchingExecutor) and made.config.bulk_nice == bulk_nice
    assert executor(registry, tmp_path, DEFAULT_PLAN).bulk_nice is None
