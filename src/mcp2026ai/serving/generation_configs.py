"""`mcp serve --config mcp-config.yaml`: apply each file's generation defaults to the served
language model it names, and re-apply them when the file changes.

A change is picked up within ``interval_s`` and applied without touching the engine: requests
admitted from then on get the new defaults, generations already running keep the parameters they
started with (no stream is broken, no model reloaded). An edit that does not validate is logged and
the previous defaults stay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from mcp2026ai.errors import MCPError
from mcp2026ai.serving.llm_config import load_serving_config
from mcp2026ai.serving.llms import GenerationModels

log = logging.getLogger(__name__)


class GenerationConfigWatcher:
    def __init__(self, generation: GenerationModels, paths: list[Path], interval_s: float = 0.25) -> None:
        self.generation = generation
        self.paths = list(paths)
        self.interval_s = interval_s
        self._seen: dict[Path, tuple[int, int]] = {}
        self._task: asyncio.Task[None] | None = None
        self.reloads = 0

    def apply_all(self) -> None:
        """Apply every file now (at start-up: an invalid file or an unserved model is an error)."""
        for path in self.paths:
            self._seen[path] = _stamp(path)
            self.generation.configure(load_serving_config(path))

    def start(self) -> None:
        self.apply_all()
        if self.paths:
            self._task = asyncio.create_task(self._watch(), name="generation-config-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            for path in self.paths:
                self._reload_if_changed(path)

    def _reload_if_changed(self, path: Path) -> None:
        stamp = _stamp(path)
        if stamp == self._seen.get(path):
            return
        self._seen[path] = stamp
        started = time.perf_counter()
        try:
            config = load_serving_config(path)
            self.generation.configure(config)
        except MCPError as exc:
            log.error("config %s not applied, the previous defaults stay: %s", path, exc)
            return
        self.reloads += 1
        elapsed_ms = (time.perf_counter() - started) * 1000
        log.warning("reloaded the generation defaults of %s from %s in %.1f ms", config.model, path, elapsed_ms)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        status = path.stat()
    except OSError:
        return (0, 0)
    return (status.st_mtime_ns, status.st_size)
