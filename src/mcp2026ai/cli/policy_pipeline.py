"""``mcp policy plan|explain --model PIPELINE``: the pipeline's contract split between its model steps,
each step's plan, and the whole measured at concurrency 4 against the contract."""

from __future__ import annotations

import asyncio

import numpy as np

from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.cli.tensors_io import read_named_inputs, tensor_from_bytes
from mcp2026ai.dataplane.pipeline_local import model_step_shapes
from mcp2026ai.dataplane.pipeline_measure import measure_pipeline
from mcp2026ai.errors import InvalidArgumentError, InvalidInputError, NotFoundError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.pipelines import PipelinePlan, StepPlan, plan_pipeline, store_pipeline_plan, stored_pipeline_plan
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.policy.selection import fmt
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import pipeline_examples

STEP_COLUMNS = ["step", "model", "precision", "threads", "batch<=", "cores", "measured on", "cost ms"]
BUDGET_COLUMNS = ["step", "p99 budget ms", "exp p99 ms", "rows/s", "plan", "note"]
CONTRACT_COLUMNS = ["constraint", "contract", "measured (c=4)", "margin", "ok"]
"""The end-to-end run is at concurrency 4 (dataplane/pipeline_measure.py's default)."""


def example_inputs(
    signature: Signature, given: list[str], stored: dict[str, bytes], shapes: SyntheticShapes
) -> dict[str, np.ndarray] | None:
    """``NAME=FILE`` inputs (a BYTES input: the file's bytes as its one element; else a .npy array), else
    the examples the spec named (``stored``); the others synthetic. None when a BYTES input has neither
    (nothing sensible to invent)."""
    inputs = read_named_inputs(given, signature)
    for spec in signature.inputs:
        if spec.name in inputs:
            continue
        if spec.name in stored:
            inputs[spec.name] = tensor_from_bytes(spec, stored[spec.name], f"the spec's example for {spec.name!r}")
        elif spec.datatype == "BYTES":
            return None
        else:
            inputs |= synthetic_inputs(Signature(inputs=[spec], outputs=[]), 1, shapes)
    return inputs


def describe_example(given: list[str], stored: dict[str, bytes]) -> str:
    named = {text.partition("=")[0] for text in given}
    from_spec = [f"the spec's {name} example ({len(data)} bytes)" for name, data in stored.items() if name not in named]
    return ", ".join([*given, *from_spec]) or "synthetic inputs"


def plan(
    registry: ModelRegistry,
    record: ModelVersion,
    budget: ProfileBudget,
    shapes: SyntheticShapes,
    given: list[str],
    as_json: bool,
    measure_seconds: float = 20.0,
) -> None:
    """With example inputs: one run learns each model step's real input shapes, the steps are planned
    on them, and the planned whole is measured at c=4 (at most ``measure_seconds``)."""
    stored = pipeline_examples(registry, record)
    inputs = example_inputs(record.signature, given, stored, shapes)
    example = describe_example(given, stored)
    step_shapes = _step_shapes(registry, record, inputs, example) if inputs is not None else {}
    planned = plan_pipeline(registry, record, budget, shapes, step_shapes=step_shapes)
    if inputs is not None:
        end_to_end = asyncio.run(measure_pipeline(registry, record, inputs, seconds=measure_seconds))
        planned = planned.model_copy(update={"end_to_end": end_to_end, "example": example})
    store_pipeline_plan(registry, record, planned)
    if as_json:
        print_json(planned.model_dump(mode="json") | {"contract_rows": contract_rows(planned)})
        return
    show(planned)
    if inputs is None:
        console.print(
            "note: the model steps were measured on synthetic shapes; give --input NAME=FILE for each BYTES "
            "input (or name examples in the spec) to measure each step on what the pipeline gives it, and the "
            "whole end to end at c=4"
        )


def _step_shapes(
    registry: ModelRegistry, record: ModelVersion, inputs: dict[str, np.ndarray], example: str
) -> dict[str, dict[str, list[int]]]:
    """One run of the example (steps on the runtime's default plan): the shapes each model step got."""
    try:
        shapes, _ = asyncio.run(model_step_shapes(registry, record, inputs))
    except InvalidInputError as exc:
        raise InvalidArgumentError(f"example {example}: {exc}") from None
    return shapes


