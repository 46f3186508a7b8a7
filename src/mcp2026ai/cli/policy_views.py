"""Rows and tables for ``mcp probe`` and ``mcp policy``: decisions, candidates, constraints vs figures."""

from __future__ import annotations

import importlib.metadata
from datetime import datetime
from typing import Any

from mcp2026ai.contract import InferenceContract
from mcp2026ai.policy.figures import Figures
from mcp2026ai.policy.pareto import ParetoPoint
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.policy.records import Decision, StoredPlan
from mcp2026ai.policy.selection import Evaluation, fmt
from mcp2026ai.runtime.plan import DEFAULT_RUNTIME

CANDIDATE_COLUMNS = ["", "plan", "min ms", "p50 ms", "p99 ms", "exp p99", "rows/s", "MiB", "verdict"]
DECISION_COLUMNS = ["time", "trigger", "version", "feasible", "chosen", "planning s"]
CONSTRAINT_COLUMNS = ["constraint", "contract", "plan", "margin", "ok"]
PARETO_COLUMNS = ["", "plan", "p50 ms", "p99 ms", "rows/s", "MiB", "front", "why"]
ROUND_COLUMNS = ["round", "runs", "p50 ms", "min ms", "p99 ms", "batch p50 ms", "outside load", "load avg", "retaken"]


def when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _num(value: float | None) -> str:
    return "-" if value is None else fmt(value)


def hardware_rows(profile: HardwareProfile) -> list[dict[str, Any]]:
    gpus = "; ".join(f"#{g.index} {g.name} ({g.memory_mb:.0f} MiB, driver {g.driver})" for g in profile.gpus)
    return [
        {"property": "cpu", "value": profile.cpu_model},
        {"property": "cores (usable / online)", "value": f"{profile.logical_cores} / {profile.online_cpus}"},
        {"property": "isa flags", "value": " ".join(profile.cpu_flags) or "-"},
        {"property": "amx", "value": "yes" if profile.amx else "no"},
        {"property": "numa nodes", "value": profile.numa_nodes},
        {
            "property": "memory total / available",
            "value": f"{profile.memory_total_mb:.0f} / {profile.memory_available_mb:.0f} MiB",
        },
        {"property": "onnxruntime", "value": profile.ort_version},
        {"property": "ort providers", "value": ", ".join(profile.ort_providers)},
        {"property": "plan providers", "value": ", ".join(p.value for p in profile.providers)},
        {"property": "runtimes", "value": ", ".join(_with_version(name) for name in profile.runtimes)},
        {"property": "gpus", "value": gpus or "none (nvidia-smi not found or no device)"},
        {"property": "fingerprint", "value": profile.fingerprint()},
    ]


def _with_version(runtime: str) -> str:
    try:
        return f"{runtime} {importlib.metadata.version(runtime)}"
    except importlib.metadata.PackageNotFoundError:
        return runtime


def plan_label(evaluation: Evaluation, version: str | None = None) -> str:
    plan, variant = evaluation.plan, evaluation.candidate.variant
    runtime = "" if plan.runtime == DEFAULT_RUNTIME else f"{plan.runtime}:"
    hint = f" {plan.performance_hint.lower()}" if plan.performance_hint else ""
    threads = f"t={plan.intra_op_threads}" + (f"x{plan.instances}" if plan.instances > 1 else "")
    label = f"{runtime}{plan.provider.value}/{plan.precision.value} {threads}{hint} b={plan.max_batch_size}"
    return label if variant.version == version else f"{label} @{variant.version}"


def verdict(evaluation: Evaluation) -> str:
    if evaluation.feasible:
        return "ok"
    missed = "; ".join(miss.short() for miss in evaluation.misses)
    return missed or evaluation.note or "not measured"


def candidate_rows(
    evaluations: list[Evaluation], chosen: Evaluation | None, version: str | None = None
) -> list[dict[str, Any]]:
    rows = []
    with_drift = any(e.figures is not None and e.figures.drift is not None for e in evaluations)
    for evaluation in evaluations:
        figures = evaluation.figures
        drift = {"drift": _num(figures.drift if figures else None)} if with_drift else {}
        rows.append(
            {
                "": "*" if chosen is not None and evaluation.candidate == chosen.candidate else "",
                "plan": plan_label(evaluation, version),
                "min ms": _num(figures.min_ms if figures else None),
                "p50 ms": _num(figures.p50_ms if figures else None),
                "p99 ms": _num(figures.p99_ms if figures else None),
                "exp p99": _num(evaluation.expected_p99_ms),
                "rows/s": _num(figures.throughput_rps if figures else None),
                "MiB": _num(figures.memory_mb if figures else None),
                **drift,
                "verdict": verdict(evaluation),
            }
        )
    return rows


