"""``/v1/files`` and ``/v1/batches``, shaped as OpenAI's (the official client's ``files.create``,
``batches.create|retrieve|list|cancel`` and ``files.content`` work unchanged).

Scope with ``--auth``: ``infer`` (a batch is inference); each file and batch belongs to the token
that created it and is invisible to others (404). Limits: a file at most ``--max-request-bytes``
(a 400 naming ``file`` above), at most 50,000 lines (lines.py); every line is checked when the batch
is created, and a bad one is a 400 naming it, before anything runs. Files and batches are kept in the
registry's stores (store.py); nothing else is written.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import InvalidFieldError, MCPError, PayloadTooLargeError
from mcp2026ai.messages import validated
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.auth import principal_of
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.openai.batch.lines import ENDPOINTS, parse_lines
from mcp2026ai.server.http.openai.batch.runner import BatchRunner
from mcp2026ai.server.http.openai.batch.store import ACTIVE, BatchStore, new_id
from mcp2026ai.server.http.openai.errors import openai_error

COMPLETION_WINDOW = "24h"


class BatchCreate(BaseModel):
    """``POST /v1/batches``."""

    model_config = ConfigDict(extra="forbid")
    input_file_id: str
    endpoint: str
    completion_window: str = COMPLETION_WINDOW
    metadata: dict[str, str] | None = Field(None, max_length=16)


def _json(document: Any) -> Response:
    return Response(orjson.dumps(document), media_type="application/json")


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in ("owner", "digest")}


async def _replayed_form(request: Request, body: bytes) -> Any:
    """The multipart form of a body already read (and bounded) by read_body."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return await Request(request.scope, receive).form(max_files=1, max_fields=8)


