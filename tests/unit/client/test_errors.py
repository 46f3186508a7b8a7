"""A server's refusal becomes the domain error it was raised as."""

from __future__ import annotations

import grpc
import pytest

from mcp2026ai import errors
from mcp2026ai.client.errors import error_message, from_grpc, from_http, retry_after_seconds


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, errors.InvalidArgumentError),
        (401, errors.UnauthenticatedError),
        (403, errors.PermissionDeniedError),
        (404, errors.NotFoundError),
        (413, errors.PayloadTooLargeError),
        (503, errors.UnavailableError),
        (500, errors.InferenceFailedError),
        (502, errors.InferenceFailedError),
        (501, errors.UnsupportedError),
    ],
)
def test_http_status(status: int, kind: type[errors.MCPError]) -> None:
    error = from_http(status, b'{"error": "why"}', None, "POST /x")
    assert type(error) is kind and str(error) == f"POST /x: HTTP {status}: why"


def test_http_overload_carries_retry_after() -> None:
    error = from_http(429, b'{"error": "busy"}', "3", "POST /x")
    assert isinstance(error, errors.OverloadedError) and error.retry_after_s == 3.0
    assert from_http(429, b"", "Wed, 21 Oct 2015 07:28:00 GMT", "x").retry_after_s == 1.0  # type: ignore[attr-defined]


def test_grpc_codes() -> None:
    assert type(from_grpc(grpc.StatusCode.NOT_FOUND, "gone", None, "m")) is errors.NotFoundError
    assert type(from_grpc(grpc.StatusCode.DATA_LOSS, "bad", None, "m")) is errors.IntegrityError
    assert type(from_grpc(grpc.StatusCode.UNIMPLEMENTED, "decoupled", None, "m")) is errors.UnsupportedError
    overloaded = from_grpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full", "2500", "m")
    assert isinstance(overloaded, errors.OverloadedError) and overloaded.retry_after_s == 2.5
    too_big = from_grpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "message too large", None, "m")
    assert type(too_big) is errors.PayloadTooLargeError


def test_error_message_reads_v2_and_openai_bodies() -> None:
    assert error_message(b'{"error": "v2 says"}') == "v2 says"
    assert error_message(b'{"error": {"message": "openai says"}}') == "openai says"
    assert error_message(b"<html>proxy</html>") == "<html>proxy</html>"
    assert retry_after_seconds("-4") == 0.0
