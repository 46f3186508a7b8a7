"""Run-time re-planning: feed each served version's p99 per window to its ReplanMonitor and swap the
re-planned backend in (a fresh load of the same version; in-flight requests finish on the old one)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import numpy as np

from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.records import Decision
from mcp2026ai.policy.replan import ReplanMonitor, ReplanPolicy
from mcp2026ai.registry.pipelines import is_pipeline
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.served_model import ServedModel

log = logging.getLogger(__name__)
MIN_WINDOW_REQUESTS = 20


class ReplanSupervisor:
    def __init__(
        self, models: ServedModels, orchestrator: PolicyOrchestrator, policy: ReplanPolicy | None = None
    ) -> None:
        self.models = models
        self.orchestrator = orchestrator
        self.policy = policy or ReplanPolicy()
        self._monitors: dict[tuple[str, str], ReplanMonitor] = {}
        self._swaps: set[asyncio.Task[object]] = set()
        self._due_swaps: list[tuple[str, str, bool]] = []
        self._observing = asyncio.Lock()  # one window judgement at a time: monitors keep streaks

    def observe_windows(self) -> list[Decision]:
        """Close the current window of every served version with a contract and start the swaps of
        those re-planned (on the event loop); returns the re-plan decisions."""
        decisions = self._judge_windows()
        self._start_due_swaps()
        return decisions

    async def observe(self) -> list[Decision]:
        """:meth:`observe_windows`, judged on a worker thread so that the loop keeps serving: a re-plan
        reads and writes the policy log, may write an optimized model, and without a logged decision
        profiles candidates (seconds)."""
        async with self._observing:
            decisions = await asyncio.to_thread(self._judge_windows)
        self._start_due_swaps()
        return decisions

    def _judge_windows(self) -> list[Decision]:
        decisions = []
        for name in self.models.loaded_names():
            for served in self.models.served_versions(name):
                decision = self._observe(served)
                if decision is not None:
                    decisions.append(decision)
        return decisions

    def _observe(self, served: ServedModel) -> Decision | None:
        latencies = served.stats.take_window()
        if is_pipeline(served.record):  # its model steps are watched as models (`mcp policy plan` splits it)
            return None
        if served.record.contract is None or len(latencies) < MIN_WINDOW_REQUESTS:
            return None
        p99 = float(np.percentile(latencies, 99))
        return self._monitor(served).observe(p99)

    def _monitor(self, served: ServedModel) -> ReplanMonitor:
        key = (served.record.name, served.record.version)
        if key not in self._monitors:
            self._monitors[key] = self.orchestrator.monitor(served.record, self._swap_in(served), self.policy)
        return self._monitors[key]

    def _swap_in(self, served: ServedModel) -> Callable[[Decision], None]:
        name, version = served.record.name, served.record.version

        def swap(decision: Decision) -> None:
            was_default = self.models.default_version(name) == version
            log.info("re-planned %s:%s: %s", name, version, decision.reason)
            self._due_swaps.append((name, version, was_default))

        return swap

    def _start_due_swaps(self) -> None:
        """A fresh load of each re-planned version (in-flight requests finish on the old backend)."""
        due, self._due_swaps = self._due_swaps, []
        for name, version, was_default in due:
            task = asyncio.get_running_loop().create_task(self.models.load(name, version, was_default))
            self._swaps.add(task)
            task.add_done_callback(self._swaps.discard)

    async def wait_swaps(self) -> None:
        if self._swaps:
            await asyncio.gather(*self._swaps, return_exceptions=True)
