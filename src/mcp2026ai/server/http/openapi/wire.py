"""Pydantic models of the JSON documents the OpenAPI description names that no request model covers.

The OpenAI and generate routes validate their bodies with pydantic models (openai/codec.py,
openai/embeddings.py, openai/tokens.py, openai/responses_request.py, generate.py) and the description
uses those same models. KServe v2 inference bodies are decoded by the hand-written fast decoder of
protocol/v2_json.py (orjson, no per-tensor model objects: the hot path), and the answers of every
route are encoded without models; the models here describe those documents as the protocols define
them, for the description only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from mcp2026ai.server.http.generate import GenerateParameters

Datatype = (
    Literal["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"]
    | Literal["FP16", "FP32", "FP64", "BF16", "BYTES"]
)


class V2Error(BaseModel):
    """KServe v2's error document (every non-OpenAI route)."""

    error: str


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIError(BaseModel):
    """OpenAI's error document (the /v1 text routes)."""

    error: OpenAIErrorDetail


class RequestInput(BaseModel):
    name: str
    shape: list[int]
    datatype: Datatype
    parameters: dict[str, Any] | None = None
    data: list[Any] | None = Field(None, description="row-major values; absent when the binary extension carries them")


class RequestOutput(BaseModel):
    name: str
    parameters: dict[str, Any] | None = None


class InferRequest(BaseModel):
    """KServe v2 inference request (JSON; the binary tensor extension appends raw bytes after it and
    states the JSON's length in ``Inference-Header-Content-Length``)."""

    id: str | None = None
    parameters: dict[str, Any] | None = None
    inputs: list[RequestInput]
    outputs: list[RequestOutput] | None = None


class ResponseOutput(BaseModel):
    name: str
    shape: list[int]
    datatype: Datatype
    parameters: dict[str, Any] | None = None
    data: list[Any] | None = None


class InferResponse(BaseModel):
    model_name: str
    model_version: str | None = None
    id: str | None = None
    parameters: dict[str, Any] | None = None
    outputs: list[ResponseOutput]


class TensorMetadata(BaseModel):
    name: str
    datatype: Datatype
    shape: list[int]


class ModelMetadata(BaseModel):
    name: str
    versions: list[str]
    platform: str
    inputs: list[TensorMetadata]
    outputs: list[TensorMetadata]


class ServerMetadata(BaseModel):
    name: str
    version: str
    extensions: list[str]


class Live(BaseModel):
    live: bool


class Ready(BaseModel):
    ready: bool


class ModelReady(BaseModel):
    name: str
    ready: bool


class Healthz(BaseModel):
    status: Literal["ok"]
    ready: bool


class ProbeStatus(BaseModel):
    status: Literal["ok", "unavailable"]


class Version(BaseModel):
    name: str
    version: str


class RepositoryEntry(BaseModel):
    name: str
    version: str | None = None
    state: str | None = None
    reason: str | None = None


class RepositoryLoad(BaseModel):
    parameters: dict[str, Any] | None = None


class ModelStatistics(BaseModel):
    model_stats: list[dict[str, Any]]


class SharedMemoryRegister(BaseModel):
    key: str
    offset: int = 0
    byte_size: int


class ImageInfer(BaseModel):
    """``/v1/infer``: an image in, the top-k classes out (``predictions``); for a model whose one input is
    BYTES (the OCR pipeline), the encoded image is that tensor and its named ``outputs`` come back."""

    image: str = Field(description="the image file's bytes, base64")
    model: str | None = None
    version: str | None = None
    top_k: int = 5


class GenerateRequest(GenerateParameters):
    """Triton's generate extension: the prompt and :class:`GenerateParameters`, at the top level or
    inside ``parameters``."""

    text_input: str
    parameters: dict[str, Any] | None = None


class Empty(BaseModel):
    """``{}``"""


JsonObject = dict[str, Any]
