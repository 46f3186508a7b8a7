"""What the console shows about models: the registry's versions as table rows (filtered, one page
at a time) and one model's contract, running plan, measured candidates and decision history.

Everything here reads the registry catalog (blocking I/O): the routes call it on a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.policy.pareto import nondominated, why_not
from mcp2026ai.policy.records import Decision
from mcp2026ai.policy.selection import Evaluation, fmt
from mcp2026ai.policy.trace import DecisionLog
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.signing import SIGNATURE_KIND
from mcp2026ai.server.http.ui.version_states import version_state

PAGE_SIZE = 50


@dataclass(frozen=True)
class ModelPage:
    """One page of the filtered model table."""

    rows: list[dict[str, Any]]
    total: int
    matching: int
    page: int
    pages: int


def model_page(plane: DataPlane, query: str = "", stage: str = "", page: int = 1) -> ModelPage:
    """Every registered version matching ``query`` (name, format, tag or digest prefix) and ``stage``;
    only the rows of ``page`` are looked at further (signatures, serving state)."""
    records = plane.models.registry.versions()
    matching = [record for record in records if _matches(record, query.strip().lower(), stage)]
    pages = max(1, -(-len(matching) // PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = matching[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    signed = plane.models.registry.catalog.annotated(SIGNATURE_KIND)
    rows = [model_row(plane, record, (record.name, record.version) in signed) for record in shown]
    return ModelPage(rows, len(records), len(matching), page, pages)


def _matches(record: ModelVersion, query: str, stage: str) -> bool:
    if stage and record.stage.value != stage:
        return False
    if not query:
        return True
    tags = " ".join(f"{key}={value}" for key, value in record.tags.items())
    return any(query in text.lower() for text in (record.name, record.format, tags)) or record.digest.startswith(query)


def model_row(plane: DataPlane, record: ModelVersion, signed: bool) -> dict[str, Any]:
    contract = record.contract
    lifecycle = version_state(plane, record)
    return {
        "name": record.name,
        "version": record.version,
        "stage": record.stage.value,
        "format": record.format,
        "digest": record.digest[:12],
        "signed": signed,
        "contract": _contract_summary(record) if contract else "",
        "served": served_state(plane, record),
        "state": lifecycle.state,
        "state_reason": lifecycle.reason,
        "traffic": lifecycle.traffic,
    }


def _contract_summary(record: ModelVersion) -> str:
    contract = record.contract
    assert contract is not None
    budget = contract.latency.p99_ms
    return f"{contract.sla_class.value}, {contract.objective}" + (f", p99 <= {budget:g} ms" if budget else "")


def served_state(plane: DataPlane, record: ModelVersion) -> str:
    """``default`` (unpinned traffic goes there), ``loaded``, ``generating`` (a language model) or ``""``."""
    if plane.llms.serves(record.name) and plane.llms.get(record.name).record.version == record.version:
        return "generating"
    if not plane.models.is_loaded(record.name):
        return ""
    versions = {served.record.version for served in plane.models.served_versions(record.name)}
    if record.version not in versions:
        return ""
    return "default" if plane.models.default_version(record.name) == record.version else "loaded"


def model_detail(plane: DataPlane, name: str, version: str | None = None) -> dict[str, Any]:
    """One version's contract, running plan, last decision's candidates and the decision history."""
    record = plane.models.registry.resolve(name, version)
    log = DecisionLog(plane.models.registry.catalog)
    history = log.decisions(record.name, version=record.version)
    last = history[-1] if history else None
    return {
        "record": record,
        "versions": [r.version for r in plane.models.registry.versions(record.name)],
        "served": served_state(plane, record),
        "contract": record.contract.model_dump(mode="json", exclude_none=True) if record.contract else None,
        "running_plan": _running_plan(plane, record),
        "stored_plan": log.current_plan(record.name, record.version),
        "decision": last,
        "history": [_history_row(decision) for decision in reversed(history)],
    }


def _running_plan(plane: DataPlane, record: ModelVersion) -> str:
    if served_state(plane, record) in ("default", "loaded"):
        return plane.models.get(record.name, record.version).plan.describe()
    if served_state(plane, record) == "generating":
        return "text generation engine (see the Live page for tokens/s and KV cache)"
    return ""


def _history_row(decision: Decision) -> dict[str, Any]:
    return {
        "time": decision.time.strftime("%Y-%m-%d %H:%M:%S"),
        "trigger": decision.trigger,
        "candidates": len(decision.evaluations),
        "feasible": decision.feasible_count,
        "chosen": decision.chosen.plan.describe() if decision.chosen else "none feasible",
        "reason": decision.reason,
    }


def candidate_points(decision: Decision) -> list[dict[str, Any]]:
    """The chart's points: every measured candidate at (expected p99, throughput), on the two-axis
    Pareto front or not (the chart's axes; the policy's own front adds memory), chosen or not, with
    why it was (not) taken."""
    chosen = decision.chosen
    measured = [e for e in decision.evaluations if e.figures is not None and e.expected_p99_ms is not None]
    front = nondominated(measured, _latency_throughput)
    objective = decision.contract.objective
    return [_point(e, chosen, e in front, why_not(objective, e, chosen)) for e in measured]


def _latency_throughput(evaluation: Evaluation) -> tuple[float, float]:
    assert evaluation.figures is not None and evaluation.expected_p99_ms is not None
    return evaluation.expected_p99_ms, -evaluation.figures.throughput_rps


def _point(evaluation: Evaluation, chosen: Evaluation | None, on_front: bool, why: str) -> dict[str, Any]:
    figures = evaluation.figures
    assert figures is not None and evaluation.expected_p99_ms is not None
    return {
        "plan": evaluation.plan.describe(),
        "p99_ms": round(evaluation.expected_p99_ms, 3),
        "throughput_rps": round(figures.throughput_rps, 1),
        "feasible": evaluation.feasible,
        "front": on_front,
        "chosen": chosen is not None and evaluation.candidate == chosen.candidate,
        "why": why,
        "label": f"{fmt(evaluation.expected_p99_ms)} ms, {fmt(figures.throughput_rps)} rows/s",
    }
