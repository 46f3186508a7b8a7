"""What a gRPC refusal carries besides its status: the retry pushback (gRFC A6) of an overload and of
a cold start that cannot finish within the request's deadline (HTTP's Retry-After)."""

import grpc

from mcp2026ai.errors import ColdLoadError, NotFoundError, OverloadedError
from mcp2026ai.server.grpc.errors import RETRY_PUSHBACK_KEY, grpc_status, trailing_metadata


def test_a_cold_load_refusal_is_unavailable_with_a_retry_pushback() -> None:
    error = ColdLoadError("model 'resnet50' is being loaded (cold start)", 5.0)
    assert grpc_status(error) is grpc.StatusCode.UNAVAILABLE
    assert trailing_metadata(error) == ((RETRY_PUSHBACK_KEY, "5000"),)


def test_an_overload_carries_its_pushback_and_other_errors_none() -> None:
    assert trailing_metadata(OverloadedError("full", 0.25)) == ((RETRY_PUSHBACK_KEY, "250"),)
    assert trailing_metadata(NotFoundError("no such model")) == ()
