"""The routing pieces a data plane holds, wired together: rollout, router, breakers, shadow mirror.

Per request: :meth:`TrafficController.choose` picks the (model, version) to serve, the data plane
runs it, :meth:`TrafficController.observe` feeds breakers and canary analysis, and
:meth:`TrafficController.shadow` mirrors the request when the rollout samples it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import numpy as np

from mcp2026ai.clock import Clock
from mcp2026ai.contract import GenerationSpec
from mcp2026ai.inference import InferenceRequest
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.breaker import BreakerBoard, Target, pick_target
from mcp2026ai.routing.chat_shadow import ChatShadowReporter
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.diff import Observation
from mcp2026ai.routing.manager import RolloutManager
from mcp2026ai.routing.outcome import Outcome, classify
from mcp2026ai.routing.report import ShadowKey, ShadowReporter
from mcp2026ai.routing.rollout import Verdict
from mcp2026ai.routing.router import RouteDecision, Router, RouteReason, count_route
from mcp2026ai.routing.shadow import ShadowMirror
from mcp2026ai.routing.store import RolloutStore
from mcp2026ai.routing.stream_window import StreamSample

ShadowCall = Callable[[], Awaitable[Mapping[str, np.ndarray]]]


@dataclass(frozen=True)
class Choice:
    target: Target
    decision: RouteDecision


class TrafficController:
    def __init__(self, registry: ModelRegistry, clock: Clock = time.monotonic) -> None:
        self.manager = RolloutManager(RolloutStore(registry), clock)
        self.router = Router()
        self.breakers = BreakerBoard(clock)
        self.reporter = ShadowReporter(registry.catalog)
        self.mirror = ShadowMirror(self.reporter)
        self.chat_reporter = ChatShadowReporter(registry.catalog)
        """Shadow diffs of chats per prompt (the data plane's chat mirror reports here)."""

    def rollout(self, model: str) -> RolloutConfig | None:
        return self.manager.config(model)

    def choose(self, request: InferenceRequest, default_version: str) -> Choice:
        """A version pinned in the URL is served as asked (integer aliases included); otherwise the
        X-Model-Version header, the rollout's canary weight and the circuit breakers decide."""
        model = request.model
        if request.version:
            return Choice(Target(model, request.version, "routed"), RouteDecision(request.version, RouteReason.PINNED))
        config = self.manager.config(model)
        decision = self.router.route(request, config)
        target = pick_target(model, decision.version or default_version, config, self.breakers)
        return Choice(target, decision)

    def observe(
        self, choice: Choice, model: str, served_version: str, error: BaseException | None, ms: float
    ) -> Outcome:
        outcome = classify(error)
        if outcome in (Outcome.OK, Outcome.SERVER_ERROR):  # neither the caller's fault nor load shedding
            self.breakers.record(choice.target.model, served_version, outcome is Outcome.OK)
        self.manager.observe(model, served_version, outcome, ms)
        count_route(model, choice.decision, served_version)
        return outcome

    def observe_stream(
        self, choice: Choice, model: str, served_version: str, sample: StreamSample, promises: GenerationSpec | None
    ) -> None:
        """A finished generation: its outcome feeds the breakers; the canary analysis judges its
        TTFT, ITL and tokens against ``promises`` (the served version's contract)."""
        if sample.outcome in (Outcome.OK, Outcome.SERVER_ERROR):
            self.breakers.record(choice.target.model, served_version, sample.outcome is Outcome.OK)
        self.manager.observe_stream(model, served_version, sample, promises)
        count_route(model, choice.decision, served_version)

    def shadow(self, model: str, primary_version: str, primary: Observation, version: str, run: ShadowCall) -> None:
        self.mirror.mirror(ShadowKey(model, primary_version, version), primary, run)

    def tick(self) -> dict[str, Verdict]:
        """Evaluate due canaries (rolling back failing ones); the verdicts by model."""
        return self.manager.tick()

    def refresh(self) -> None:
        self.manager.refresh()
        self.reporter.flush()
        self.chat_reporter.flush()

    async def refresh_off_loop(self) -> None:
        """:meth:`refresh` with its catalog reads and writes on a worker thread (they grow with the
        rollout history and the number of models) and only the installing on the event loop."""
        snapshot = await asyncio.to_thread(self.manager.read, self.manager.known_models())
        self.manager.install(snapshot)
        await asyncio.to_thread(self.reporter.write, self.reporter.take())
        await asyncio.to_thread(self.chat_reporter.write, self.chat_reporter.take())

    async def drain(self, timeout_s: float) -> None:
        await self.mirror.drain(timeout_s)
        self.reporter.flush()
        self.chat_reporter.flush()