class BatchEndpoints:
    def __init__(self, plane: DataPlane, config: ServerConfig, bodies: BodyBudget) -> None:
        self.config = config
        self.bodies = bodies
        self.store = BatchStore(plane.models.registry)
        self.runner = BatchRunner(self.store, plane, config.batch_lines_in_flight)

    def attach(self, app: ASGIApp) -> None:
        self.runner.attach(app)

    async def create_file(self, request: Request) -> Response:
        self.runner.ensure_resumed()
        try:
            async with read_body(request, self.config.max_request_bytes, self.bodies) as body:
                form = await _replayed_form(request, body)
            upload, purpose = form.get("file"), form.get("purpose")
            if purpose != "batch":
                raise InvalidFieldError(f"purpose: only 'batch' is supported (got {str(purpose)[:40]!r})", "purpose")
            if not isinstance(upload, UploadFile):
                raise InvalidFieldError("file: a multipart file field is required", "file")
            data = await upload.read()
            name, owner = upload.filename or "input.jsonl", principal_of(request).actor
            record = await self._thread(self.store.put_file, data, name, "batch", owner)
        except PayloadTooLargeError:
            limit = self.config.max_request_bytes
            return openai_error(InvalidFieldError(f"file: larger than the {limit}-byte limit", "file"))
        except MCPError as exc:
            return openai_error(exc)
        return _json(record)

    async def file(self, request: Request) -> Response:
        try:
            record = self.store.file(request.path_params["file_id"], principal_of(request).actor)
        except MCPError as exc:
            return openai_error(exc)
        return _json(_public(record))

    async def file_content(self, request: Request) -> Response:
        owner = principal_of(request).actor
        try:
            data = await self._thread(self.store.file_bytes, request.path_params["file_id"], owner)
        except MCPError as exc:
            return openai_error(exc)
        return Response(data, media_type="application/jsonl")

    async def create_batch(self, request: Request) -> Response:
        self.runner.ensure_resumed()
        owner = principal_of(request).actor
        try:
            async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
                asked = validated(BatchCreate, parse_json(raw))
            if asked.endpoint not in ENDPOINTS:
                raise InvalidFieldError(f"endpoint: one of {', '.join(ENDPOINTS)}", "endpoint")
            if asked.completion_window != COMPLETION_WINDOW:
                raise InvalidFieldError(f"completion_window: only {COMPLETION_WINDOW!r}", "completion_window")
            data = await self._thread(self.store.file_bytes, asked.input_file_id, owner)
            lines = parse_lines(data, asked.endpoint)
        except MCPError as exc:
            return openai_error(exc)
        batch = self._new_batch(asked, len(lines), owner)
        await self._thread(self.store.save, batch)
        self.runner.start(batch["id"])
        return _json(_public(batch))

    @staticmethod
    def _new_batch(asked: BatchCreate, total: int, owner: str) -> dict[str, Any]:
        now = int(time.time())
        return {
            "id": new_id("batch"),
            "object": "batch",
            "endpoint": asked.endpoint,
            "errors": None,
            "input_file_id": asked.input_file_id,
            "completion_window": asked.completion_window,
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 24 * 3600,
            "request_counts": {"total": total, "completed": 0, "failed": 0},
            "metadata": asked.metadata,
            "owner": owner,
        }

    async def batch(self, request: Request) -> Response:
        self.runner.ensure_resumed()
        try:
            batch = await self._thread(self.store.batch, request.path_params["batch_id"], principal_of(request).actor)
        except MCPError as exc:
            return openai_error(exc)
        return _json(await self._with_counts(batch))

    async def _with_counts(self, batch: dict[str, Any]) -> dict[str, Any]:
        """An active batch's counts, from the lines answered so far (kept by the runner while it runs
        here; read from the catalog otherwise)."""
        if batch["status"] in ACTIVE:
            counted = self.runner.counts(batch["id"])
            if counted is None:
                results = await self._thread(self.store.results, batch["id"])
                completed = sum(1 for result in results if result["response"]["status_code"] == 200)
                counted = {"completed": completed, "failed": len(results) - completed}
            batch["request_counts"] = {"total": batch["request_counts"]["total"], **counted}
        return _public(batch)

    async def batches(self, request: Request) -> Response:
        self.runner.ensure_resumed()
        limit = request.query_params.get("limit", "20")
        found = await self._thread(self.store.batches, principal_of(request).actor)
        after = request.query_params.get("after")
        if after is not None:
            ids = [batch["id"] for batch in found]
            found = found[ids.index(after) + 1 :] if after in ids else []
        page = found[: int(limit) if limit.isdigit() else 20]
        data = [await self._with_counts(batch) for batch in page]
        more = len(found) > len(page)
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        return _json({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": more})

    async def cancel(self, request: Request) -> Response:
        self.runner.ensure_resumed()
        try:
            batch = await self._thread(self.store.batch, request.path_params["batch_id"], principal_of(request).actor)
        except MCPError as exc:
            return openai_error(exc)
        if batch["status"] in ("validating", "in_progress"):
            self.runner.stop_lines(batch["id"])  # before anything else: the lines stop at the next engine step
            batch = {**batch, "status": "cancelling", "cancelling_at": int(time.time())}
            await self._thread(self.store.save, batch)
            await self.runner.cancel(batch["id"])
        return _json(await self._with_counts(batch))

    @staticmethod
    async def _thread(function: Any, *args: Any) -> Any:
        return await asyncio.to_thread(function, *args)


def batch_routes(endpoints: BatchEndpoints) -> list[Route]:
    return [
        Route("/v1/files", endpoints.create_file, methods=["POST"]),
        Route("/v1/files/{file_id}", endpoints.file, methods=["GET"]),
        Route("/v1/files/{file_id}/content", endpoints.file_content, methods=["GET"]),
        Route("/v1/batches", endpoints.create_batch, methods=["POST"]),
        Route("/v1/batches", endpoints.batches, methods=["GET"]),
        Route("/v1/batches/{batch_id}", endpoints.batch, methods=["GET"]),
        Route("/v1/batches/{batch_id}/cancel", endpoints.cancel, methods=["POST"]),
    ]
