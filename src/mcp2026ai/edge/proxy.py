"""``ModelProxy``: run a model on this device when it can, on the server when it must.

::

    from mcp2026ai.edge import ModelProxy
    proxy = ModelProxy(model_id="resnet50-quant-v3", cache_ttl=300, fallback_url="https://host/api/v1/predict")
    result = proxy.infer(image_bytes)        # or a dict of arrays
    result.path, result.reason              # "local", "pulled from https://host" / "remote", "..."

The local path, in order: the version in this device's registry (``MCP_HOME``), else a copy pulled
from the server (the fallback URL's origin, or ``server_url``) and still fresh (``cache_ttl``
seconds). Either is verified before use: its bytes must match the registered digest and, unless
``require_signed=False``, carry a signature by a trusted key (``MCP_HOME/trusted`` or
``trusted_keys``). The remote path serves when there is no usable local model, when the local run
fails for a reason other than the caller's input, or when ``max_local_inflight`` calls are already
running locally (overload). A caller's mistake (a bad tensor) is raised, not retried remotely.
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from mcp2026ai.client.http import V2HttpClient
from mcp2026ai.edge.local import LocalModel, from_registry
from mcp2026ai.edge.pulled import PulledModels
from mcp2026ai.edge.remote import AsyncRemoteModel, RemoteEndpoints, RemoteModel
from mcp2026ai.edge.result import EdgeResult
from mcp2026ai.errors import InvalidArgumentError, MCPError, NotFoundError, UnavailableError
from mcp2026ai.inference import InferenceResponse
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security.config import SecurityPaths
from mcp2026ai.security.trust import TrustConfig, TrustedKeys
from mcp2026ai.settings import Settings

Inputs = bytes | Mapping[str, np.ndarray]
CATALOG_FILE = "registry.db"


class _LocalSide:
    """Finds and holds the local model; shared by the blocking and the asyncio proxy."""

    def __init__(
        self,
        model_id: str,
        version: str | None,
        cache_ttl: float,
        home: Path,
        server_url: str | None,
        token: str | None,
        trusted: TrustedKeys | None,
    ) -> None:
        self.model_id, self.version = model_id, version
        self.home, self.trusted = home, trusted
        self.pulled = PulledModels(home / "edge-cache", cache_ttl)
        self.server = V2HttpClient(server_url, token) if server_url else None
        self._registry_model: LocalModel | None = None
        self._lock = threading.Lock()

    def find(self) -> tuple[LocalModel | None, str]:
        """The usable local model and its source, or None and why there is none."""
        with self._lock:
            try:
                model = self._from_registry()
            except MCPError as exc:
                return None, f"local registry: {exc}"
            if model is not None:
                return model, model.source
            fresh = self.pulled.fresh(self.model_id)
            if fresh is not None:
                return fresh, fresh.source
            if self.server is None:
                return None, "not in the local registry and no server to pull from"
            try:
                model = self.pulled.pull(self.server, self.model_id, self.version, self.trusted)
            except MCPError as exc:
                return None, f"pull failed: {exc}"
            return model, model.source

    def _from_registry(self) -> LocalModel | None:
        if self._registry_model is not None:
            return self._registry_model
        if not (self.home / CATALOG_FILE).is_file():
            return None
        registry = ModelRegistry(self.home)
        try:
            record = registry.resolve(self.model_id, self.version)
        except NotFoundError:
            return None
        self._registry_model = from_registry(registry, record, self.trusted)
        return self._registry_model

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def _trusted(
    require_signed: bool, trusted_keys: TrustedKeys | list[Path] | None, settings: Settings
) -> TrustedKeys | None:
    if not require_signed:
        return None
    if isinstance(trusted_keys, TrustedKeys):
        return trusted_keys
    paths = SecurityPaths.from_settings(settings)
    config = TrustConfig(trusted_dir=paths.trusted_dir, trusted_keys=[*settings.trusted_keys, *(trusted_keys or [])])
    return TrustedKeys.from_config(config)


Remote = TypeVar("Remote", RemoteModel, AsyncRemoteModel)


class _ProxyBase(ABC, Generic[Remote]):
    def __init__(
        self,
        model_id: str,
        cache_ttl: float = 300,
        fallback_url: str | None = None,
        *,
        version: str | None = None,
        server_url: str | None = None,
        home: Path | None = None,
        token: str | None = None,
        require_signed: bool = True,
        trusted_keys: TrustedKeys | list[Path] | None = None,
        max_local_inflight: int = 4,
        top_k: int = 5,
    ) -> None:
        settings = Settings() if home is None else Settings(home=home)
        pull_from = server_url or (RemoteEndpoints.parse(fallback_url).base_url if fallback_url else None)
        trusted = _trusted(require_signed, trusted_keys, settings)
        self.model_id, self.fallback_url, self.top_k = model_id, fallback_url, top_k
        self.max_local_inflight = max_local_inflight
        self.local = _LocalSide(model_id, version, cache_ttl, settings.home, pull_from, token, trusted)
        self.token = token
        self.remote: Remote | None = self._remote_for(fallback_url) if fallback_url else None
        self._inflight = 0
        self._count_lock = threading.Lock()

    def _claim_local(self) -> bool:
        with self._count_lock:
            if self._inflight >= self.max_local_inflight:
                return False
            self._inflight += 1
            return True

    def _release_local(self) -> None:
        with self._count_lock:
            self._inflight -= 1

    def _run_local(self, model: LocalModel, data: Inputs, started: float) -> EdgeResult:
        record = model.record
        if isinstance(data, bytes | bytearray):
            predictions = model.classify(bytes(data), self.top_k)
            return EdgeResult("local", model.source, record.name, record.version, _ms(started), predictions=predictions)
        outputs = model.infer(data)
        return EdgeResult("local", model.source, record.name, record.version, _ms(started), outputs=outputs)

    def _try_local(self, data: Inputs, started: float) -> tuple[EdgeResult | None, str]:
        model, why = self.local.find()
        if model is None:
            return None, why
        if not self._claim_local():
            return None, f"local busy ({self.max_local_inflight} in flight)"
        try:
            return self._run_local(model, data, started), why
        except InvalidArgumentError:
            raise  # the caller's input is wrong here and would be wrong there
        except MCPError as exc:
            return None, f"local failed: {exc}"
        finally:
            self._release_local()

    @abstractmethod
    def _remote_for(self, url: str) -> Remote:
        """The remote path to ``url`` (blocking or asyncio)."""

    def _no_fallback(self, why: str) -> UnavailableError:
        return UnavailableError(f"{self.model_id}: cannot run locally ({why}) and no fallback_url is set")

    def _from_image_answer(self, why: str, answer: dict[str, Any], started: float) -> EdgeResult:
        model, version = answer.get("model", self.model_id), answer.get("version", "")
        predictions = list(answer.get("predictions", []))
        return EdgeResult("remote", why, model, version, _ms(started), predictions=predictions)

    @staticmethod
    def _from_response(why: str, response: InferenceResponse, started: float) -> EdgeResult:
        return EdgeResult("remote", why, response.model, response.version, _ms(started), outputs=response.outputs)


class ModelProxy(_ProxyBase[RemoteModel]):
    """Blocking edge proxy (thread-safe)."""

    def _remote_for(self, url: str) -> RemoteModel:
        return RemoteModel(self.model_id, url, self.token)

    def infer(self, data: Inputs) -> EdgeResult:
        """Run ``data`` (an encoded image, or input arrays by name) locally or remotely."""
        started = time.perf_counter()
        result, why = self._try_local(data, started)
        if result is not None:
            return result
        if self.remote is None:
            raise self._no_fallback(why)
        if isinstance(data, bytes | bytearray):
            return self._from_image_answer(why, self.remote.classify(bytes(data), self.top_k), started)
        return self._from_response(why, self.remote.infer(data), started)

    def close(self) -> None:
        self.local.close()
        if self.remote is not None:
            self.remote.close()

    def __enter__(self) -> ModelProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncModelProxy(_ProxyBase[AsyncRemoteModel]):
    """The asyncio variant: local work (pull, inference) runs in a worker thread, remote calls on the loop."""

    def _remote_for(self, url: str) -> AsyncRemoteModel:
        return AsyncRemoteModel(self.model_id, url, self.token)

    async def infer(self, data: Inputs) -> EdgeResult:
        started = time.perf_counter()
        result, why = await asyncio.to_thread(self._try_local, data, started)
        if result is not None:
            return result
        if self.remote is None:
            raise self._no_fallback(why)
        if isinstance(data, bytes | bytearray):
            return self._from_image_answer(why, await self.remote.classify(bytes(data), self.top_k), started)
        return self._from_response(why, await self.remote.infer(data), started)

    async def aclose(self) -> None:
        self.local.close()
        if self.remote is not None:
            await self.remote.aclose()

    async def __aenter__(self) -> AsyncModelProxy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