def explain(registry: ModelRegistry, record: ModelVersion, as_json: bool) -> None:
    planned = stored_pipeline_plan(registry, record)
    if planned is None:
        raise NotFoundError(f"{record.ref} has no pipeline plan; run `mcp policy plan --model {record.name}`")
    if as_json:
        print_json(planned.model_dump(mode="json") | {"contract_rows": contract_rows(planned)})
        return
    show(planned)


def show(planned: PipelinePlan) -> None:
    python = ", ".join(planned.python_steps) or "none"
    console.print(
        f"[bold]{planned.pipeline}[/]: {len(planned.steps)} model steps on {planned.cores} cores "
        f"(Python steps: {python}; planned {planned.decided_at:%Y-%m-%d %H:%M:%S} UTC; "
        f"measured on {planned.example or 'synthetic shapes'})",
        highlight=False,
    )
    print_table("plan per step", [step_row(step) for step in planned.steps], STEP_COLUMNS)
    print_table("latency budget per step", [budget_row(step) for step in planned.steps], BUDGET_COLUMNS)
    print_table("contract vs the pipeline measured end to end", contract_rows(planned), CONTRACT_COLUMNS)
    for row in contract_rows(planned):
        console.print(f"{row['constraint']}: {row['verdict']}", highlight=False)


def step_row(step: StepPlan) -> dict[str, str]:
    shapes = "; ".join(f"{name} {'x'.join(map(str, shape))}" for name, shape in step.input_shapes.items())
    return {
        "step": step.step,
        "model": step.model,
        "precision": "-" if step.precision is None else f"{step.runtime}/{step.precision}",
        "threads": "-" if step.threads is None else str(step.threads or "auto"),
        "batch<=": "-" if step.max_batch_size is None else str(step.max_batch_size),
        "cores": str(step.cores),
        "measured on": shapes or "synthetic",
        "cost ms": fmt(step.cost_ms),
    }


def budget_row(step: StepPlan) -> dict[str, str]:
    return {
        "step": step.step,
        "p99 budget ms": fmt(step.p99_budget_ms),
        "exp p99 ms": "-" if step.expected_p99_ms is None else fmt(step.expected_p99_ms),
        "rows/s": "-" if step.throughput_rps is None else fmt(step.throughput_rps),
        "plan": step.plan,
        "note": step.note,
    }


def contract_rows(planned: PipelinePlan) -> list[dict[str, str]]:
    """Each constraint against the end-to-end figures at c=4, with by how much it is met or missed."""
    measured = planned.end_to_end
    contract = planned.contract
    label = CONTRACT_COLUMNS[2]
    bound = contract.latency.p99_ms
    if measured is None:
        verdict = "not measured: give --input NAME=FILE to `mcp policy plan`"
        row = {"constraint": "latency.p99_ms", "contract": f"<= {fmt(bound)} ms", label: "not measured (--input)"}
        return [row | {"margin": "-", "ok": "?", "verdict": verdict}]
    p99, floor, rps = measured.p99_ms, contract.throughput.min_rps, measured.throughput_rps
    latency_met = p99 <= bound
    latency_margin = (
        f"{fmt(abs(bound - p99))} ms {'to spare' if latency_met else 'over'} ({fmt(p99 / bound)}x the bound)"
    )
    throughput_met = rps >= floor
    throughput_margin = f"{fmt(abs(rps - floor))} req/s {'above' if throughput_met else 'short'}"
    c = measured.concurrency
    return [
        {
            "constraint": "latency.p99_ms",
            "contract": f"<= {fmt(bound)} ms",
            label: f"{fmt(p99)} ms (p50 {fmt(measured.p50_ms)})",
            "margin": latency_margin,
            "ok": "yes" if latency_met else "NO",
            "verdict": f"{'met' if latency_met else 'MISSED'} at c={c}: p99 {fmt(p99)} ms against "
            f"{fmt(bound)} ms, {latency_margin}",
        },
        {
            "constraint": "throughput.min_rps",
            "contract": f">= {fmt(floor)} req/s",
            label: f"{fmt(rps)} req/s ({measured.requests} requests)",
            "margin": throughput_margin,
            "ok": "yes" if throughput_met else "NO",
            "verdict": f"{'met' if throughput_met else 'MISSED'} at c={c}: {fmt(rps)} req/s against "
            f"{fmt(floor)} req/s, {throughput_margin}",
        },
    ]
