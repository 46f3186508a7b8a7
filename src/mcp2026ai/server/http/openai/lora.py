"""vLLM's run-time LoRA API: ``POST /v1/load_lora_adapter`` and ``POST /v1/unload_lora_adapter``.

Scope ``manage`` (server/http/auth.py), in the ``repository`` API group (``--disable-api repository``
switches it off). Bodies are JSON within ``--max-json-bytes``; the path must lie in a
``--lora-allowed-dir`` folder (dataplane/adapters.py says what is read). Answers are vLLM's: a plain
text line on success, OpenAI's error JSON otherwise (400 bad input, 404 unknown adapter or path).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from mcp2026ai.dataplane.adapters import AdapterHandlers
from mcp2026ai.errors import MCPError
from mcp2026ai.messages import validated
from mcp2026ai.protocol.v2_json import parse_json
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.body import BodyBudget, read_body
from mcp2026ai.server.http.openai.errors import openai_error
from mcp2026ai.serving.llms import GenerationModels

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


class LoadAdapter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lora_name: str = Field(pattern=_NAME)
    lora_path: str = Field(min_length=1, max_length=4096)
    base_model_name: str | None = Field(None, pattern=_NAME)
    """Which served model it adapts; needed only when several run with LoRA."""
    load_inplace: bool = False
    """vLLM's: reload a name already loaded. Here a load of a loaded name always replaces it."""


class UnloadAdapter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lora_name: str = Field(pattern=_NAME)
    lora_int_id: int | None = None
    """vLLM's alternative key: accepted and ignored (names identify adapters here)."""


class LoraEndpoints:
    def __init__(self, llms: GenerationModels, config: ServerConfig, bodies: BodyBudget) -> None:
        self.adapters = AdapterHandlers(llms, config.lora_allowed_dirs)
        self.config = config
        self.bodies = bodies

    async def load(self, request: Request) -> Response:
        try:
            parsed = validated(LoadAdapter, await self._document(request))
            record = await self.adapters.load(parsed.lora_name, parsed.lora_path, parsed.base_model_name)
        except MCPError as exc:
            return openai_error(exc)
        return PlainTextResponse(f"Success: LoRA adapter '{parsed.lora_name}' added successfully ({record.ref}).")

    async def unload(self, request: Request) -> Response:
        try:
            parsed = validated(UnloadAdapter, await self._document(request))
            await self.adapters.unload(parsed.lora_name)
        except MCPError as exc:
            return openai_error(exc)
        return PlainTextResponse(f"Success: LoRA adapter '{parsed.lora_name}' removed successfully.")

    async def _document(self, request: Request) -> object:
        async with read_body(request, self.config.max_json_bytes, self.bodies) as raw:
            return parse_json(raw)


def lora_routes(llms: GenerationModels, config: ServerConfig, bodies: BodyBudget) -> list[Route]:
    endpoints = LoraEndpoints(llms, config, bodies)
    return [
        Route("/v1/load_lora_adapter", endpoints.load, methods=["POST"]),
        Route("/v1/unload_lora_adapter", endpoints.unload, methods=["POST"]),
    ]
