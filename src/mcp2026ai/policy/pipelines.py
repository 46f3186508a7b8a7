"""Planning a pipeline: its contract split between its model steps, each step planned as one model.

Each model step is planned by the single-model policy (:class:`PolicyOrchestrator`, unchanged: its
candidates, interleaved measurements, selection and stored plan) against a contract derived from the
pipeline's, on a share of the machine's cores:

- **cores**: the steps of one request run one after another, but under concurrency each step runs
  beside the others, so the cores are split in proportion to each step's cost (its median lone run
  on one thread, measured first), rounded up: every step gets at least one, and a step that costs
  most of the whole gets the cores the cheap steps leave idle most of the time (the OCR detector,
  ~85 % of a page, gets both cores of two, not one of three "at least one each");
- **shapes**: each step is measured on inputs shaped like the ones it gets from an example request
  (``step_inputs``: ``mcp policy plan --input``, one request run through the pipeline first), else
  on synthetic ones (``--shape``, the model's preprocessing, or 32 for a dynamic dimension): a
  detector measured on 32x32 pixels costs a thousandth of a 736x736 page, and the split followed
  that;
- **latency**: the pipeline's p99 budget, less a reserve for the Python steps and the hops between
  steps (:data:`PYTHON_RESERVE` with Python steps, :data:`HOP_RESERVE` without), split between the
  model steps in the same proportion, each getting at least :data:`STEP_FLOOR_SHARE` of it;
- **throughput**, precision, accuracy, memory and SLA class: the pipeline's, for every step (each
  step must carry every request).

The result (per step: cores, budget, chosen plan, expected p99, throughput; and the end-to-end figures
measured at concurrency 4, when given) is kept with the pipeline version (annotation
:data:`PIPELINE_PLAN_ANNOTATION`) for ``mcp policy explain``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from mcp2026ai.contract import InferenceContract, LatencySpec
from mcp2026ai.policy.orchestrator import UNCONSTRAINED, PolicyOrchestrator
from mcp2026ai.policy.probe import HardwareProfile, probe_hardware
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.policy.records import Trigger
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import pipeline_model_steps, read_pipeline
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import Plan

PIPELINE_PLAN_ANNOTATION = "pipeline.plan"
PYTHON_RESERVE = 0.2
HOP_RESERVE = 0.05
CALIBRATION_RUNS = 5
ROUND_UP_FROM = 0.25
"""A step's share of the cores is rounded up when it exceeds a whole number by more than this: two
steps of equal cost, measured a few percent apart, get one core each, not two and one."""
STEP_FLOOR_SHARE = 0.05
"""The least share of the latency budget a model step gets: a step of a few ms among steps of a second
(the OCR direction classifier beside the detector) would otherwise get a budget of twice its lone run,
which the jitter of a busy machine alone exceeds, and no plan would meet it."""


class StepPlan(BaseModel):
    step: str
    model: str
    """The step's model version (``name:version``)."""
    cost_ms: float = Field(description="Median lone run on one thread, which set the step's share.")
    cores: int
    p99_budget_ms: float
    plan: str
    expected_p99_ms: float | None = None
    throughput_rps: float | None = None
    decision_id: str


class EndToEnd(BaseModel):
    """The served pipeline measured in process at ``concurrency`` with the steps' plans."""

    concurrency: int
    requests: int
    p50_ms: float
    p99_ms: float
    throughput_rps: float


class PipelinePlan(BaseModel):
    pipeline: str
    contract: InferenceContract
    cores: int
    python_steps: list[str]
    steps: list[StepPlan]
    end_to_end: EndToEnd | None = None
    decided_at: datetime


def shares(costs: dict[str, float], cores: int) -> dict[str, int]:
    """Cores per step in proportion to cost, rounded up past :data:`ROUND_UP_FROM` of a core (at least
    one each, at most all)."""
    total = sum(costs.values()) or 1.0
    exact = {step: cores * cost / total for step, cost in costs.items()}
    return {step: min(cores, max(1, math.ceil(value - ROUND_UP_FROM))) for step, value in exact.items()}


def step_shapes(shapes: SyntheticShapes, inputs: Mapping[str, Sequence[int]] | None) -> SyntheticShapes:
    """``shapes`` with one step's example input shapes as overrides (their batch dimension is the plan's)."""
    if not inputs:
        return shapes
    return shapes.model_copy(update={"overrides": {**shapes.overrides, **{k: list(v) for k, v in inputs.items()}}})


