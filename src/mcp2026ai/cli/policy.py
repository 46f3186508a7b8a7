"""``mcp probe`` and ``mcp policy plan|trace|explain``: the hardware, the plan, and why."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from mcp2026ai.cli import context, policy_generation, policy_pipeline
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.cli.policy_views import (
    CANDIDATE_COLUMNS,
    CONSTRAINT_COLUMNS,
    DECISION_COLUMNS,
    PARETO_COLUMNS,
    ROUND_COLUMNS,
    candidate_rows,
    constraint_rows,
    decision_row,
    hardware_rows,
    pareto_rows,
    round_rows,
    when,
)
from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.policy.generation import OUTPUT_TOKENS, PREFILL_RUNS, MeasurementBudget
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.pareto import ParetoPoint, pareto_points
from mcp2026ai.policy.probe import probe_hardware
from mcp2026ai.policy.profiler import ProfileBudget
from mcp2026ai.policy.records import Decision
from mcp2026ai.policy.selection import NoFeasiblePlanError, fmt
from mcp2026ai.policy.synthetic import SyntheticShapes, parse_shape_override
from mcp2026ai.policy.trace import parse_duration
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.pipelines import is_pipeline

app = typer.Typer(
    help="Execution plans: measure against the contract, trace and explain decisions.", no_args_is_help=True
)

ModelOption = Annotated[str, typer.Option("--model", help="Model name.")]
VersionOption = Annotated[str | None, typer.Option(help="Version; the default version if omitted.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def probe(as_json: JsonOption = False) -> None:
    """Print the hardware the policy plans for: CPU, ISA flags, NUMA, memory, providers, GPUs."""
    profile = probe_hardware()
    if as_json:
        print_json(profile.model_dump(mode="json") | {"providers": [p.value for p in profile.providers]})
        return
    print_table("hardware", hardware_rows(profile), ["property", "value"])


@app.command("plan")
def plan_command(
    model: ModelOption,
    version: VersionOption = None,
    seconds_per_plan: Annotated[float, typer.Option(help="Profiling time per plan, seconds.")] = 1.0,
    total_seconds: Annotated[float, typer.Option(help="Profiling time for all plans, seconds.")] = 15.0,
    shape: Annotated[list[str] | None, typer.Option(help="Synthetic input shape NAME=D1xD2...; repeatable.")] = None,
    input_file: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            help="Pipelines: NAME=FILE, an example input to measure the whole at c=4 (BYTES: the file's bytes; "
            "else a .npy array); repeatable.",
        ),
    ] = None,
    measure_seconds: Annotated[
        float,
        typer.Option(
            min=1.0, max=600.0, help="Pipelines: at most this long for the end-to-end run at c=4 (and 200 requests)."
        ),
    ] = 20.0,
    generation_tokens: Annotated[
        int | None,
        typer.Option(
            min=4, max=256, help=f"Language models: greedy tokens per measured request (default {OUTPUT_TOKENS})."
        ),
    ] = None,
    prefill_runs: Annotated[
        int | None,
        typer.Option(min=1, max=10, help=f"Language models: timed prompt runs per candidate (default {PREFILL_RUNS})."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Measure every candidate plan now, pick one against the contract and store it (a pipeline: each model
    step on its share of the cores and of the latency budget)."""
    registry = context.registry()
    record = registry.resolve(model, version)
    given = {"output_tokens": generation_tokens, "prefill_runs": prefill_runs}
    measurement = MeasurementBudget(**{field: value for field, value in given.items() if value is not None})
    if is_llm_format(record.format):
        policy_generation.plan(registry, record, as_json, measurement)
        return
    if generation_tokens is not None or prefill_runs is not None:
        raise InvalidArgumentError(
            f"--generation-tokens and --prefill-runs apply to language models; {record.ref} is not one"
        )
    budget = ProfileBudget(seconds_per_plan=seconds_per_plan, total_seconds=total_seconds)
    shapes = SyntheticShapes(overrides=dict(parse_shape_override(text) for text in shape or []))
    if is_pipeline(record):
        policy_pipeline.plan(registry, record, budget, shapes, input_file or [], as_json, measure_seconds)
        return
    orchestrator = PolicyOrchestrator(registry, budget=budget, shapes=shapes)
    try:
        decision = orchestrator.plan_for(record, trigger="manual")
    except NoFeasiblePlanError as exc:
        if not as_json:
            print_table(
                f"candidates for {record.ref}", candidate_rows(exc.evaluations, None, record.version), CANDIDATE_COLUMNS
            )
        raise
    if as_json:
        print_json(decision.model_dump(mode="json"))
        return
    _print_decision(decision)


