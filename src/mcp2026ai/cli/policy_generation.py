"""`mcp policy plan / trace / explain` for language models (generation/planning.py)."""

from __future__ import annotations

from datetime import datetime

from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.errors import MCPError
from mcp2026ai.ir.llm_info import LLMPrecision
from mcp2026ai.policy.generation import (
    GenerationDecision,
    GenerationEvaluation,
    MeasurementBudget,
    PrecisionVariant,
    decisions,
    last_decision,
    plan_generation,
)
from mcp2026ai.policy.pareto import nondominated
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.routing.manager import ROLLBACK_TRIGGER
from mcp2026ai.routing.store import RolloutStore

COLUMNS = ["plan", "TTFT p99 ms", "ITL p99 ms", "tokens/s", "MiB", "feasible", "why not"]
IMPORT_COLUMNS = ["version", "precision", "weights MiB", "token agreement", "plans"]
SUMMARY_COLUMNS = ["time", "trigger", "version", "feasible", "chosen", "planning s"]
PARETO_COLUMNS = ["", "plan", "TTFT p99 ms", "ITL p99 ms", "tokens/s", "MiB", "why"]


class NoFeasibleGenerationPlanError(MCPError):
    """No candidate met the contract (the CLI exits 1 after printing the table)."""


def _figures(evaluation: GenerationEvaluation) -> dict[str, object]:
    return {
        "TTFT p99 ms": f"{evaluation.ttft_p99_ms:.0f}",
        "ITL p99 ms": f"{evaluation.itl_p99_ms:.1f}",
        "tokens/s": f"{evaluation.tokens_per_s:.0f}",
        "MiB": "-" if evaluation.memory_mb is None else f"{evaluation.memory_mb:.0f}",
    }


def _row(evaluation: GenerationEvaluation, chosen: GenerationEvaluation | None) -> dict[str, object]:
    mark = " (chosen)" if chosen is not None and evaluation.plan == chosen.plan else ""
    return {
        "plan": evaluation.plan.describe() + mark,
        **_figures(evaluation),
        "feasible": "yes" if evaluation.feasible else "no",
        "why not": "; ".join(evaluation.violations),
    }


def _import_row(variant: PrecisionVariant) -> dict[str, object]:
    agreement = "not measured" if variant.agreement is None else f"{variant.agreement:.1%}"
    return {
        "version": variant.version,
        "precision": variant.precision,
        "weights MiB": f"{variant.weights_mb:.0f}",
        "token agreement": agreement,
        "plans": "rejected: " + "; ".join(variant.rejected) if variant.rejected else "timed",
    }


def print_decision(decision: GenerationDecision) -> None:
    if decision.variants:
        title = f"imports of {decision.model}'s source (agreement: greedy tokens vs fp32)"
        print_table(title, [_import_row(variant) for variant in decision.variants], IMPORT_COLUMNS)
    rows = [_row(evaluation, decision.chosen) for evaluation in decision.evaluations]
    print_table(f"generation plans for {decision.model}:{decision.version} ({decision.precision})", rows, COLUMNS)
    if decision.drift is not None:
        console.print(
            f"accuracy: token agreement {1 - decision.drift:.1%} with {decision.reference} (drift {decision.drift:.3f})"
        )
    chosen = f"{decision.chosen.plan.describe()}: " if decision.chosen else ""
    console.print(
        f"decided {decision.time:%Y-%m-%d %H:%M:%S} ({decision.trigger}) in {decision.planning_s:.0f} s: "
        f"{chosen}{decision.reason}"
    )


def plan(
    registry: ModelRegistry, record: ModelVersion, as_json: bool, measurement: MeasurementBudget | None = None
) -> None:
    decision = plan_generation(registry, record, measurement=measurement)
    if as_json:
        print_json(decision.model_dump(mode="json"))
    else:
        print_decision(decision)
    if decision.chosen is None:
        raise NoFeasibleGenerationPlanError(f"{record.ref}: {decision.reason}")


def _summary(decision: GenerationDecision) -> dict[str, object]:
    chosen = decision.chosen
    return {
        "time": f"{decision.time:%Y-%m-%d %H:%M:%S}",
        "trigger": decision.trigger,
        "version": decision.version,
        "feasible": f"{sum(e.feasible for e in decision.evaluations)}/{len(decision.evaluations)}",
        "chosen": chosen.plan.describe() if chosen else "none",
        "planning s": f"{decision.planning_s:.0f}",
    }


def trace(
    registry: ModelRegistry, name: str, version: str | None, as_json: bool, since: datetime | None = None
) -> None:
    found = [d for d in decisions(registry, name, version) if since is None or d.time >= since]
    if as_json:
        print_json([decision.model_dump(mode="json") for decision in found])
        return
    if not found:
        console.print(f"no generation plans for {name}")
    else:
        print_table(f"generation plan decisions for {name}", [_summary(d) for d in found], SUMMARY_COLUMNS)
        for decision in found:
            print_decision(decision)
    _print_rollbacks(registry, name, version, since)