def latency_budgets(contract: InferenceContract, costs: dict[str, float], has_python: bool) -> dict[str, float]:
    """The p99 budget after the reserve, split by cost; a step whose share falls below
    :data:`STEP_FLOOR_SHARE` of it gets that floor, taken from the others in proportion."""
    reserve = PYTHON_RESERVE if has_python else HOP_RESERVE
    available = contract.latency.p99_ms * (1 - reserve)
    total = sum(costs.values()) or 1.0
    floor = available * min(STEP_FLOOR_SHARE, 1 / max(1, len(costs)))
    low = {step for step, cost in costs.items() if available * cost / total < floor}
    rest = available - floor * len(low)
    rest_cost = sum(cost for step, cost in costs.items() if step not in low) or 1.0
    return {step: floor if step in low else rest * cost / rest_cost for step, cost in costs.items()}


def step_contract(contract: InferenceContract, p99_ms: float) -> InferenceContract:
    p95 = contract.latency.p95_ms * p99_ms / contract.latency.p99_ms if contract.latency.p95_ms else None
    return contract.model_copy(update={"latency": LatencySpec(p99_ms=p99_ms, p95_ms=p95), "sequence": None})


def lone_cost_ms(registry: ModelRegistry, record: ModelVersion, shapes: SyntheticShapes) -> float:
    """Median of a few lone one-row runs on one thread (the step's relative cost)."""
    backend = create_backend(registry.artifact_path(record), record.signature, Plan(intra_op_threads=1))
    backend.load()
    try:
        inputs = synthetic_inputs(record.signature, 1, shapes, record.preprocessing)
        backend.infer(inputs)  # warm-up
        runs = []
        for _ in range(CALIBRATION_RUNS):
            started = time.perf_counter()
            backend.infer(inputs)
            runs.append((time.perf_counter() - started) * 1000)
        return max(statistics.median(runs), 0.001)
    finally:
        backend.unload()


def plan_pipeline(
    registry: ModelRegistry,
    record: ModelVersion,
    budget: ProfileBudget | None = None,
    shapes: SyntheticShapes | None = None,
    hardware: HardwareProfile | None = None,
    trigger: Trigger = "manual",
    step_inputs: Mapping[str, Mapping[str, Sequence[int]]] | None = None,
) -> PipelinePlan:
    """Plan every model step of a pipeline version (each stored as that model's plan); the split is returned.
    ``step_inputs``: per model step, the shapes of its inputs in an example request."""
    stored = read_pipeline(registry, record)
    contract = record.contract or UNCONSTRAINED
    shapes = shapes or SyntheticShapes()
    hardware = hardware or probe_hardware()
    steps = dict(pipeline_model_steps(registry, record))
    python_steps = [step.name for step in stored.steps if step.python is not None]
    own = {name: step_shapes(shapes, (step_inputs or {}).get(name)) for name in steps}
    costs = {name: lone_cost_ms(registry, step_record, own[name]) for name, step_record in steps.items()}
    cores = shares(costs, hardware.logical_cores)
    budgets = latency_budgets(contract, costs, bool(python_steps))
    planned = []
    for name, step_record in steps.items():
        share = hardware.model_copy(update={"logical_cores": cores[name]})
        orchestrator = PolicyOrchestrator(registry, hardware=share, budget=budget, shapes=own[name])
        decision = orchestrator.plan_for(
            step_record.model_copy(update={"contract": step_contract(contract, budgets[name])}), trigger
        )
        chosen = decision.chosen
        figures = chosen.figures if chosen is not None else None
        planned.append(
            StepPlan(
                step=name,
                model=step_record.ref,
                cost_ms=round(costs[name], 3),
                cores=cores[name],
                p99_budget_ms=round(budgets[name], 3),
                plan=chosen.plan.describe() if chosen is not None else "none",
                expected_p99_ms=chosen.expected_p99_ms if chosen is not None else None,
                throughput_rps=figures.throughput_rps if figures is not None else None,
                decision_id=decision.id,
            )
        )
    return PipelinePlan(
        pipeline=record.ref,
        contract=contract,
        cores=hardware.logical_cores,
        python_steps=python_steps,
        steps=planned,
        decided_at=datetime.now(UTC),
    )


def store_pipeline_plan(registry: ModelRegistry, record: ModelVersion, plan: PipelinePlan) -> None:
    payload = plan.model_dump(mode="json")
    registry.catalog.annotate(record.name, record.version, PIPELINE_PLAN_ANNOTATION, payload, datetime.now(UTC))


def stored_pipeline_plan(registry: ModelRegistry, record: ModelVersion) -> PipelinePlan | None:
    rows = registry.catalog.annotations(record.name, PIPELINE_PLAN_ANNOTATION, record.version)
    return PipelinePlan.model_validate(rows[-1][2]) if rows else None
