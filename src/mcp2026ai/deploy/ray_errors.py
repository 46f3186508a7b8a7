"""What the Ray front (:mod:`mcp2026ai.deploy.ray_front`) answers when replicas are lost: which errors
mean a lost replica, the error answer before any byte was sent, and the last event of a stream whose
replica died while it streamed (each API's own error event: the client sees an error, never a
truncated answer that looks complete).
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.responses import Response

from mcp2026ai.errors import MCPError, bounded_message
from mcp2026ai.server.http.errors import error_response
from mcp2026ai.server.http.openai.errors import openai_error, openai_error_document
from mcp2026ai.server.http.streaming import DONE, sse

OPENAI_PREFIX = "/v1/"
NOT_OPENAI = frozenset({"/v1/infer"})  # the v2 server's own legacy route
RESPONSES_PATH = "/v1/responses"
_SEQUENCE = re.compile(rb'"sequence_number":(\d+)')


def replica_lost_errors() -> tuple[type[BaseException], ...]:
    """What a Ray Serve handle raises when the replica running a call died or became unreachable (its
    process killed, its node gone): the call may be sent again, to another replica."""
    from ray.exceptions import NodeDiedError, RayActorError, WorkerCrashedError
    from ray.serve.exceptions import ReplicaUnavailableError

    # RayActorError covers ActorDiedError and ActorUnavailableError
    return (RayActorError, WorkerCrashedError, NodeDiedError, ReplicaUnavailableError)


def is_openai(path: str) -> bool:
    return path.startswith(OPENAI_PREFIX) and path not in NOT_OPENAI


def error_answer(path: str, error: MCPError) -> Response:
    """The whole error answer (nothing of the response sent yet): OpenAI's error document on its
    routes, the v2 error JSON elsewhere, with the status the domain error maps to."""
    return openai_error(error) if is_openai(path) else error_response(error)


def stream_tail(path: str, error: MCPError, last_event: bytes) -> bytes:
    """The event that ends a stream cut off by ``error``, in the dialect of the route: OpenAI's error
    document then ``data: [DONE]`` for completions; an ``error`` event numbered after ``last_event`` for
    the Responses API; ``{"error": message}`` for Triton's generate_stream."""
    if path == RESPONSES_PATH:
        return _responses_error_event(error, last_event)
    if is_openai(path):
        return sse(openai_error_document(error)) + DONE
    return sse({"error": bounded_message(error)})


def _responses_error_event(error: MCPError, last_event: bytes) -> bytes:
    numbers = _SEQUENCE.findall(last_event)
    sequence = int(numbers[-1]) + 1 if numbers else 0
    fields = openai_error_document(error)["error"]
    document: dict[str, Any] = {"type": "error", "sequence_number": sequence}
    document |= {"code": fields["code"], "message": fields["message"], "param": fields["param"]}
    return b"event: error\ndata: " + orjson.dumps(document) + b"\n\n"
