"""`mcp policy plan / trace / explain` for language models (generation/planning.py)."""

from __future__ import annotations

from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.errors import MCPError
from mcp2026ai.generation.planning import (
    GenerationDecision,
    GenerationEvaluation,
    decisions,
    last_decision,
    plan_generation,
)
from mcp2026ai.registry import ModelRegistry, ModelVersion

COLUMNS = ["plan", "TTFT p99 ms", "ITL p99 ms", "tokens/s", "feasible", "why not"]


class NoFeasibleGenerationPlanError(MCPError):
    """No candidate met the contract (the CLI exits 1 after printing the table)."""


def _row(evaluation: GenerationEvaluation, chosen: GenerationEvaluation | None) -> dict[str, object]:
    mark = " (chosen)" if chosen is not None and evaluation.plan == chosen.plan else ""
    return {
        "plan": evaluation.plan.describe() + mark,
        "TTFT p99 ms": f"{evaluation.ttft_p99_ms:.0f}",
        "ITL p99 ms": f"{evaluation.itl_p99_ms:.1f}",
        "tokens/s": f"{evaluation.tokens_per_s:.0f}",
        "feasible": "yes" if evaluation.feasible else "no",
        "why not": "; ".join(evaluation.violations),
    }


def print_decision(decision: GenerationDecision) -> None:
    rows = [_row(evaluation, decision.chosen) for evaluation in decision.evaluations]
    print_table(f"generation plans for {decision.model}:{decision.version} ({decision.precision})", rows, COLUMNS)
    if decision.drift is not None:
        console.print(
            f"accuracy: token agreement {1 - decision.drift:.1%} with {decision.reference} (drift {decision.drift:.3f})"
        )
    console.print(f"decided {decision.time:%Y-%m-%d %H:%M:%S} in {decision.planning_s:.0f} s: {decision.reason}")


def plan(registry: ModelRegistry, record: ModelVersion, as_json: bool) -> None:
    decision = plan_generation(registry, record)
    if as_json:
        print_json(decision.model_dump(mode="json"))
    else:
        print_decision(decision)
    if decision.chosen is None:
        raise NoFeasibleGenerationPlanError(f"{record.ref}: {decision.reason}")


def trace(registry: ModelRegistry, name: str, version: str | None, as_json: bool) -> None:
    found = decisions(registry, name, version)
    if as_json:
        print_json([decision.model_dump(mode="json") for decision in found])
        return
    if not found:
        console.print(f"no generation plans for {name}")
    for decision in found:
        print_decision(decision)


def explain(registry: ModelRegistry, record: ModelVersion, as_json: bool) -> None:
    decision = last_decision(registry, record)
    if as_json:
        print_json(decision.model_dump(mode="json"))
        return
    if decision.chosen is None:
        console.print(f"{record.ref} has no feasible generation plan: {decision.reason}")
    else:
        chosen = decision.chosen
        console.print(f"[bold]{record.ref}[/] runs [bold]{chosen.plan.describe()}[/]: {decision.reason}")
        spec = record.contract.generation if record.contract else None
        for label, figure, bound, lower_is_better in (
            ("TTFT p99 ms", chosen.ttft_p99_ms, spec.ttft_p99_ms if spec else None, True),
            ("ITL p99 ms", chosen.itl_p99_ms, spec.itl_p99_ms if spec else None, True),
            ("tokens/s", chosen.tokens_per_s, spec.min_tokens_per_s if spec else None, False),
        ):
            promise = "not set" if bound is None else (f"<= {bound:g}" if lower_is_better else f">= {bound:g}")
            console.print(f"  {label}: {figure:.1f} (contract {promise})")
    print_decision(decision)
