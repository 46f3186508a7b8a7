"""The policy orchestrator: contract -> candidates -> measurements -> chosen plan, logged and stored.

    orchestrator = PolicyOrchestrator(registry)
    decision = orchestrator.plan_for(record, trigger="register")   # measures, selects, stores
    backend = orchestrator.backend_for(record)                     # stored plan + cached optimized graph

Everything it decides is written to the registry catalog (kinds ``policy_decision`` and ``plan``), so
a new orchestrator on the same ``MCP_HOME`` reuses the stored plan without measuring again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from mcp2026ai.contract import BatchingSpec, InferenceContract, LatencySpec
from mcp2026ai.ir.signature import Signature
from mcp2026ai.policy.cache import OptimizedModelCache
from mcp2026ai.policy.candidates import Candidate, Variant, VariantLookup, enumerate_candidates, registry_variants
from mcp2026ai.policy.probe import HardwareProfile, probe_hardware
from mcp2026ai.policy.profiler import Measurement, ProfileBudget, Profiler
from mcp2026ai.policy.records import Decision, StoredPlan, Trigger
from mcp2026ai.policy.replan import ReplanMonitor, ReplanPolicy, reselect
from mcp2026ai.policy.selection import (
    NoFeasiblePlanError,
    chosen_reason,
    evaluate_all,
    infeasible_message,
    select_plan,
    static_misses,
)
from mcp2026ai.policy.synthetic import SyntheticShapes
from mcp2026ai.policy.trace import DecisionLog
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.plan import DEFAULT_RUNTIME, Plan

Measurer = Callable[[ModelVersion, Sequence[Candidate]], dict[Candidate, Measurement]]

# A model registered without a contract is planned for lowest latency with no constraint to keep.
UNCONSTRAINED = InferenceContract(
    latency=LatencySpec(p99_ms=3_600_000), batching=BatchingSpec(max_batch_size=1, max_queue_delay_ms=0)
)


class PolicyOrchestrator:
    """Plans model versions against their contracts on this machine and keeps the trace."""

    def __init__(
        self,
        registry: ModelRegistry,
        hardware: HardwareProfile | None = None,
        budget: ProfileBudget | None = None,
        variants: VariantLookup | None = None,
        measurer: Measurer | None = None,
        shapes: SyntheticShapes | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        runtime: str | None = None,
    ) -> None:
        """``runtime`` forces one runtime (``mcp serve --backend openvino``): only its plans are measured,
        and a stored plan of another runtime is measured again."""
        self.registry = registry
        self._hardware = hardware
        self.budget = budget or ProfileBudget()
        self.variants = variants or registry_variants(registry)
        self.measurer = measurer or self._profile
        self.shapes = shapes or SyntheticShapes()
        self.now = now
        self.runtime = runtime
        self.log = DecisionLog(registry.catalog)

    @property
    def hardware(self) -> HardwareProfile:
        if self._hardware is None:
            self._hardware = probe_hardware()
        return self._hardware

    @property
    def cache(self) -> OptimizedModelCache:
        return OptimizedModelCache(self.registry.home / "cache", self.hardware.fingerprint())

    @staticmethod
    def contract_for(record: ModelVersion) -> InferenceContract:
        return record.contract or UNCONSTRAINED

    def candidates(self, record: ModelVersion) -> list[Candidate]:
        contract = self.contract_for(record)
        return enumerate_candidates(record, contract, self.hardware, self.variants(record, contract), self.runtime)

    def plan_for(self, record: ModelVersion, trigger: Trigger = "manual") -> Decision:
        """Measure every candidate, select against the contract, log the decision and store the plan.

        Raises NoFeasiblePlanError (after logging the decision) when no candidate keeps the contract.
        """
        started = time.perf_counter()
        contract = self.contract_for(record)
        candidates = self.candidates(record)
        measurable = [candidate for candidate in candidates if not static_misses(contract, candidate)]
        measurements = self.measurer(record, measurable) if measurable else {}
        evaluations = evaluate_all(contract, candidates, measurements)
        chosen = select_plan(contract, evaluations)
        reason = chosen_reason(contract, chosen, evaluations) if chosen else infeasible_message(record.ref, evaluations)
        if record.contract is None:
            reason = "no contract: lowest latency, nothing to keep; " + reason
        decision = Decision(
            model=record.name,
            version=record.version,
            time=self.now(),
            trigger=trigger,
            contract=contract,
            hardware=self.hardware.summary(),
            hardware_fingerprint=self.hardware.fingerprint(),
            evaluations=evaluations,
            chosen=chosen,
            reason=reason,
            planning_s=round(time.perf_counter() - started, 3),
        )
        self.log.record(decision)
        if chosen is None:
            raise NoFeasiblePlanError(record.ref, evaluations)
        self._store(record, decision)
        return decision

    def stored(self, record: ModelVersion) -> StoredPlan | None:
        return self.log.current_plan(record.name, record.version)

    def stored_plan(self, record: ModelVersion) -> Plan | None:
        stored = self.stored(record)
        return stored.plan if stored else None

    def ensure_plan(self, record: ModelVersion, trigger: Trigger = "serve") -> StoredPlan:
        """The stored plan if it was made on this hardware (for the forced runtime, if any), else a fresh one."""
        stored = self.stored(record)
        runtime_ok = stored is not None and self.runtime in (None, stored.plan.runtime)
        if stored is not None and runtime_ok and stored.hardware_fingerprint == self.hardware.fingerprint():
            return stored
        self.plan_for(record, trigger)
        fresh = self.stored(record)
        assert fresh is not None
        return fresh

    def backend_for(self, record: ModelVersion, stored: StoredPlan | None = None) -> Backend:
        """An (unloaded) backend running the stored plan's variant from the optimized-model cache."""
        stored = stored or self.ensure_plan(record)
        source = self.registry.store.verified_path(stored.variant.digest)
        return self.cache.backend(
            source, stored.variant.digest, stored.plan, self.variant_signature(record, stored.variant)
        )

    def variant_signature(self, record: ModelVersion, variant: Variant) -> Signature:
        """The signature of the artifact a variant runs (a quantized child may differ in datatypes)."""
        if variant.digest == record.digest:
            return record.signature
        return self.registry.resolve(variant.name or record.name, variant.version).signature

    def decisions(self, name: str, since: datetime | None = None, version: str | None = None) -> list[Decision]:
        return self.log.decisions(name, since=since, version=version)

    def replan(self, record: ModelVersion, observed_p99_ms: float) -> Decision:
        """Re-select after serving observed ``observed_p99_ms``; logs it and stores a newly chosen plan."""
        previous = self.log.last_decision(record.name, record.version)
        if previous is None:
            return self.plan_for(record, "replan")
        decision = reselect(previous, observed_p99_ms, self.now())
        self.log.record(decision)
        if decision.chosen is not None:
            self._store(record, decision)
        return decision

    def monitor(
        self, record: ModelVersion, swap: Callable[[Decision], None], policy: ReplanPolicy | None = None
    ) -> ReplanMonitor:
        """A run-time monitor for ``record`` that re-plans through :meth:`replan` and calls ``swap``."""
        budget = self.contract_for(record).latency.p99_ms
        return ReplanMonitor(budget, lambda observed: self.replan(record, observed), swap, policy)

    def _store(self, record: ModelVersion, decision: Decision) -> None:
        chosen = decision.chosen
        assert chosen is not None
        digest = chosen.candidate.variant.digest
        source = self.registry.store.verified_path(digest)
        runs_onnxruntime = chosen.plan.runtime == DEFAULT_RUNTIME  # the cache holds onnxruntime's optimized graphs
        optimized = self.cache.ensure(source, digest, chosen.plan) if runs_onnxruntime else None
        stored = StoredPlan.from_decision(decision, str(optimized) if optimized else None)
        self.log.store_plan(record.name, record.version, stored)

    def _profile(self, record: ModelVersion, candidates: Sequence[Candidate]) -> dict[Candidate, Measurement]:
        profiler = Profiler(
            lambda variant: self.registry.store.verified_path(variant.digest),
            lambda variant: self.variant_signature(record, variant),
            self.budget,
            self.shapes,
            record.preprocessing,
            latency_limit_ms=self.contract_for(record).latency.p99_ms,
        )
        return profiler(candidates)
