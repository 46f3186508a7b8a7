"""What each HTTP route takes and answers, by path and method: the table the OpenAPI description is
built from (document.py). Bodies are pydantic models: the routes' own request models where they
validate with one, wire.py's otherwise. Scopes are not listed here: document.py asks
server/http/auth.py, the code that enforces them.

A route served without an entry here fails tests/unit/server/http/test_openapi.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from mcp2026ai.registry import ModelVersion
from mcp2026ai.server.http.manage import Promotion, RegisterFromUrl, RolloutChanges
from mcp2026ai.server.http.openai.batch.routes import BatchCreate
from mcp2026ai.server.http.openai.codec import ChatCompletionRequest, CompletionRequest
from mcp2026ai.server.http.openai.embeddings import EmbeddingsBody
from mcp2026ai.server.http.openai.lora import LoadAdapter, UnloadAdapter
from mcp2026ai.server.http.openai.responses_request import ResponsesRequest
from mcp2026ai.server.http.openai.similarity import RerankBody, ScoreBody
from mcp2026ai.server.http.openai.tokens import DetokenizeRequest, TokenizeRequest
from mcp2026ai.server.http.openapi import wire

JSON = "application/json"
HTML = "text/html"
SSE = "text/event-stream"


@dataclass(frozen=True)
class Operation:
    summary: str
    tag: str
    request: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    media: str = JSON
    """The answer's media type (JSON answers without a model are described as any object)."""
    error: type[BaseModel] = wire.V2Error
    streams: bool = False
    """Also answers ``text/event-stream`` (``"stream": true``)."""
    request_media: str = JSON
    """A body's media type; other than JSON and with no ``request`` model: the raw bytes (an upload)."""


V2 = "KServe v2"
OPENAI = "OpenAI"
PROBES = "Health"
CONSOLE = "Console"
DOCS = "API description"
MANAGE = "Management"
MODEL_PREFIXES = ("/v2/models/{model}", "/v2/models/{model}/versions/{version}")

_PER_MODEL: dict[tuple[str, str], Operation] = {
    ("", "GET"): Operation("Model metadata", V2, response=wire.ModelMetadata),
    ("/ready", "GET"): Operation("Whether the model is ready", V2, response=wire.ModelReady),
    ("/config", "GET"): Operation("Model configuration (Triton's shape)", V2),
    ("/stats", "GET"): Operation("The model's inference statistics", V2, response=wire.ModelStatistics),
    ("/infer", "POST"): Operation(
        "Inference (JSON or the binary tensor extension)", V2, wire.InferRequest, wire.InferResponse
    ),
    ("/package", "GET"): Operation("Record and signatures of the served version (edge pull)", V2),
    ("/artifact", "GET"): Operation("The served version's artifact bytes", V2, media="application/octet-stream"),
    ("/generate", "POST"): Operation("Text generation (Triton's generate extension)", V2, wire.GenerateRequest),
    ("/generate_stream", "POST"): Operation("Streamed text generation", V2, wire.GenerateRequest, media=SSE),
}


def _shared_memory(kind: str) -> dict[tuple[str, str], Operation]:
    base = f"/v2/{kind}"
    status = Operation(f"{kind} regions' status", V2)
    unregister = Operation(f"Unregister {kind} regions", V2, response=wire.Empty)
    return {
        (f"{base}/status", "GET"): status,
        (f"{base}/region/{{region}}/status", "GET"): status,
        (f"{base}/region/{{region}}/register", "POST"): Operation(
            f"Register a {kind} region", V2, wire.SharedMemoryRegister, wire.Empty
        ),
        (f"{base}/unregister", "POST"): unregister,
        (f"{base}/region/{{region}}/unregister", "POST"): unregister,
    }


