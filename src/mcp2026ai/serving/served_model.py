"""One served model version (its record, backend, executor, stats and measured memory) and the
table entry holding a model's versions."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mcp2026ai.contract import SLAClass
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.versioning import integer_alias
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.plan import Plan
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.config import BatchingConfig
from mcp2026ai.scheduling.sequences import SequenceTable


@dataclass
class ServedModel:
    record: ModelVersion
    backend: Backend
    executor: Executor
    stats: ModelStats
    load_seconds: float = 0.0
    sequences: SequenceTable | None = None
    """The live sequences of a stateful model (its contract has a ``sequence`` section)."""
    priority_classes: dict[int, SLAClass] = field(default_factory=dict)
    """Triton priority level -> SLA class (a request's ``priority`` parameter), from its stored config."""
    footprint_bytes: int = 0
    """Resident memory its load added to the process (weights, sessions), measured."""
    transient_bytes: int = 0
    """How far the RSS rose above that while it loaded."""
    last_used: float = field(default_factory=time.monotonic)

    @property
    def sla_class(self) -> SLAClass:
        return self.record.contract.sla_class if self.record.contract else SLAClass.BEST_EFFORT

    @property
    def kind(self) -> str:
        """``embedding`` for a sentence encoder (text in), else ``tensor`` (the cold-start metric's label)."""
        preprocessing = self.record.preprocessing
        return "embedding" if preprocessing is not None and preprocessing.text is not None else "tensor"

    @property
    def plan(self) -> Plan:
        return self.backend.plan

    @property
    def batching(self) -> BatchingConfig | None:
        config = getattr(self.executor, "config", None)
        return config if isinstance(config, BatchingConfig) else None

    @property
    def max_batch_size(self) -> int:
        """Most rows one request may carry: the executor's batch limit (Triton's max_batch_size)."""
        return self.batching.max_batch_size if self.batching else self.plan.max_batch_size


@dataclass
class ModelEntry:
    versions: dict[str, ServedModel] = field(default_factory=dict)
    default: str | None = None
    failure: str | None = None


def version_by_number(entry: ModelEntry, key: str) -> ServedModel | None:
    """Look a version up by its Triton-style integer alias ("1" for the first registered)."""
    alias = integer_alias(key)
    if alias is None:
        return None
    return next((m for m in entry.versions.values() if m.record.number == alias), None)
