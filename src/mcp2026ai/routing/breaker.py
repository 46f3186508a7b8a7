"""Circuit breaker per model version, and the choice of a target when a circuit is open.

States: closed (all pass; open when the failure share of the rolling window exceeds
``failure_rate`` with at least ``min_requests`` in it) -> open (all refused) -> after
``cooldown_s`` half-open (``half_open_probes`` requests pass; all succeeding closes, any failure
re-opens). Every request that :meth:`CircuitBreaker.allow` let through must be reported once with
:meth:`CircuitBreaker.record`. Only server faults count as failures (see ``routing.outcome``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import IntEnum

from mcp2026ai.clock import Clock
from mcp2026ai.errors import UnavailableError
from mcp2026ai.observability.metrics import CIRCUIT_FALLBACKS, CIRCUIT_STATE, CIRCUIT_TRANSITIONS
from mcp2026ai.routing.config import BreakerSpec, RolloutConfig
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.window import SlidingWindow


class BreakerState(IntEnum):
    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


class CircuitBreaker:
    def __init__(self, model: str, version: str, spec: BreakerSpec, clock: Clock = time.monotonic) -> None:
        self.model, self.version, self.spec = model, version, spec
        self._clock = clock
        self._window = SlidingWindow(spec.window_s)
        self._state = BreakerState.CLOSED
        self._changed_at = clock()
        self._probes_issued = 0
        self._probes_passed = 0
        CIRCUIT_STATE.labels(model=model, version=version).set(0)

    @property
    def state(self) -> BreakerState:
        self._maybe_half_open(self._clock())
        return self._state

    def allow(self) -> bool:
        """May a request go to this version now? Half-open, this reserves one probe."""
        now = self._clock()
        self._maybe_half_open(now)
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.OPEN:
            return False
        if self._probes_issued >= self.spec.half_open_probes and now - self._changed_at >= self.spec.cooldown_s:
            self._enter(BreakerState.HALF_OPEN, now)  # probes never reported back: probe again
        if self._probes_issued < self.spec.half_open_probes:
            self._probes_issued += 1
            return True
        return False

    def record(self, success: bool) -> None:
        now = self._clock()
        self._maybe_half_open(now)
        if self._state is BreakerState.CLOSED:
            self._window.add(now, Outcome.OK if success else Outcome.SERVER_ERROR)
            if not success and self._should_open(now):
                self._enter(BreakerState.OPEN, now)
        elif self._state is BreakerState.HALF_OPEN:
            if not success:
                self._enter(BreakerState.OPEN, now)
                return
            self._probes_passed += 1
            if self._probes_passed >= self.spec.half_open_probes:
                self._enter(BreakerState.CLOSED, now)

    def _should_open(self, now: float) -> bool:
        counts = self._window.counts(now)
        return counts.requests >= self.spec.min_requests and counts.server_error_rate > self.spec.failure_rate

    def _maybe_half_open(self, now: float) -> None:
        if self._state is BreakerState.OPEN and now - self._changed_at >= self.spec.cooldown_s:
            self._enter(BreakerState.HALF_OPEN, now)

    def _enter(self, state: BreakerState, now: float) -> None:
        if state is not self._state:
            CIRCUIT_TRANSITIONS.labels(model=self.model, version=self.version, state=state.name.lower()).inc()
        self._state, self._changed_at = state, now
        self._probes_issued = self._probes_passed = 0
        self._window.clear()
        CIRCUIT_STATE.labels(model=self.model, version=self.version).set(int(state))


class BreakerBoard:
    """The breakers of every (model, version), created on first use with the rollout's settings."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._breakers: dict[tuple[str, str], CircuitBreaker] = {}

    def get(self, model: str, version: str, spec: BreakerSpec | None = None) -> CircuitBreaker:
        key = (model, version)
        breaker = self._breakers.get(key)
        if breaker is None or (spec is not None and breaker.spec != spec):
            breaker = CircuitBreaker(model, version, spec or BreakerSpec(), self._clock)
            self._breakers[key] = breaker
        return breaker

    def record(self, model: str, version: str, success: bool) -> None:
        self.get(model, version).record(success)

    def states(self) -> dict[tuple[str, str], BreakerState]:
        return {key: breaker.state for key, breaker in self._breakers.items()}


@dataclass(frozen=True)
class Target:
    model: str
    version: str | None
    """None only for a fallback model: its registry default version."""
    reason: str
    """``routed``, ``stable`` (the canary's circuit is open) or ``fallback`` (another model)."""


def pick_target(model: str, version: str, config: RolloutConfig | None, board: BreakerBoard) -> Target:
    """The routed version if its circuit allows; else the stable version; else the fallback model.

    Raises UnavailableError when every circuit is open and the rollout names no fallback model.
    """
    spec = config.breaker if config else None
    if board.get(model, version, spec).allow():
        return Target(model, version, "routed")
    stable = config.stable if config else None
    if stable is not None and stable != version and board.get(model, stable, spec).allow():
        CIRCUIT_FALLBACKS.labels(model=model, version=version, target=f"{model}:{stable}").inc()
        return Target(model, stable, "stable")
    if config is not None and config.fallback_model is not None:
        CIRCUIT_FALLBACKS.labels(model=model, version=version, target=config.fallback_model).inc()
        return Target(config.fallback_model, None, "fallback")
    raise UnavailableError(f"circuit open for {model}:{version} and no fallback model is configured")