def _print_rollbacks(registry: ModelRegistry, name: str, version: str | None, since: datetime | None) -> None:
    """The rollout decisions on its canaries (canary analysis on the contract's generation figures)."""
    rows = [
        {"time": row["time"], "version": row["version"], "chosen": row["chosen"], "reason": row["reason"]}
        for row in RolloutStore(registry).decisions(name, ROLLBACK_TRIGGER)
        if (version is None or row["version"] == version)
        and (since is None or datetime.fromisoformat(row["time"]) >= since)
    ]
    if rows:
        print_table(f"rollout decisions for {name}", rows, ["time", "version", "chosen", "reason"])


def _coordinates(evaluation: GenerationEvaluation) -> tuple[float, float, float, float]:
    """All minimised: TTFT p99, ITL p99, -tokens/s, memory."""
    memory = evaluation.memory_mb if evaluation.memory_mb is not None else float("inf")
    return evaluation.ttft_p99_ms, evaluation.itl_p99_ms, -evaluation.tokens_per_s, memory


def pareto_front(decision: GenerationDecision) -> list[GenerationEvaluation]:
    """The measured plans no other is at least as good as on TTFT, ITL, tokens/s and memory (and better
    on one), plus the taken plan if it sits off the front."""
    front = nondominated(decision.evaluations, _coordinates)
    chosen = decision.chosen
    if chosen is not None and all(e.plan != chosen.plan for e in front):
        front.append(chosen)
    return front


def why(objective: str, evaluation: GenerationEvaluation, chosen: GenerationEvaluation | None) -> str:
    """Why a plan was taken, or not."""
    if chosen is not None and evaluation.plan == chosen.plan:
        return f"taken: best {objective} among the feasible plans"
    if not evaluation.feasible:
        return "misses " + "; ".join(evaluation.violations)
    if chosen is None:
        return "feasible"
    if objective == "throughput":
        return f"{evaluation.tokens_per_s:.0f} tokens/s < {chosen.tokens_per_s:.0f}"
    if objective == "memory":
        return f"{evaluation.memory_mb or 0:.0f} MiB >= {chosen.memory_mb or 0:.0f}"
    return f"ITL p99 {evaluation.itl_p99_ms:.1f} ms >= {chosen.itl_p99_ms:.1f}"


def pareto_rows(decision: GenerationDecision, objective: str) -> list[dict[str, object]]:
    chosen = decision.chosen
    return [
        {
            "": "*" if chosen is not None and evaluation.plan == chosen.plan else "",
            "plan": evaluation.plan.describe(),
            **_figures(evaluation),
            "why": why(objective, evaluation, chosen),
        }
        for evaluation in pareto_front(decision)
    ]


def pareto_json(decision: GenerationDecision, objective: str) -> list[dict[str, object]]:
    return [
        e.model_dump(mode="json", include={"plan", "ttft_p99_ms", "itl_p99_ms", "tokens_per_s", "memory_mb"})
        | {
            "chosen": decision.chosen is not None and e.plan == decision.chosen.plan,
            "why": why(objective, e, decision.chosen),
        }
        for e in pareto_front(decision)
    ]


def _unregistered(decision: GenerationDecision, contract: InferenceContract) -> list[str]:
    """Import precisions the contract allows that no version offers."""
    have = {variant.precision for variant in decision.variants}
    allowed = (
        {p.value for p in contract.precision.allowed}
        if "precision" in contract.model_fields_set
        else {p.value for p in Precision}
    )
    return [p.value for p in LLMPrecision if p.value in allowed and p.value not in have]


def explain(registry: ModelRegistry, record: ModelVersion, as_json: bool) -> None:
    decision = last_decision(registry, record)
    contract = record.contract or InferenceContract()
    if as_json:
        print_json(decision.model_dump(mode="json") | {"pareto": pareto_json(decision, contract.objective)})
        return
    if decision.chosen is None:
        console.print(f"{record.ref} has no feasible generation plan: {decision.reason}")
    else:
        chosen = decision.chosen
        console.print(f"[bold]{record.ref}[/] runs [bold]{chosen.plan.describe()}[/]: {decision.reason}")
        spec = contract.generation
        for label, figure, bound, lower_is_better in (
            ("TTFT p99 ms", chosen.ttft_p99_ms, spec.ttft_p99_ms if spec else None, True),
            ("ITL p99 ms", chosen.itl_p99_ms, spec.itl_p99_ms if spec else None, True),
            ("tokens/s", chosen.tokens_per_s, spec.min_tokens_per_s if spec else None, False),
            ("MiB", chosen.memory_mb or 0.0, contract.resources.memory_mb, True),
        ):
            promise = "not set" if bound is None else (f"<= {bound:g}" if lower_is_better else f">= {bound:g}")
            console.print(f"  {label}: {figure:.1f} (contract {promise})")
    print_decision(decision)
    title = (
        f"Pareto front of {len(decision.evaluations)} measured plans (TTFT/ITL p99, tokens/s, MiB reserved); "
        f"* = taken by the {contract.objective} objective"
    )
    print_table(title, pareto_rows(decision, contract.objective), PARETO_COLUMNS)
    missing = _unregistered(decision, contract)
    if missing:
        console.print(
            f"not registered, so not planned: {', '.join(missing)} "
            f"(`mcp model register --name {record.name} --path SOURCE --precision {missing[0]} --version ...`)",
            highlight=False,
        )
