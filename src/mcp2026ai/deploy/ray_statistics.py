"""Triton statistics for the whole Ray Serve deployment, whichever replica a statistics request reaches.

Each replica keeps its own counters, and Ray's proxy hands each statistics request to any replica.
Answering with its own counters alone, a deployment's counts would go back and forth from one request to
the next: perf_analyzer, which reads them before and after each measurement window and looks for the
version whose queue count grew, then fails with "failed to find the requested model version" whenever
the second read reaches a replica that has served fewer requests than the first one's.

So replicas report their counters to a board (a small Ray actor on the head node, named in the app's
namespace) every :data:`REPORT_INTERVAL_S` and as they answer a statistics request, and the answer is
the sum of every replica's latest report: what ``--workers`` does over its processes
(server/statistics.py). A replica that stopped or died keeps its last report in the sum, so the totals
never go back (like a Triton server's counters since it started); another replica's counts are at most
one interval old.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.server.statistics import ServerStatistics, Statistics, merge_statistics

log = logging.getLogger(__name__)

BOARD_NAME = "mcp2026ai-statistics"
REPORT_INTERVAL_S = 0.5
BOARD_TIMEOUT_S = 5.0


class StatisticsBoard:
    """The Ray actor holding every replica's latest statistics (a few kB each)."""

    def __init__(self) -> None:
        self._latest: dict[str, Statistics] = {}

    def report(self, replica: str, statistics: Statistics) -> None:
        self._latest[replica] = statistics

    def total(self) -> Statistics:
        return merge_statistics(self._latest.values())


def start_board(namespace: str, head_resource: str) -> Any:
    """The board (created by the driver, on the head node, no CPU reserved; it lives as long as the
    driver that owns it): the handle, which the caller keeps."""
    import ray

    options = {"name": BOARD_NAME, "namespace": namespace, "get_if_exists": True, "num_cpus": 0}
    return ray.remote(StatisticsBoard).options(**options, resources={head_resource: 0.001}).remote()


def find_board(namespace: str) -> Any | None:
    """The driver's board from inside a replica, or None (logged: the replica then answers its own counts)."""
    import ray

    try:
        return ray.get_actor(BOARD_NAME, namespace=namespace)
    except ValueError:
        log.warning("no statistics board %r in namespace %r: statistics are this replica's only", BOARD_NAME, namespace)
        return None


class ReplicaStatistics(ServerStatistics):
    """A replica's statistics answers: the deployment's sums for the models this replica serves."""

    def __init__(self, plane: DataPlane, replica: str, board: Any | None) -> None:
        super().__init__(plane)
        self.replica = replica
        self.board = board
        self._reporting: asyncio.Task[None] | None = None
        self._warned = False

    async def model_statistics(self, name: str | None = None, version: str | None = None) -> Statistics:
        """Like :meth:`DataPlane.model_statistics` (same errors, same entries), each summed over the replicas."""
        local = self.plane.model_statistics(name, version)
        if self.board is None or not await self._report():
            return local
        try:
            async with asyncio.timeout(BOARD_TIMEOUT_S):
                total: Statistics = await self.board.total.remote()
        except Exception as exc:  # noqa: BLE001 (Ray's errors: the board is gone or slow)
            log.warning("statistics board unavailable (%s): answering this replica's counts", exc)
            return local
        summed = {(entry["name"], entry["version"]): entry for entry in total}
        return [summed.get((entry["name"], entry["version"]), entry) for entry in local]

    async def start(self) -> None:
        if self.board is not None:
            self._reporting = asyncio.create_task(self._report_every_interval())

    async def stop(self) -> None:
        if self._reporting is None:
            return
        self._reporting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reporting
        self._reporting = None
        await self._report()  # the last counts stay in the deployment's totals

    async def _report_every_interval(self) -> None:
        while True:
            await self._report()
            await asyncio.sleep(REPORT_INTERVAL_S)

    async def _report(self) -> bool:
        """Send this replica's counters to the board; False (logged) when it does not answer."""
        assert self.board is not None
        try:
            async with asyncio.timeout(BOARD_TIMEOUT_S):
                await self.board.report.remote(self.replica, self.plane.model_statistics())
        except Exception as exc:  # noqa: BLE001 (Ray's errors: the board is gone or slow)
            if not self._warned:  # once: the loop would repeat it every interval
                log.warning("statistics board unavailable (%s): answering this replica's counts", exc)
            self._warned = True
            return False
        return True
