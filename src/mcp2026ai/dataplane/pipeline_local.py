"""A registered pipeline served in this process, without sockets: its steps loaded as a server loads
them (:class:`ServedModels`, each model step behind its own batching executor) and requests sent to
its :class:`PipelineExecutor` directly.

``mcp predict`` runs one request through it (steps on their stored plans, else the runtime's default),
``mcp policy plan`` first runs its example through it to learn the shape each model step is given
(what a detector sees depends on the image: no synthetic shape stands for it), then measures the
planned pipeline at concurrency 4 (dataplane/pipeline_measure.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane.pipelines import Arrays, PipelineExecutor, pipeline_executor
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.serving.artifacts import ArtifactBackends
from mcp2026ai.serving.executors import batching_executor
from mcp2026ai.serving.models import ServedModels

if TYPE_CHECKING:
    from mcp2026ai.policy.orchestrator import PolicyOrchestrator

DRAIN_TIMEOUT_S = 5.0
StepShapes = dict[str, dict[str, list[int]]]
"""Per model step: each of its inputs' shape, as the pipeline gave it."""


def sla_class_of(record: ModelVersion) -> SLAClass:
    return record.contract.sla_class if record.contract is not None else SLAClass.BEST_EFFORT


@asynccontextmanager
async def served_pipeline(
    registry: ModelRegistry, record: ModelVersion, planner: PolicyOrchestrator | None = None
) -> AsyncIterator[PipelineExecutor]:
    """The pipeline version loaded with its steps (with a planner: on their stored plans, else the
    runtime's default plan); everything is unloaded on leaving."""
    backends = ArtifactBackends(registry, planner=planner)
    models = ServedModels(registry, batching_executor, backends, DRAIN_TIMEOUT_S, pipeline_executor)
    try:
        served = await models.load(record.name, record.version)
        executor = served.executor
        if not isinstance(executor, PipelineExecutor):
            raise TypeError(f"{record.ref}: not a pipeline")
        yield executor
    finally:
        await models.unload_all()


async def run_pipeline(registry: ModelRegistry, record: ModelVersion, inputs: Mapping[str, np.ndarray]) -> Arrays:
    """One request through the pipeline, in process (its step models on the runtime's default plan)."""
    async with served_pipeline(registry, record) as executor:
        return await executor.submit(dict(inputs), None, sla_class=sla_class_of(record), deadline=None)


async def model_step_shapes(
    registry: ModelRegistry, record: ModelVersion, inputs: Mapping[str, np.ndarray]
) -> tuple[StepShapes, Arrays]:
    """The shape of every input each model step was given by one run of ``inputs``, and the answer."""
    seen: StepShapes = {}

    def observe(step: str, given: Arrays) -> None:
        seen[step] = {name: [int(dim) for dim in np.shape(array)] for name, array in given.items()}

    async with served_pipeline(registry, record) as executor:
        executor.observe_model_step = observe
        outputs = await executor.submit(dict(inputs), None, sla_class=sla_class_of(record), deadline=None)
    return seen, outputs
