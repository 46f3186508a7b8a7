"""Every way the running server adds a registry version is in the audit log as a model.register: the
hot reload of a watched model file. (A Triton ``file:`` load registers nothing: tests/integration/
test_uploads.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mcp2026ai.registry import ModelRegistry, audit_trail
from mcp2026ai.security import AuditLog, ServingSecurity
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.serving.sync import HOT_RELOAD_ACTOR
from mcp2026ai.testing import BackgroundServer
from tests.support.models import mlp_model


def _config(log: Path) -> ServerConfig:
    return ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=ServingSecurity(audit_log=log))


def _registrations(log: AuditLog) -> list[dict[str, Any]]:
    return [entry for entry in log.entries() if entry["action"] == "model.register"]


def test_a_hot_reloaded_model_file_is_audited_as_a_registration(tmp_path: Path) -> None:
    watched = mlp_model(tmp_path / "mlp.onnx")
    registry = ModelRegistry(tmp_path / "home")
    registry.register_or_reuse("mlp", watched)  # as `mcp serve --model-path` does (before the audit log here)
    log = AuditLog(tmp_path / "audit.jsonl")
    with BackgroundServer(registry, ["mlp"], _config(log.path)) as server:
        sync = server.server.sync  # type: ignore[union-attr]
        sync.watched["mlp"] = watched
        server.call(sync.sync_once())  # notes the file's digest
        shutil.copyfile(mlp_model(tmp_path / "mlp-v2.onnx", seed=9), watched)
        server.call(sync.sync_once())  # registers and serves 1.1.0
        assert server.plane.models.default_version("mlp") == "1.1.0"
    [registered] = _registrations(log)
    assert (registered["target"], registered["actor"]) == ("mlp:1.1.0", HOT_RELOAD_ACTOR)
    assert registered["details"]["source"] == str(watched)
    [missing] = audit_trail.unaudited_versions(registry.catalog, log)  # 1.0.0 predates the audit log
    assert missing.record.ref == "mlp:1.0.0" and not missing.interrupted
