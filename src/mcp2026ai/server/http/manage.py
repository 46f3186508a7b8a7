"""The management API over HTTP, under ``/v2/manage/``: what ``mcp model|rollout|policy|audit`` do on
the stores, for clients holding a server URL and a token instead of store credentials
(``mcp --server URL --token T ...``, :class:`mcp2026ai.client.Management`).

Scope: every route needs ``manage`` when ``--auth`` is on (server/http/auth.py). Each action runs
dataplane/management.py's use case off the event loop and is audited under the token's name
(``token:<name>``) with the CLI's action names and details.

Limits: JSON bodies ``--max-json-bytes``; an uploaded model file ``--max-request-bytes`` (larger
ones by URL), spooled to the registry's scratch folder and removed after its import. A URL to
register from must be ``https://`` to a public address (no loopback, private or link-local host: the
server must not be made to fetch from its own network) or ``s3://`` in the server's configured store.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcp2026ai.contract import InferenceContract
from mcp2026ai.dataplane import DataPlane, plans
from mcp2026ai.dataplane.management import ROLLOUT_FIELDS, Management, Registration
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import validated
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.registry import Stage
from mcp2026ai.registry.redaction import redacted_url
from mcp2026ai.registry.remote_sources import download
from mcp2026ai.security import TrustedKeys
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.auth import principal_of
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.manage_urls import check_fetchable

PREFIX = "/v2/manage"
UPLOAD_SUFFIXES = frozenset({".onnx", ".tflite", ".pt", ".gguf"})


class RegisterFromUrl(BaseModel):
    """``POST /v2/manage/models/{model}/register``: a model file at a URL, with the CLI's options."""

    model_config = ConfigDict(extra="forbid")
    url: str
    version: str | None = None
    stage: Stage = Stage.DEV
    tags: dict[str, str] = Field(default_factory=dict)
    contract: InferenceContract | None = None


class Promotion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stage: Stage


class RolloutChanges(BaseModel):
    """``PUT /v2/manage/rollouts/{model}``: the fields to change (``mcp rollout set``'s options)."""

    model_config = ConfigDict(extra="forbid")
    stable: str | None = None
    canary: str | None = None
    weight: int | None = None
    shadow: str | None = None
    shadow_percent: float | None = None
    fallback_model: str | None = None
    interval_s: float | None = None


def _json(document: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(document), status, media_type="application/json")


