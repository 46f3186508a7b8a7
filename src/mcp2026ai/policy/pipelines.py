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

A step no plan keeps within its share is judged again on the same measurements against all the model
steps' budget, then with no latency bound (:func:`plan_step`): the share is the policy's split, the
contract the pipeline's end to end. With ``step_shapes`` (what the pipeline gave each model step for an
example: ``mcp policy plan`` learns them by running it once) each step is measured on those shapes.

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
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.candidates import Candidate
from mcp2026ai.policy.orchestrator import UNCONSTRAINED, PolicyOrchestrator
from mcp2026ai.policy.probe import HardwareProfile, probe_hardware
from mcp2026ai.policy.profiler import Measurement, ProfileBudget
from mcp2026ai.policy.records import Decision, Trigger
from mcp2026ai.policy.selection import NoFeasiblePlanError, fmt
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import pipeline_model_steps, read_pipeline
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import Plan

StepInputShapes = Mapping[str, Mapping[str, list[int]]]
"""Per model step, each input's shape as the pipeline's example gave it."""

PIPELINE_PLAN_ANNOTATION = "pipeline.plan"
PYTHON_RESERVE = 0.2
HOP_RESERVE = 0.05
CALIBRATION_RUNS = 5
NO_LATENCY_BOUND_MS = 3_600_000.0
"""A step that no plan keeps within the model steps' whole budget is given its fastest measured plan
(the pipeline's end-to-end figures then say by how much the contract is missed)."""
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
    runtime: str | None = None
    precision: str | None = None
    threads: int | None = Field(None, description="Intra-op threads (0: the runtime chooses).")
    max_batch_size: int | None = None
    expected_p99_ms: float | None = None
    throughput_rps: float | None = None
    input_shapes: dict[str, list[int]] = Field(
        default_factory=dict, description="The shapes the step was measured on, where the example gave them."
    )
    note: str = Field("", description="Set when no plan kept the step within its share of the latency budget.")
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
    example: str | None = Field(None, description="The example inputs the steps were measured on (None: synthetic).")
    end_to_end: EndToEnd | None = None
    decided_at: datetime


def shares(costs: dict[str, float], cores: int) -> dict[str, int]:
    """Cores per step in proportion to cost, rounded up past :data:`ROUND_UP_FROM` of a core (at least
    one each, at most all)."""
    total = sum(costs.values()) or 1.0
    exact = {step: cores * cost / total for step, cost in costs.items()}
    return {step: min(cores, max(1, math.ceil(value - ROUND_UP_FROM))) for step, value in exact.items()}


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


def with_step_shapes(shapes: SyntheticShapes, given: Mapping[str, list[int]]) -> SyntheticShapes:
    """``shapes`` with the step's own input shapes (from the pipeline's example) taking precedence."""
    return shapes.model_copy(update={"overrides": {**shapes.overrides, **{k: list(v) for k, v in given.items()}}})


def plan_pipeline(
    registry: ModelRegistry,
    record: ModelVersion,
    budget: ProfileBudget | None = None,
    shapes: SyntheticShapes | None = None,
    hardware: HardwareProfile | None = None,
    trigger: Trigger = "manual",
    step_shapes: StepInputShapes | None = None,
) -> PipelinePlan:
    """Plan every model step of a pipeline version (each stored as that model's plan); the split is returned.
    ``step_shapes``: each model step measured on the shapes the pipeline gave it for an example (else
    synthetic shapes)."""
    stored = read_pipeline(registry, record)
    contract = record.contract or UNCONSTRAINED
    shapes = shapes or SyntheticShapes()
    hardware = hardware or probe_hardware()
    steps = dict(pipeline_model_steps(registry, record))
    python_steps = [step.name for step in stored.steps if step.python is not None]
    given = step_shapes or {}
    own_shapes = {name: with_step_shapes(shapes, given.get(name, {})) for name in steps}
    costs = {name: lone_cost_ms(registry, step_record, own_shapes[name]) for name, step_record in steps.items()}
    cores = shares(costs, hardware.logical_cores)
    budgets = latency_budgets(contract, costs, bool(python_steps))
    available = sum(budgets.values())
    planned = []
    for name, step_record in steps.items():
        share = hardware.model_copy(update={"logical_cores": cores[name]})
        orchestrator = PolicyOrchestrator(registry, hardware=share, budget=budget, shapes=own_shapes[name])
        decision, note = plan_step(orchestrator, step_record, contract, budgets[name], available, trigger)
        chosen = decision.chosen
        assert chosen is not None
        figures, plan = chosen.figures, chosen.plan
        planned.append(
            StepPlan(
                step=name,
                model=step_record.ref,
                cost_ms=round(costs[name], 3),
                cores=cores[name],
                p99_budget_ms=round(budgets[name], 3),
                plan=plan.describe(),
                runtime=plan.runtime,
                precision=plan.precision.value,
                threads=plan.intra_op_threads,
                max_batch_size=plan.max_batch_size,
                expected_p99_ms=chosen.expected_p99_ms,
                throughput_rps=figures.throughput_rps if figures is not None else None,
                input_shapes={k: list(v) for k, v in given.get(name, {}).items()},
                note=note,
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


def plan_step(
    orchestrator: PolicyOrchestrator,
    record: ModelVersion,
    contract: InferenceContract,
    share_ms: float,
    available_ms: float,
    trigger: Trigger,
) -> tuple[Decision, str]:
    """The step planned within its share of the latency budget; where no plan keeps that, the same
    measurements are judged again against all the model steps' budget, then against none (its fastest
    plan): a step's share is the policy's split, the contract is the pipeline's end to end."""
    measured: dict[Candidate, Measurement] = {}
    profile = orchestrator.measurer

    def remembering(version: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        found = profile(version, candidates)
        measured.update(found)
        return found

    def again(version: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        return {candidate: measured[candidate] for candidate in candidates if candidate in measured}

    orchestrator.measurer = remembering
    own = record.model_copy(update={"contract": step_contract(contract, share_ms)})
    try:
        return orchestrator.plan_for(own, trigger), ""
    except NoFeasiblePlanError as exc:
        missed = exc
    if all(measurement.figures is None for measurement in measured.values()):
        seconds = orchestrator.budget.total_seconds
        raise InvalidArgumentError(
            f"{missed}; no plan of {record.ref} was measured in {seconds:g} s: raise --total-seconds"
        )
    orchestrator.measurer = again
    for bound_ms in (available_ms, NO_LATENCY_BOUND_MS):
        relaxed = record.model_copy(update={"contract": step_contract(contract, bound_ms)})
        try:
            decision = orchestrator.plan_for(relaxed, trigger)
        except NoFeasiblePlanError:
            continue
        against = "its fastest plan" if bound_ms == NO_LATENCY_BOUND_MS else f"all model steps' {fmt(bound_ms)} ms"
        return decision, f"no plan within its share ({fmt(share_ms)} ms): planned against {against}"
    raise missed


def store_pipeline_plan(registry: ModelRegistry, record: ModelVersion, plan: PipelinePlan) -> None:
    payload = plan.model_dump(mode="json")
    registry.catalog.annotate(record.name, record.version, PIPELINE_PLAN_ANNOTATION, payload, datetime.now(UTC))


def stored_pipeline_plan(registry: ModelRegistry, record: ModelVersion) -> PipelinePlan | None:
    rows = registry.catalog.annotations(record.name, PIPELINE_PLAN_ANNOTATION, record.version)
    return PipelinePlan.model_validate(rows[-1][2]) if rows else None
