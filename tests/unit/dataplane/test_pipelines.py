"""The pipeline executor in process, over real ONNX steps and Python steps: waves, deadlines, a step's
bad answer named, per-step spans, and draining on stop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane.pipelines import pipeline_executor
from mcp2026ai.errors import DeadlineExceededError, InferenceFailedError, ModelNotReadyError
from mcp2026ai.observability import tracing
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import register_pipeline
from mcp2026ai.runtime.python_code import check_python_source
from mcp2026ai.serving.executors import batching_executor, direct_executor
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.served_model import ServedModel
from support.pipelines import STEPS, write_pipeline

TEXT = np.array([b"1,2,3,4"], dtype=np.object_)


async def served(tmp_path: Path, steps: str = STEPS) -> tuple[ServedModels, ServedModel]:
    registry = ModelRegistry(tmp_path / "home")
    register_pipeline(registry, write_pipeline(tmp_path / "p", steps=steps), check_python_source)
    models = ServedModels(registry, batching_executor, drain_timeout_s=5, pipeline_executor=pipeline_executor)
    return models, await models.load("calc")


async def submit(pipeline: ServedModel, deadline: float | None = None) -> dict[str, np.ndarray]:
    return await pipeline.executor.submit({"text": TEXT}, None, sla_class=SLAClass.BEST_EFFORT, deadline=deadline)


@pytest.fixture()
def spans() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_tracer_provider(provider)
    yield memory
    tracing.use_tracer_provider(None)
    provider.shutdown()


def test_loading_the_pipeline_loads_its_model_steps(tmp_path: Path) -> None:
    asyncio.run(_loading_the_pipeline_loads_its_model_steps(tmp_path))


async def _loading_the_pipeline_loads_its_model_steps(tmp_path: Path) -> None:
    models, pipeline = await served(tmp_path)
    assert models.loaded_names() == ["calc", "calc.double", "calc.shift"]
    assert pipeline.backend.platform == "ensemble"
    outputs = await submit(pipeline)
    np.testing.assert_allclose(outputs["total"], [[4, 7, 10, 13]])
    assert models.step_versions("calc.double") == {"1.0.0"}  # what the registry sync keeps loaded
    assert models.step_versions("calc") == set()
    await models.unload_all()


def test_a_passed_deadline_names_the_next_step(tmp_path: Path) -> None:
    asyncio.run(_a_passed_deadline_names_the_next_step(tmp_path))


async def _a_passed_deadline_names_the_next_step(tmp_path: Path) -> None:
    models, pipeline = await served(tmp_path)
    with pytest.raises(DeadlineExceededError, match="deadline passed before step 'parse'"):
        await submit(pipeline, deadline=time.monotonic() - 1)
    await models.unload_all()


def test_a_python_step_running_past_the_deadline_is_answered(tmp_path: Path) -> None:
    asyncio.run(_a_python_step_running_past_the_deadline_is_answered(tmp_path))


async def _a_python_step_running_past_the_deadline_is_answered(tmp_path: Path) -> None:
    models, pipeline = await served(tmp_path)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="pipeline step 'parse': deadline passed while it ran"):
        await pipeline.executor.submit(
            {"text": np.array([b"slow"], dtype=np.object_)},
            None,
            sla_class=SLAClass.BEST_EFFORT,
            deadline=started + 0.2,
        )
    assert time.monotonic() - started < 0.9  # answered at the deadline, not when the step returned
    await asyncio.sleep(1.0)  # the step's thread finishes its call
    await models.unload_all()


def test_a_step_answering_without_an_output_is_a_500_naming_it(tmp_path: Path) -> None:
    asyncio.run(_a_step_answering_without_an_output_is_a_500_naming_it(tmp_path))


async def _a_step_answering_without_an_output_is_a_500_naming_it(tmp_path: Path) -> None:
    broken = STEPS.replace('return {"total": batch["a"] + batch["b"]}', 'return {"sum": batch["a"]}')
    models, pipeline = await served(tmp_path, broken)
    with pytest.raises(InferenceFailedError, match="pipeline step 'join': output 'total' is nothing"):
        await submit(pipeline)
    assert pipeline.stats.as_dict()["steps"][3]["fail"]["count"] == 1
    await models.unload_all()


def test_an_output_of_another_datatype_is_a_500_naming_its_step(tmp_path: Path) -> None:
    asyncio.run(_an_output_of_another_datatype_is_a_500_naming_its_step(tmp_path))


async def _an_output_of_another_datatype_is_a_500_naming_its_step(tmp_path: Path) -> None:
    wrong = STEPS.replace(
        'return {"total": batch["a"] + batch["b"]}', 'return {"total": (batch["a"] + 1).astype("float64")}'
    )
    models, pipeline = await served(tmp_path, wrong)
    with pytest.raises(
        InferenceFailedError, match="pipeline step 'join': output 'total' is FP64, the pipeline declares FP32"
    ):
        await submit(pipeline)
    await models.unload_all()


def test_each_step_has_its_span(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    asyncio.run(_each_step_has_its_span(tmp_path, spans))


async def _each_step_has_its_span(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    models, pipeline = await served(tmp_path)
    await submit(pipeline)
    steps = {span.name: span for span in spans.get_finished_spans() if span.name.startswith("step ")}
    assert sorted(steps) == ["step double", "step join", "step parse", "step shift"]
    attributes = steps["step double"].attributes or {}
    assert attributes["pipeline"] == "calc" and attributes["step.runs"] == "model calc.double:1.0.0"
    assert int(attributes["step.compute_ns"]) > 0  # type: ignore[arg-type]
    await models.unload_all()


def test_stop_drains_then_refuses(tmp_path: Path) -> None:
    asyncio.run(_stop_drains_then_refuses(tmp_path))


async def _stop_drains_then_refuses(tmp_path: Path) -> None:
    models, pipeline = await served(tmp_path)
    running = asyncio.create_task(submit(pipeline))
    await asyncio.sleep(0)
    await pipeline.executor.stop(5)
    np.testing.assert_allclose((await running)["doubled"], [[2, 4, 6, 8]])
    with pytest.raises(ModelNotReadyError, match="not accepting"):
        await submit(pipeline)
    await models.unload_all()


def test_a_server_without_a_pipeline_runner_refuses_it(tmp_path: Path) -> None:
    asyncio.run(_a_server_without_a_pipeline_runner_refuses_it(tmp_path))


async def _a_server_without_a_pipeline_runner_refuses_it(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    models = ServedModels(registry, direct_executor)
    with pytest.raises(ModelNotReadyError, match="does not run pipelines"):
        await models.load("calc")
    await models.unload_all()