def _v2() -> dict[tuple[str, str], Operation]:
    trace = Operation("Trace settings (POST changes them)", V2)
    logging = Operation("Log settings (POST changes them)", V2)
    table = {
        ("/v2/health/live", "GET"): Operation("Liveness", PROBES, response=wire.Live),
        ("/v2/health/ready", "GET"): Operation(
            "Readiness (503 while loading or draining)", PROBES, response=wire.Ready
        ),
        ("/v2", "GET"): Operation("Server metadata", V2, response=wire.ServerMetadata),
        ("/v2/models/stats", "GET"): Operation("Every model's statistics", V2, response=wire.ModelStatistics),
        ("/v2/repository/index", "GET"): Operation("The repository's models and their states", V2),
        ("/v2/repository/index", "POST"): Operation("The repository's models and their states", V2),
        ("/v2/repository/models/{model}/load", "POST"): Operation("Load a model", V2, wire.RepositoryLoad, wire.Empty),
        ("/v2/repository/models/{model}/unload", "POST"): Operation("Unload a model", V2, response=wire.Empty),
        ("/healthz", "GET"): Operation("Health summary", PROBES, response=wire.Healthz),
        ("/metrics", "GET"): Operation("Prometheus metrics", PROBES, media="text/plain"),
        ("/v1/infer", "POST"): Operation(
            "An image in: top-k classes, or an image model's outputs", V2, wire.ImageInfer
        ),
    }
    for path in ("/v2/trace/setting", "/v2/models/{model}/trace/setting"):
        table |= {(path, "GET"): trace, (path, "POST"): trace}
    table |= {("/v2/logging", "GET"): logging, ("/v2/logging", "POST"): logging}
    for kind in ("systemsharedmemory", "cudasharedmemory"):
        table |= _shared_memory(kind)
    for prefix in MODEL_PREFIXES:
        table |= {(prefix + suffix, method): operation for (suffix, method), operation in _PER_MODEL.items()}
    return table


def _openai() -> dict[tuple[str, str], Operation]:
    error = wire.OpenAIError
    return {
        ("/v1/models", "GET"): Operation("Served language models", OPENAI, error=error),
        ("/v1/models/{model}", "GET"): Operation("One served language model", OPENAI, error=error),
        ("/v1/completions", "POST"): Operation("Completions", OPENAI, CompletionRequest, error=error, streams=True),
        ("/v1/chat/completions", "POST"): Operation(
            "Chat completions", OPENAI, ChatCompletionRequest, error=error, streams=True
        ),
        ("/v1/responses", "POST"): Operation("Responses", OPENAI, ResponsesRequest, error=error, streams=True),
        ("/v1/embeddings", "POST"): Operation("Embeddings", OPENAI, EmbeddingsBody, error=error),
        ("/v1/rerank", "POST"): Operation(
            "Rerank documents by a query (vLLM's, Jina/Cohere)", OPENAI, RerankBody, error=error
        ),
        ("/v2/rerank", "POST"): Operation("Rerank documents (Cohere's v2 path)", OPENAI, RerankBody, error=error),
        ("/v1/score", "POST"): Operation("Similarity of text pairs (vLLM's)", OPENAI, ScoreBody, error=error),
        ("/tokenize", "POST"): Operation("Text to token ids (vLLM's)", OPENAI, TokenizeRequest, error=error),
        ("/detokenize", "POST"): Operation("Token ids to text (vLLM's)", OPENAI, DetokenizeRequest, error=error),
        ("/v1/load_lora_adapter", "POST"): Operation(
            "Register and serve a LoRA adapter folder (vLLM's; from --lora-allowed-dir folders)",
            OPENAI,
            LoadAdapter,
            error=error,
            media="text/plain",
        ),
        ("/v1/unload_lora_adapter", "POST"): Operation(
            "Stop serving a LoRA adapter (vLLM's)", OPENAI, UnloadAdapter, error=error, media="text/plain"
        ),
        ("/v1/files", "POST"): Operation(
            "Upload a batch input file (multipart: file, purpose=batch)",
            OPENAI,
            error=error,
            request_media="multipart/form-data",
        ),
        ("/v1/files/{file_id}", "GET"): Operation("A file's record", OPENAI, error=error),
        ("/v1/files/{file_id}/content", "GET"): Operation(
            "A file's bytes (JSONL)", OPENAI, error=error, media="application/jsonl"
        ),
        ("/v1/batches", "POST"): Operation("Create a batch (best-effort class)", OPENAI, BatchCreate, error=error),
        ("/v1/batches", "GET"): Operation("Your batches, newest first (?limit=, after=)", OPENAI, error=error),
        ("/v1/batches/{batch_id}", "GET"): Operation("A batch and its request counts", OPENAI, error=error),
        ("/v1/batches/{batch_id}/cancel", "POST"): Operation("Cancel a batch", OPENAI, error=error),
    }