class ManagementEndpoints:
    def __init__(self, plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> None:
        self.plane = plane
        self.config = config
        self.bodies = bodies
        self.registry = plane.models.registry
        self.audit = config.security.audit()
        self.trusted = TrustedKeys.from_config(config.security.trust)

    def _management(self, request: Request) -> Management:
        return Management(self.registry, self.audit, principal_of(request).actor, self.trusted)

    async def _document(self, request: Request) -> Any:
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            return parse_json(raw) if raw.strip() else {}

    async def list_models(self, request: Request) -> Response:
        records = await asyncio.to_thread(self._management(request).versions, request.query_params.get("name"))
        return _json([record.model_dump(mode="json") for record in records])

    async def show(self, request: Request) -> Response:
        management, name = self._management(request), request.path_params["model"]
        return _json(await asyncio.to_thread(management.show, name, request.query_params.get("version")))

    async def upload(self, request: Request) -> Response:
        """The body is the model file; ``filename`` (its suffix picks the importer), ``version``,
        ``stage``, ``tag=key=value`` (repeatable) and ``contract`` (JSON) in the query."""
        query = request.query_params
        suffix = Path(query.get("filename", "")).suffix.lower()
        if suffix not in UPLOAD_SUFFIXES:
            raise InvalidArgumentError(f"filename: give the file's name, ending {', '.join(sorted(UPLOAD_SUFFIXES))}")
        asked = _registration(query.get("version"), query.get("stage"), query.getlist("tag"), query.get("contract"))
        folder = self._scratch()
        try:
            path = folder / f"upload{suffix}"
            async with read_body(request, self.config.max_request_bytes, self.bodies) as body:
                await asyncio.to_thread(path.write_bytes, body)
            record = await asyncio.to_thread(
                self._management(request).register, request.path_params["model"], path, asked, {"source": "upload"}
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return _json(record.model_dump(mode="json"), 201)

    async def register_url(self, request: Request) -> Response:
        asked = validated(RegisterFromUrl, await self._document(request))
        await asyncio.to_thread(check_fetchable, asked.url)
        registration = Registration(asked.version, asked.stage, asked.tags, asked.contract)
        management, folder = self._management(request), self._scratch()
        try:
            local = await asyncio.to_thread(download, asked.url, folder)
            details = {"source": redacted_url(asked.url)}
            record = await asyncio.to_thread(
                management.register, request.path_params["model"], local, registration, details
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return _json(record.model_dump(mode="json"), 201)

    def _scratch(self) -> Path:
        folder = self.registry.home / "tmp" / f"api-{uuid.uuid4().hex}"
        folder.mkdir(parents=True)
        return folder

    async def promote(self, request: Request) -> Response:
        stage = validated(Promotion, await self._document(request)).stage
        name, version = request.path_params["model"], request.path_params["version"]
        record = await asyncio.to_thread(self._management(request).promote, name, version, stage)
        return _json(record.model_dump(mode="json"))

    async def archive(self, request: Request) -> Response:
        name, version = request.path_params["model"], request.path_params["version"]
        record = await asyncio.to_thread(self._management(request).archive, name, version)
        return _json(record.model_dump(mode="json"))

    async def signature(self, request: Request) -> Response:
        management, name = self._management(request), request.path_params["model"]
        return _json(await asyncio.to_thread(management.signature, name, request.query_params.get("version")))

    async def rollout(self, request: Request) -> Response:
        management, name = self._management(request), request.path_params["model"]
        return _json(await asyncio.to_thread(management.rollout, name))

    async def set_rollout(self, request: Request) -> Response:
        changes = validated(RolloutChanges, await self._document(request))
        fields = changes.model_dump(include=set(ROLLOUT_FIELDS), exclude_none=True)
        name = request.path_params["model"]
        config = await asyncio.to_thread(self._management(request).set_rollout, name, fields, changes.interval_s)
        self.plane.traffic.manager.adopt(name, config)  # served from this request on
        return _json([config.model_dump(mode="json")])

    async def clear_rollout(self, request: Request) -> Response:
        name = request.path_params["model"]
        await asyncio.to_thread(self._management(request).clear_rollout, name)
        self.plane.traffic.manager.adopt(name, None)
        return _json({})

    async def explain(self, request: Request) -> Response:
        name, version = request.path_params["model"], request.query_params.get("version")
        explained = await asyncio.to_thread(plans.explanation, self.registry, name, version)
        return _json(plans.explanation_document(explained))

    async def trace(self, request: Request) -> Response:
        name, query = request.path_params["model"], request.query_params
        decisions = await asyncio.to_thread(plans.trace, self.registry, name, query.get("last"), query.get("version"))
        return _json([decision.model_dump(mode="json") for decision in decisions])

    async def audit_log(self, request: Request) -> Response:
        last = _count(request.query_params.get("last", "20"), "last")
        return _json(await asyncio.to_thread(self._management(request).audit_entries, last))


def _registration(version: str | None, stage: str | None, tags: list[str], contract: str | None) -> Registration:
    parsed_tags = {}
    for pair in tags:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"tag {pair!r}: expected key=value")
        parsed_tags[key] = value
    document = {"version": version, "stage": stage or Stage.DEV.value, "tags": parsed_tags}
    if contract:
        document["contract"] = parse_json(contract.encode("utf-8"))
    asked = validated(RegisterFromUrl, {"url": "-", **document})
    return Registration(asked.version, asked.stage, asked.tags, asked.contract)


def _count(text: str, field: str) -> int:
    if not text.isdigit():
        raise InvalidArgumentError(f"{field}: expected a whole number, got {text[:40]!r}")
    return int(text)


def management_routes(plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> list[Route]:
    endpoints = ManagementEndpoints(plane, config, bodies)
    model = f"{PREFIX}/models/{{model}}"
    return [
        Route(f"{PREFIX}/models", endpoints.list_models, methods=["GET"]),
        Route(model, endpoints.show, methods=["GET"]),
        Route(f"{model}/upload", endpoints.upload, methods=["POST"]),
        Route(f"{model}/register", endpoints.register_url, methods=["POST"]),
        Route(f"{model}/versions/{{version}}/promote", endpoints.promote, methods=["POST"]),
        Route(f"{model}/versions/{{version}}/archive", endpoints.archive, methods=["POST"]),
        Route(f"{model}/signature", endpoints.signature, methods=["GET"]),
        Route(f"{PREFIX}/rollouts/{{model}}", endpoints.rollout, methods=["GET"]),
        Route(f"{PREFIX}/rollouts/{{model}}", endpoints.set_rollout, methods=["PUT"]),
        Route(f"{PREFIX}/rollouts/{{model}}", endpoints.clear_rollout, methods=["DELETE"]),
        Route(f"{PREFIX}/plans/{{model}}/explain", endpoints.explain, methods=["GET"]),
        Route(f"{PREFIX}/plans/{{model}}/trace", endpoints.trace, methods=["GET"]),
        Route(f"{PREFIX}/audit", endpoints.audit_log, methods=["GET"]),
    ]
