"""Models pulled from a server into a cache folder; one stays usable for ``ttl_s`` after its pull.

A pull reads the version's package (record + signatures), then its artifact only when the folder
does not already hold bytes with that digest; a refresh that finds the same digest keeps the loaded
model. Freshness is a :class:`cachetools.TTLCache`: an entry past its TTL is gone, and the proxy
pulls again (or goes remote when it cannot).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from mcp2026ai.client.http import Call, V2HttpClient, model_path
from mcp2026ai.edge.local import LocalModel, from_package
from mcp2026ai.extras import require
from mcp2026ai.registry.package import ModelPackage
from mcp2026ai.security.files import atomic_write
from mcp2026ai.security.trust import TrustedKeys


class PulledModels:
    def __init__(self, folder: Path, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        cachetools = require("cachetools", "the edge proxy")
        self.folder = folder
        self._fresh = cachetools.TTLCache(maxsize=64, ttl=ttl_s, timer=clock)
        self._loaded: dict[str, LocalModel] = {}

    def fresh(self, model_id: str) -> LocalModel | None:
        model: LocalModel | None = self._fresh.get(model_id)
        return model

    def pull(self, client: V2HttpClient, model_id: str, version: str | None, trusted: TrustedKeys | None) -> LocalModel:
        path = model_path(model_id, version)
        package = ModelPackage.model_validate_json(client.send(Call("GET", path + "/package")).content)
        record = package.record
        current = self._loaded.get(model_id)
        if current is None or current.record.digest != record.digest:
            data = self._cached_bytes(record.digest)
            downloaded = data is None
            if data is None:
                data = client.send(Call("GET", path + "/artifact")).content
            source = f"pulled from {client.base_url}"
            current = from_package(record, data, package.signatures, trusted, source)  # verified first
            if downloaded:
                atomic_write(self._file(record.digest), data)
            self._loaded[model_id] = current
        self._fresh[model_id] = current
        return current

    def _file(self, digest: str) -> Path:
        return self.folder / f"{digest}.artifact"

    def _cached_bytes(self, digest: str) -> bytes | None:
        file = self._file(digest)
        if not file.is_file():
            return None
        data = file.read_bytes()
        return data if hashlib.sha256(data).hexdigest() == digest else None