def _console_and_probes() -> dict[tuple[str, str], Operation]:
    page = Operation("A console page shell (asks for a token; no data)", CONSOLE, media=HTML)
    fragment = Operation("Console data as an HTML fragment", CONSOLE, media=HTML)
    table = {
        (f"/ui{suffix}", "GET"): page
        for suffix in ("", "/models", "/live", "/rollouts", "/playground", "/audit", "/models/{model}")
    }
    for suffix in ("models", "models/{model}", "rollouts", "audit", "playground"):
        table[(f"/ui/fragments/{suffix}", "GET")] = fragment
    return table | {
        ("/ui/fragments/rollouts/{model}/{action}", "POST"): Operation("A rollout action", CONSOLE, media=HTML),
        ("/ui/api/session", "GET"): Operation("Who the token belongs to", CONSOLE),
        ("/ui/api/live", "GET"): Operation("Live figures (server-sent events)", CONSOLE, media=SSE),
        ("/ui/static/{path}", "GET"): Operation(
            "The console's static files", CONSOLE, media="application/octet-stream"
        ),
        ("/health", "GET"): Operation("Readiness alias (TGI, vLLM)", PROBES, response=wire.ProbeStatus),
        ("/ping", "GET"): Operation("Readiness alias (SageMaker)", PROBES, response=wire.ProbeStatus),
        ("/version", "GET"): Operation("Server name and version (vLLM's)", PROBES, response=wire.Version),
        ("/openapi.json", "GET"): Operation("This description", DOCS),
        ("/docs", "GET"): Operation("Swagger UI for this description", DOCS, media=HTML),
        ("/docs/static/{file}", "GET"): Operation("Swagger UI's files", DOCS, media="application/octet-stream"),
    }


def _management() -> dict[tuple[str, str], Operation]:
    model = "/v2/manage/models/{model}"
    rollout = "/v2/manage/rollouts/{model}"
    record = ModelVersion  # the registry's record, as the management API answers it
    return {
        ("/v2/manage/models", "GET"): Operation("Registered versions (?name=)", MANAGE),
        (model, "GET"): Operation("One version (?version=; the default)", MANAGE, response=record),
        (f"{model}/upload", "POST"): Operation(
            "Register an uploaded model file (?filename=, version=, stage=, tag=k=v, contract=JSON)",
            MANAGE,
            response=record,
            request_media="application/octet-stream",
        ),
        (f"{model}/register", "POST"): Operation("Register a model file from a URL", MANAGE, RegisterFromUrl, record),
        (f"{model}/versions/{{version}}/promote", "POST"): Operation("Move to a stage", MANAGE, Promotion, record),
        (f"{model}/versions/{{version}}/archive", "POST"): Operation("Archive a version", MANAGE, response=record),
        (f"{model}/signature", "GET"): Operation("Check the trusted signature (?version=)", MANAGE),
        (rollout, "GET"): Operation("The rollout and its rollbacks", MANAGE),
        (rollout, "PUT"): Operation("Change the named rollout fields", MANAGE, RolloutChanges),
        (rollout, "DELETE"): Operation("Clear the rollout", MANAGE, response=wire.Empty),
        ("/v2/manage/plans/{model}/explain", "GET"): Operation("Why the current plan (?version=)", MANAGE),
        ("/v2/manage/plans/{model}/trace", "GET"): Operation("Planning decisions (?last=, version=)", MANAGE),
        ("/v2/manage/audit", "GET"): Operation("The last entries of the audit log (?last=; 0: all)", MANAGE),
    }


def operations() -> dict[tuple[str, str], Operation]:
    """Every described (path, method)."""
    return _v2() | _openai() | _console_and_probes() | _management()
