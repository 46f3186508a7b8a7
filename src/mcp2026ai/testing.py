"""Run the real server in a background thread, for tests and notebooks.

    with BackgroundServer(registry, ["ocr-cls"]) as server:
        client = tritonclient.http.InferenceServerClient(server.http_url)

Both transports bind 127.0.0.1 on ephemeral ports; leaving the block shuts down gracefully.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from mcp2026ai.app import build_plane, load_models, serving_sync
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.lifecycle import InferenceServer

T = TypeVar("T")


class BackgroundServer:
    def __init__(
        self,
        registry: ModelRegistry,
        names: list[str],
        config: ServerConfig | None = None,
        plane: DataPlane | None = None,
    ) -> None:
        self.registry = registry
        self.names = names
        self.config = config or ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5)
        self.plane = plane or build_plane(registry, names, self.config)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="mcp-test-server", daemon=True)
        self.server: InferenceServer | None = None

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        try:
            self.call(load_models(self.plane, self.names, self.config))
            self.server = InferenceServer(self.plane, self.config, serving_sync(self.plane, self.config))
            self.call(self.server.start())
        except BaseException:
            self._shutdown_loop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.server is not None:
            self.call(self.server.stop(), timeout=60)
            self.server = None
        self._shutdown_loop()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    @property
    def http_port(self) -> int:
        assert self.server is not None
        return self.server.ports.http

    @property
    def grpc_port(self) -> int:
        assert self.server is not None and self.server.ports.grpc is not None
        return self.server.ports.grpc

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def _shutdown_loop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
