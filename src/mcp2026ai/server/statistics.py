"""Triton statistics for the whole server, also when ``mcp serve --workers N`` runs N processes.

Each worker keeps its own counters (:class:`~mcp2026ai.runtime.stats.ModelStats`). A statistics
request reaches whichever worker the kernel handed the connection, so that worker asks its siblings
for theirs and answers with the sum: what Triton reports and what perf_analyzer's before/after
snapshots need. Workers meet in a directory the parent creates (``ServerConfig.peer_dir``): each
answers on a unix socket named after its pid there, one JSON line in, one JSON line out.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import MCPError

log = logging.getLogger(__name__)

Statistics = list[dict[str, Any]]
PEER_TIMEOUT_S = 2.0
SOCKET_SUFFIX = ".sock"


class ServerStatistics:
    """This process's statistics; plus its sibling workers' when ``peer_dir`` is set."""

    def __init__(self, plane: DataPlane, peer_dir: Path | None = None) -> None:
        self.plane = plane
        self.peer_dir = peer_dir
        self._listener: asyncio.Server | None = None
        self._own_socket = peer_dir / f"{os.getpid()}{SOCKET_SUFFIX}" if peer_dir else None

    async def model_statistics(self, name: str | None = None, version: str | None = None) -> Statistics:
        """Like :meth:`DataPlane.model_statistics` (same errors), summed over every live worker."""
        local = self.plane.model_statistics(name, version)
        if self.peer_dir is None:
            return local
        answers = await asyncio.gather(*(self._ask(path, name, version) for path in self._peer_sockets()))
        return merge_statistics([local, *(answer for answer in answers if answer is not None)])

    async def start(self) -> None:
        """Answer siblings' statistics queries (only under ``--workers``)."""
        if self._own_socket is None:
            return
        with suppress(FileNotFoundError):
            self._own_socket.unlink()
        self._listener = await asyncio.start_unix_server(self._answer, path=str(self._own_socket))

    async def stop(self) -> None:
        if self._listener is None:
            return
        self._listener.close()
        await self._listener.wait_closed()
        self._listener = None
        if self._own_socket is not None:
            with suppress(FileNotFoundError):
                self._own_socket.unlink()

    def _peer_sockets(self) -> list[Path]:
        assert self.peer_dir is not None
        try:
            return [path for path in self.peer_dir.glob(f"*{SOCKET_SUFFIX}") if path != self._own_socket]
        except OSError:
            return []

    async def _ask(self, path: Path, name: str | None, version: str | None) -> Statistics | None:
        """A sibling's statistics, or None (logged) when it is gone, slow or does not serve the model."""
        try:
            async with asyncio.timeout(PEER_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(str(path))
                try:
                    writer.write(json.dumps({"name": name, "version": version}).encode() + b"\n")
                    await writer.drain()
                    reply = json.loads(await reader.readline())
                finally:
                    writer.close()
        except (OSError, TimeoutError, ValueError) as exc:
            log.debug("worker statistics from %s unavailable: %s", path.name, exc)
            return None
        if "error" in reply:
            log.debug("worker %s: %s", path.name, reply["error"])
            return None
        return list(reply["model_stats"])

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            query = json.loads(await reader.readline())
            try:
                reply: dict[str, Any] = {"model_stats": self.plane.model_statistics(query["name"], query["version"])}
            except MCPError as exc:
                reply = {"error": str(exc)}
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (OSError, ValueError, KeyError) as exc:
            log.debug("bad worker statistics query: %s", exc)
        finally:
            writer.close()


def merge_statistics(parts: Iterable[Statistics]) -> Statistics:
    """Sum per (name, version): counts and durations add up, ``last_inference`` is the latest."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for part in parts:
        for entry in part:
            key = (entry["name"], entry["version"])
            if key in merged:
                _add_into(merged[key], entry)
            else:
                merged[key] = copy.deepcopy(entry)
    return list(merged.values())


def _add_into(total: dict[str, Any], entry: dict[str, Any]) -> None:
    total["last_inference"] = max(total.get("last_inference", 0), entry.get("last_inference", 0))
    for field in ("inference_count", "execution_count"):
        total[field] = total.get(field, 0) + entry.get(field, 0)
    _add_durations(total.setdefault("inference_stats", {}), entry.get("inference_stats", {}))
    batches = {batch["batch_size"]: batch for batch in total.setdefault("batch_stats", [])}
    for batch in entry.get("batch_stats", []):
        if batch["batch_size"] in batches:
            _add_durations(batches[batch["batch_size"]], batch)
        else:
            total["batch_stats"].append(copy.deepcopy(batch))


def _add_durations(total: dict[str, Any], entry: dict[str, Any]) -> None:
    """Add every ``{"count": n, "ns": t}`` member of ``entry`` into ``total``."""
    for name, value in entry.items():
        if isinstance(value, dict) and "count" in value:
            into = total.setdefault(name, {"count": 0, "ns": 0})
            into["count"] += value["count"]
            into["ns"] += value.get("ns", 0)
