"""What the policy stores: decisions (why a plan was chosen) and the plan a model version runs."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract
from mcp2026ai.policy.candidates import Variant
from mcp2026ai.policy.profiler import Figures
from mcp2026ai.policy.selection import Evaluation
from mcp2026ai.runtime.plan import Plan

Trigger = Literal["register", "serve", "replan", "manual"]


def new_decision_id() -> str:
    return uuid.uuid4().hex[:12]


class Decision(BaseModel):
    """One planning decision: when, why it ran, every candidate with its figures, the outcome."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_decision_id)
    model: str
    version: str
    time: datetime
    trigger: Trigger
    contract: InferenceContract
    hardware: str = Field("", description="One-line hardware summary.")
    hardware_fingerprint: str = ""
    evaluations: list[Evaluation] = Field(default_factory=list)
    chosen: Evaluation | None = None
    reason: str = ""
    planning_s: float = 0.0

    @property
    def ref(self) -> str:
        return f"{self.model}:{self.version}"

    @property
    def feasible_count(self) -> int:
        return sum(1 for evaluation in self.evaluations if evaluation.feasible)


class StoredPlan(BaseModel):
    """The plan a model version runs, the variant it runs, its figures and the cached optimized graph."""

    model_config = ConfigDict(frozen=True)

    plan: Plan
    variant: Variant
    figures: Figures | None = None
    expected_p99_ms: float | None = None
    decision_id: str
    decided_at: datetime
    trigger: Trigger
    hardware_fingerprint: str = ""
    optimized_model: str | None = Field(None, description="Path of the onnxruntime-optimized model, if cached.")

    @classmethod
    def from_decision(cls, decision: Decision, optimized_model: str | None = None) -> StoredPlan:
        chosen = decision.chosen
        if chosen is None:
            raise ValueError(f"decision {decision.id} chose no plan")
        return cls(
            plan=chosen.plan,
            variant=chosen.candidate.variant,
            figures=chosen.figures,
            expected_p99_ms=chosen.expected_p99_ms,
            decision_id=decision.id,
            decided_at=decision.time,
            trigger=decision.trigger,
            hardware_fingerprint=decision.hardware_fingerprint,
            optimized_model=optimized_model,
        )
