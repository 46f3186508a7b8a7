"""The routing state a data plane holds per process: rollouts, canary analyzers, rollbacks.

Wiring (per request, on the event loop thread)::

    config = manager.config(request.model)
    decision = router.route(request, config)
    ...serve, then...
    manager.observe(request.model, served_version, classify(exc), latency_ms)

and in a background task every second or so: ``manager.tick()`` (evaluates due canaries and rolls
back failing ones) and, every few seconds, a refresh (picks up ``mcp rollout set`` from other
processes: the latest ``rollout`` annotation wins). A refresh is two steps so that the catalog is
read off the event loop: :meth:`RolloutManager.read` (catalog reads only, any thread) and
:meth:`RolloutManager.install` (on the loop); :meth:`RolloutManager.refresh` does both at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from mcp2026ai.clock import Clock
from mcp2026ai.contract import GenerationSpec
from mcp2026ai.observability.metrics import CANARY_ROLLBACKS
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.rollout import CanaryAnalyzer, Verdict
from mcp2026ai.routing.store import RolloutStore
from mcp2026ai.routing.stream_window import StreamSample

ROLLBACK_TRIGGER = "rollback"


@dataclass(frozen=True)
class RolloutSnapshot:
    """Rollouts as stored when read, and how many rollouts this process had written by then."""

    configs: dict[str, RolloutConfig | None]
    local_writes: int


class RolloutManager:
    def __init__(self, store: RolloutStore, clock: Clock = time.monotonic) -> None:
        self.store = store
        self._clock = clock
        self._configs: dict[str, RolloutConfig | None] = {}
        self._analyzers: dict[str, CanaryAnalyzer] = {}
        self._local_writes = 0

    def config(self, model: str) -> RolloutConfig | None:
        """The model's rollout (read from the catalog once, then cached until :meth:`refresh`)."""
        if model not in self._configs:
            self._install(model, self.store.get(model))
        return self._configs[model]

    def refresh(self, model: str | None = None) -> None:
        self.install(self.read([model] if model else self.known_models()))

    def known_models(self) -> list[str]:
        return list(self._configs)

    def read(self, models: Iterable[str]) -> RolloutSnapshot:
        """The stored rollouts of ``models``: catalog reads only, so any thread may call it."""
        local_writes = self._local_writes
        return RolloutSnapshot({name: self.store.get(name) for name in models}, local_writes)

    def install(self, snapshot: RolloutSnapshot) -> bool:
        """Serve the rollouts of ``snapshot``, unless this process wrote one since it was read (a set
        or a rollback landing meanwhile must not be undone by an older read; the next refresh reads
        it). Returns whether it was installed."""
        if snapshot.local_writes != self._local_writes:
            return False
        for name, config in snapshot.configs.items():
            self._install(name, config)
        return True

    def set(self, config: RolloutConfig, reason: str = "set") -> RolloutConfig:
        stored = self.store.put(config, reason)
        self.adopt(stored.name, stored)
        return stored

    def adopt(self, model: str, config: RolloutConfig | None) -> None:
        """Serve a rollout this process has just written to the store (None: cleared), e.g. from a
        worker thread: the write off the loop, this on it; an older read in flight is not installed."""
        self._local_writes += 1
        self._install(model, config)

    def analyzer(self, model: str) -> CanaryAnalyzer | None:
        """The active canary's analyzer (None without an active canary)."""
        return self._analyzers.get(model)

    def observe(self, model: str, version: str, outcome: Outcome, latency_ms: float) -> None:
        """Count one finished request; only the active canary's requests are analysed."""
        analyzer = self._analyzers.get(model)
        if analyzer is not None and analyzer.version == version:
            analyzer.observe(outcome, latency_ms, self._clock())

    def observe_stream(self, model: str, version: str, sample: StreamSample, promises: GenerationSpec | None) -> None:
        """Count one finished generation (a chat) with its contract's promises; only the active
        canary's are analysed."""
        analyzer = self._analyzers.get(model)
        if analyzer is not None and analyzer.version == version:
            analyzer.observe_stream(sample, promises)

    def tick(self, now: float | None = None) -> dict[str, Verdict]:
        """Evaluate every canary whose interval has passed; roll back those that failed."""
        now = self._clock() if now is None else now
        verdicts = {}
        for model, analyzer in list(self._analyzers.items()):
            if analyzer.due(now):
                verdicts[model] = verdict = analyzer.evaluate(now)
                if verdict.rollback:
                    self.roll_back(model, verdict)
        return verdicts

    def roll_back(self, model: str, verdict: Verdict) -> RolloutConfig:
        """Serve only the stable version, persist that, and trace the decision."""
        config = self.config(model)
        if config is None or config.canary is None:
            raise LookupError(f"model {model!r} has no canary to roll back")
        stable_only = self.store.put(config.stable_only(), f"rollback: {verdict.reason}", validate=False)
        self.store.record_decision(
            model,
            config.canary,
            ROLLBACK_TRIGGER,
            chosen=f"{model}:{config.stable}",
            reason=verdict.reason,
            rolled_back=f"{model}:{config.canary}",
            figures=verdict.figures,
        )
        CANARY_ROLLBACKS.labels(model=model, version=config.canary).inc()
        self._local_writes += 1
        self._install(model, stable_only)
        return stable_only

    def _install(self, model: str, config: RolloutConfig | None) -> None:
        self._configs[model] = config
        current = self._analyzers.get(model)
        if config is None or not config.canary_active or config.canary is None:
            self._analyzers.pop(model, None)
        elif current is None or current.version != config.canary or current.spec != config.analysis:
            self._analyzers[model] = CanaryAnalyzer(model, config.canary, config.analysis, self._clock)