@app.command()
def trace(
    model: ModelOption,
    last: Annotated[str | None, typer.Option(help="Only decisions this recent: 30s, 5m, 1h, 2d.")] = None,
    version: Annotated[str | None, typer.Option(help="Only this version.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List planning decisions: time, trigger, candidates with figures, chosen plan, reason."""
    if not context.remote():
        registry = context.registry()
        registry.versions(model)  # NotFoundError for an unknown model
        if is_llm_format(registry.resolve(model).format):
            since = datetime.now(UTC) - parse_duration(last) if last else None
            policy_generation.trace(registry, model, version, as_json, since)
            return
    decisions = context.management().trace(model, last, version)
    if as_json:
        print_json([decision.model_dump(mode="json") for decision in decisions])
        return
    window = f" in the last {last}" if last else ""
    if not decisions:
        console.print(f"no policy decisions for {model}{window}")
        return
    print_table(f"policy decisions for {model}{window}", [decision_row(d) for d in decisions], DECISION_COLUMNS)
    for decision in decisions:
        _print_decision(decision)


@app.command()
def explain(model: ModelOption, version: VersionOption = None, as_json: JsonOption = False) -> None:
    """Why the current plan: each contract constraint against the plan's measured figures, the Pareto
    front (latency, throughput, memory) of the measured plans, and the rounds the plan was measured in."""
    if not context.remote():
        registry = context.registry()
        record = registry.resolve(model, version)
        if is_llm_format(record.format):
            policy_generation.explain(registry, record, as_json)
            return
        if is_pipeline(record):
            policy_pipeline.explain(registry, record, as_json)
            return
    explained = context.management().explanation(model, version)
    record, stored, contract, decisions = explained.record, explained.stored, explained.contract, explained.decisions
    made = [d for d in decisions if stored is not None and d.id == stored.decision_id]
    last = made[-1] if made else (decisions[-1] if decisions else None)
    if stored is None:
        detail = f": the last decision ({when(last.time)}) found none: {last.reason}" if last else ""
        raise NotFoundError(f"{record.ref} has no stored plan{detail}; run `mcp policy plan --model {record.name}`")
    rows = constraint_rows(contract, stored)
    points = pareto_points(contract.objective, last.evaluations, last.chosen) if last else []
    if as_json:
        front = [pareto_json(point) for point in points]
        print_json({"model": record.ref, "plan": stored.model_dump(mode="json"), "constraints": rows, "pareto": front})
        return
    console.print(
        f"[bold]{record.ref}[/] runs [bold]{stored.plan.describe()}[/] on variant {stored.variant.label()} "
        f"(decided {when(stored.decided_at)} by {stored.trigger}, decision {stored.decision_id})"
    )
    print_table(f"contract ({contract.objective} objective) vs plan", rows, CONSTRAINT_COLUMNS)
    if last is not None:
        console.print(f"reason: {last.reason}", highlight=False)
        runner_up = _runner_up(last)
        if runner_up:
            console.print(f"runner-up: {runner_up}", highlight=False)
        measured = sum(1 for e in last.evaluations if e.figures is not None)
        title = f"Pareto front of {measured} measured plans (p99 at full batch, rows/s, MiB); * = taken"
        print_table(title, pareto_rows(points, record.version), PARETO_COLUMNS)
    if stored.figures is not None and stored.figures.rounds:
        print_table(
            "rounds the plan was measured in (interleaved with the others)", round_rows(stored.figures), ROUND_COLUMNS
        )
    if stored.optimized_model:
        console.print(f"optimized model cached at {stored.optimized_model}", highlight=False)


def pareto_json(point: ParetoPoint) -> dict[str, object]:
    fields = {"p99_ms", "throughput_rps", "memory_mb", "on_front", "chosen", "why"}
    return point.model_dump(mode="json", include=fields) | {"plan": point.evaluation.plan.model_dump(mode="json")}


def _runner_up(decision: Decision) -> str:
    chosen = decision.chosen
    others = [e for e in decision.evaluations if e.feasible and (chosen is None or e.candidate != chosen.candidate)]
    if not others:
        return ""
    best = min(others, key=lambda e: e.expected_p99_ms or 0.0)
    figures = best.figures
    assert figures is not None
    return (
        f"{best.candidate.describe()} (p99 {fmt(best.expected_p99_ms or 0.0)} ms, {fmt(figures.throughput_rps)} rows/s)"
    )


def _print_decision(decision: Decision) -> None:
    title = f"{decision.ref} {when(decision.time)} trigger={decision.trigger} id={decision.id}"
    print_table(title, candidate_rows(decision.evaluations, decision.chosen, decision.version), CANDIDATE_COLUMNS)
    chosen = decision.chosen.candidate.describe() if decision.chosen else "none"
    console.print(f"chosen: [bold]{chosen}[/]", highlight=False)
    console.print(f"reason: {decision.reason}", highlight=False)
