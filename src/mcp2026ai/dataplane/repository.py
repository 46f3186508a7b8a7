"""The model repository's use cases: index, load (with Triton's ``config`` and ``file:`` parameters),
unload, and the rollout tick; every load and unload, refusals included, is written to the audit log.

Language models (serving/llms.py) are loaded and unloaded here too: an unload stops routing to the
model at once and returns when every generation it accepted has ended (up to the drain timeout) and
its engines are closed and their memory returned; a load needs no restart. Sentence encoders are
tensor models and follow the tensor path."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
from typing import Any

from mcp2026ai.errors import InvalidArgumentError, MCPError, PermissionDeniedError
from mcp2026ai.registry import ModelVersion
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.security.audit import AuditLog
from mcp2026ai.serving.llms import GenerationModels
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.overrides import ConfigOverride, parse_config_override
from mcp2026ai.serving.uploads import Upload, file_number, resolve_upload

SYSTEM_ACTOR = "system"
ROLLBACK_ACTOR = "system:canary-analysis"


class RepositoryHandlers:
    def __init__(
        self,
        models: ServedModels,
        traffic: TrafficController,
        audit: AuditLog | None = None,
        llms: GenerationModels | None = None,
    ) -> None:
        self.models = models
        self.traffic = traffic
        self.audit = audit
        self.llms = llms or GenerationModels(models.registry)

    def index(self) -> list[dict[str, str]]:
        """Every registered model with its state; a language model's loaded versions are READY."""
        rows = [row for row in self.models.index() if not self.llms.serves(row["name"])]
        for row in rows:
            evicted = self.llms.eviction_reason(row["name"]) if row["state"] == "UNAVAILABLE" else None
            row["reason"] = evicted or row["reason"]
        for name in self.llms.names():
            versions = sorted(served.record.version for served in self.llms.served_versions(name))
            rows += [{"name": name, "version": version, "state": "READY", "reason": ""} for version in versions]
        return sorted(rows, key=lambda row: row["name"])

    async def _load_language_model(self, name: str, parameters: dict[str, Any]) -> ModelVersion | None:
        """Load ``name`` as a language model when it is one (None: a tensor model); Triton's ``config``
        and ``file:`` parameters describe tensor models, so they are refused for it, naming them."""
        if self.models.is_loaded(name) or not await asyncio.to_thread(self.llms.is_language_model, name):
            return None
        if parameters:
            listed = ", ".join(sorted(parameters))[:200]
            raise InvalidArgumentError(f"load {name!r}: a language model takes no load parameters (got {listed})")
        return await self.llms.load(name, reason="repository")

    async def load(
        self,
        name: str,
        actor: str = SYSTEM_ACTOR,
        details: dict[str, Any] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        """Load a model's default version, with Triton's ``config`` override among ``parameters`` if
        given; recorded in the audit log, refusals and failures included."""
        details = dict(details or {})
        try:
            record = await self._load_language_model(name, parameters or {})
            if record is None:
                override = _load_override(name, parameters or {})
                upload = await self._upload(name, parameters or {}, details)
                if upload is not None:
                    details["ephemeral"] = upload.ephemeral
                if upload is not None and upload.ephemeral:
                    served = await self.models.load_upload(upload.record, upload.backend, override)
                else:
                    version = upload.record.version if upload is not None else None
                    served = await self.models.load(name, version, override=override, reason="repository")
                record = served.record
        except MCPError as exc:
            await self._record("model.load", actor, name, {**details, **_refusal(exc)})
            raise
        except Exception as exc:  # still audited: every attempt is in the log
            await self._record("model.load", actor, name, {**details, "result": "failed", "error": type(exc).__name__})
            raise
        outcome = {"result": "ok", "digest": record.digest}
        await self._record("model.load", actor, record.ref, {**details, **outcome})

    async def _upload(self, name: str, parameters: dict[str, Any], details: dict[str, Any]) -> Upload | None:
        """A model file sent with ``load`` (Triton's ``file:<version>/model.onnx`` parameter, base64 over
        HTTP, bytes over gRPC): served as Triton does, never registered (serving/uploads.py); None when
        the load names no file."""
        files = {key: value for key, value in parameters.items() if key.startswith("file:")}
        if not files:
            return None
        if "config" not in parameters:
            raise InvalidArgumentError(f"load {name!r}: file: parameters need a 'config' parameter too, as in Triton")
        if len(files) != 1 or not next(iter(files)).endswith(".onnx"):
            listed = ", ".join(sorted(files))[:200]
            raise InvalidArgumentError(
                f"load {name!r}: expected one 'file:<version>/<name>.onnx' parameter, got {listed}"
            )
        key, value = next(iter(files.items()))
        number, data = file_number(key, name), _file_bytes(value)
        details["upload"] = hashlib.sha256(data).hexdigest()  # the attempt is audited with what was sent
        signed_only = self.models.requires_signatures
        return await asyncio.to_thread(resolve_upload, self.models.registry, name, data, number, signed_only)

    async def unload(self, name: str, actor: str = SYSTEM_ACTOR, details: dict[str, Any] | None = None) -> None:
        try:
            if self.llms.serves(name) and not self.models.is_loaded(name):
                await self.llms.unload(name)  # returns once its accepted generations have ended
            else:
                await self.models.unload(name)
        except MCPError as exc:
            await self._record("model.unload", actor, name, {**(details or {}), **_refusal(exc)})
            raise
        await self._record("model.unload", actor, name, {**(details or {}), "result": "ok"})

    def tick(self) -> None:
        """Let canary analysis run; automatic rollbacks are recorded in the audit log."""
        names = [*self.models.loaded_names(), *self.llms.names()]
        rollouts = {name: self.traffic.rollout(name) for name in names}
        for model, verdict in self.traffic.tick().items():
            canary = getattr(rollouts.get(model), "canary", None)
            if verdict.rollback and self.audit is not None:
                target = f"{model}:{canary}" if canary else model
                self.audit.record("rollout.rollback", ROLLBACK_ACTOR, target, {"reason": verdict.reason})

    async def _record(self, action: str, actor: str, target: str, details: dict[str, Any]) -> None:
        if self.audit is not None:
            await asyncio.to_thread(self.audit.record, action, actor, target, details)


def _load_override(name: str, parameters: dict[str, Any]) -> ConfigOverride | None:
    """Triton's ``config`` load parameter (a JSON model configuration), as the override it means."""
    config = parameters.get("config")
    if config is None:
        return None
    if not isinstance(config, str):
        raise InvalidArgumentError(f"load {name!r}: the 'config' parameter must be a JSON string")
    return parse_config_override(config, name)


def _file_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError("a file: load parameter must be base64 text (HTTP) or bytes (gRPC)")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError("a file: load parameter is not valid base64") from None


def _refusal(error: MCPError) -> dict[str, str]:
    return {"result": "denied" if isinstance(error, PermissionDeniedError) else "failed", "error": str(error)}