def pareto_rows(points: list[ParetoPoint], version: str | None = None) -> list[dict[str, Any]]:
    """The Pareto front (and the taken plan if it sits off it), one row per plan."""
    return [
        {
            "": "*" if point.chosen else "",
            "plan": plan_label(point.evaluation, version),
            "p50 ms": _num(point.evaluation.figures.p50_ms if point.evaluation.figures else None),
            "p99 ms": _num(point.p99_ms),
            "rows/s": _num(point.throughput_rps),
            "MiB": _num(point.memory_mb),
            "front": "yes" if point.on_front else "no",
            "why": point.why,
        }
        for point in points
    ]


def round_rows(figures: Figures) -> list[dict[str, Any]]:
    """Each interleaved round of a plan, with the outside load on this process's cores while it ran."""
    return [
        {
            "round": r.round + 1,
            "runs": r.runs,
            "p50 ms": _num(r.p50_ms),
            "min ms": _num(r.min_ms),
            "p99 ms": _num(r.p99_ms),
            "batch p50 ms": _num(r.batch_p50_ms),
            "outside load": "-" if r.outside_cores is None else f"{r.outside_cores:g} cores",
            "load avg": _num(r.load_avg_1m),
            "retaken": "yes (quiet)" if r.remeasured else "",
        }
        for r in figures.rounds
    ]


def decision_row(decision: Decision) -> dict[str, Any]:
    chosen = decision.chosen
    return {
        "time": when(decision.time),
        "trigger": decision.trigger,
        "version": decision.version,
        "feasible": f"{decision.feasible_count}/{len(decision.evaluations)}",
        "chosen": plan_label(chosen, decision.version) if chosen else "none",
        "planning s": f"{decision.planning_s:.2f}",
    }


def constraint_rows(contract: InferenceContract, stored: StoredPlan) -> list[dict[str, Any]]:
    """Each contract constraint next to the stored plan's figure and the margin left."""
    figures, variant = stored.figures, stored.variant
    rows = [_row("latency.p99_ms (expected)", contract.latency.p99_ms, stored.expected_p99_ms, "max", " ms")]
    if contract.latency.p95_ms is not None and figures is not None:
        p95 = (
            figures.p95_ms if stored.plan.max_batch_size == 1 else stored.plan.max_queue_delay_ms + figures.batch_p95_ms
        )
        rows.append(_row("latency.p95_ms (expected)", contract.latency.p95_ms, p95, "max", " ms"))
    rows.append(
        _row(
            "throughput.min_rps",
            contract.throughput.min_rps,
            figures.throughput_rps if figures else None,
            "min",
            " rows/s",
        )
    )
    if contract.resources.memory_mb is not None:
        rows.append(
            _row(
                "resources.memory_mb",
                contract.resources.memory_mb,
                figures.memory_mb if figures else None,
                "max",
                " MiB",
            )
        )
    measured_drift = figures.drift if figures is not None else None
    drift = variant.drift if measured_drift is None else measured_drift
    rows.append(_row("accuracy.max_drift", contract.accuracy.max_drift, drift, "max", ""))
    allowed = [p.value for p in contract.precision.allowed]
    precision = stored.plan.precision
    precision_ok = precision.value in allowed
    rows.append(
        {
            "constraint": "precision.allowed",
            "contract": ", ".join(allowed),
            "plan": precision.value,
            "margin": "",
            "ok": "yes" if precision_ok else "NO",
        }
    )
    return rows


def _row(name: str, limit: float, actual: float | None, bound: str, unit: str) -> dict[str, Any]:
    if actual is None:
        return {"constraint": name, "contract": f"{fmt(limit)}{unit}", "plan": "-", "margin": "-", "ok": "?"}
    margin = limit - actual if bound == "max" else actual - limit
    return {
        "constraint": name,
        "contract": f"{'<=' if bound == 'max' else '>='} {fmt(limit)}{unit}",
        "plan": f"{fmt(actual)}{unit}",
        "margin": f"{'+' if margin >= 0 else '-'}{fmt(abs(margin))}{unit}",
        "ok": "yes" if margin >= 0 else "NO",
    }
