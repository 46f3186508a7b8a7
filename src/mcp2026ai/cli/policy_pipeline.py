"""``mcp policy plan|explain --model PIPELINE``: the pipeline's contract split between its model steps,
each step's plan, and the whole measured at concurrency 4 against the contract."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.dataplane.pipeline_measure import measure_pipeline, step_input_shapes
from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.ir.dtypes import V2_TO_NUMPY
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.pipelines import PipelinePlan, StepPlan, plan_pipeline, store_pipeline_plan, stored_pipeline_plan
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.policy.selection import fmt
from mcp2026ai.policy.synthetic import SyntheticShapes, synthetic_inputs
from mcp2026ai.registry import ModelRegistry, ModelVersion

STEP_COLUMNS = ["step", "model", "cost ms", "cores", "p99 budget ms", "plan", "exp p99 ms", "rows/s"]
CONTRACT_COLUMNS = ["constraint", "contract", "measured (c=4)", "ok"]
"""The end-to-end run is at concurrency 4 (dataplane/pipeline_measure.py's default)."""
MAX_INPUT_BYTES = 64 * 1024 * 1024


def example_inputs(signature: Signature, given: list[str], shapes: SyntheticShapes) -> dict[str, np.ndarray] | None:
    """``NAME=FILE`` inputs (a BYTES input: the file's bytes as its one element; else a .npy array);
    the others synthetic. None when a BYTES input is not given (nothing sensible to invent)."""
    files: dict[str, Path] = {}
    for text in given:
        name, sep, location = text.partition("=")
        if not sep or signature.input(name) is None:
            known = [spec.name for spec in signature.inputs]
            raise InvalidArgumentError(f"--input {text!r}: expected NAME=FILE with NAME one of {known}")
        files[name] = Path(location)
    inputs: dict[str, np.ndarray] = {}
    for spec in signature.inputs:
        found = files.get(spec.name)
        if found is None:
            if spec.datatype == "BYTES":
                return None
            inputs |= synthetic_inputs(Signature(inputs=[spec], outputs=[]), 1, shapes)
            continue
        path = found
        if not path.is_file() or path.stat().st_size > MAX_INPUT_BYTES:
            raise InvalidArgumentError(f"--input {spec.name}={path}: not a file of at most {MAX_INPUT_BYTES} bytes")
        shape = [1 if dim == -1 else dim for dim in spec.shape]
        if spec.datatype == "BYTES":
            inputs[spec.name] = np.array([path.read_bytes()], dtype=np.object_).reshape(shape)
        else:
            inputs[spec.name] = np.load(path, allow_pickle=False).astype(V2_TO_NUMPY[spec.datatype])
    return inputs


def plan(
    registry: ModelRegistry,
    record: ModelVersion,
    budget: ProfileBudget,
    shapes: SyntheticShapes,
    given: list[str],
    as_json: bool,
) -> None:
    inputs = example_inputs(record.signature, given, shapes)
    step_inputs = asyncio.run(step_input_shapes(registry, record, inputs)) if inputs is not None else None
    planned = plan_pipeline(registry, record, budget, shapes, step_inputs=step_inputs)
    if inputs is not None:
        end_to_end = asyncio.run(measure_pipeline(registry, record, inputs))
        planned = planned.model_copy(update={"end_to_end": end_to_end})
    store_pipeline_plan(registry, record, planned)
    if as_json:
        print_json(planned.model_dump(mode="json"))
        return
    show(planned)
    if inputs is None:
        console.print("note: give --input NAME=FILE for each BYTES input to measure the pipeline end to end at c=4")


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
        f"(Python steps: {python}; planned {planned.decided_at:%Y-%m-%d %H:%M:%S} UTC)",
        highlight=False,
    )
    print_table("plan per step", [step_row(step) for step in planned.steps], STEP_COLUMNS)
    print_table("contract vs the pipeline measured end to end", contract_rows(planned), CONTRACT_COLUMNS)


def step_row(step: StepPlan) -> dict[str, str]:
    return {
        "step": step.step,
        "model": step.model,
        "cost ms": fmt(step.cost_ms),
        "cores": str(step.cores),
        "p99 budget ms": fmt(step.p99_budget_ms),
        "plan": step.plan,
        "exp p99 ms": "-" if step.expected_p99_ms is None else fmt(step.expected_p99_ms),
        "rows/s": "-" if step.throughput_rps is None else fmt(step.throughput_rps),
    }


def contract_rows(planned: PipelinePlan) -> list[dict[str, str]]:
    measured = planned.end_to_end
    contract = planned.contract
    label = CONTRACT_COLUMNS[2]
    if measured is None:
        bound = f"<= {fmt(contract.latency.p99_ms)} ms"
        return [{"constraint": "latency.p99_ms", "contract": bound, label: "not measured (--input)", "ok": "?"}]
    return [
        {
            "constraint": "latency.p99_ms",
            "contract": f"<= {fmt(contract.latency.p99_ms)} ms",
            label: f"{fmt(measured.p99_ms)} ms (p50 {fmt(measured.p50_ms)})",
            "ok": "yes" if measured.p99_ms <= contract.latency.p99_ms else "NO",
        },
        {
            "constraint": "throughput.min_rps",
            "contract": f">= {fmt(contract.throughput.min_rps)} req/s",
            label: f"{fmt(measured.throughput_rps)} req/s ({measured.requests} requests)",
            "ok": "yes" if measured.throughput_rps >= contract.throughput.min_rps else "NO",
        },
    ]
