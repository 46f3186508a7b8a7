"""Regressions found by the fuzz suite (tests/integration/test_fuzz.py), pinned at unit level."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb

from mcp2026ai.errors import InvalidInputError, PayloadTooLargeError
from mcp2026ai.protocol.tensors import array_from_list, array_from_raw
from mcp2026ai.server.grpc.decoding import Malformed, lenient, lenient_deserializer


def _nested(depth: int, leaf: object) -> object:
    data = leaf
    for _ in range(depth):
        data = [data]
    return data


def test_deeply_nested_bytes_data_does_not_recurse() -> None:
    array = array_from_list("text", "BYTES", [1], _nested(5000, "a"))
    assert array.tolist() == [b"a"]
    with pytest.raises(InvalidInputError, match="2 values for shape"):
        array_from_list("text", "BYTES", [1], [_nested(3000, "a"), ["b"]])


def test_flattening_keeps_the_order_of_leaves() -> None:
    data = [[b"a", [b"b", [b"c"]]], [], [[b"d"]]]
    assert array_from_list("t", "BYTES", [4], data).tolist() == [b"a", b"b", b"c", b"d"]
    assert array_from_list("x", "FP32", [2, 2], [[1, 2], [3, 4]]).dtype == np.float32


def test_an_unparsable_grpc_request_becomes_a_marker_not_an_exception() -> None:
    parse = lenient_deserializer(pb.ModelInferRequest.FromString)
    assert isinstance(parse(b"\x00"), Malformed)
    good = pb.ModelInferRequest(model_name="m")
    assert parse(good.SerializeToString()) == good


def test_lenient_handlers_keep_their_shape() -> None:
    async def unary(request: object, context: object) -> object:
        return request

    async def stream(requests: object, context: object):  # type: ignore[no-untyped-def]
        yield requests

    unary_handler = lenient(grpc.unary_unary_rpc_method_handler(unary, pb.ModelInferRequest.FromString))
    stream_handler = lenient(grpc.stream_stream_rpc_method_handler(stream, pb.ModelInferRequest.FromString))
    assert unary_handler.unary_unary is not None and unary_handler.stream_stream is None
    assert stream_handler.stream_stream is not None and stream_handler.unary_unary is None
    assert isinstance(unary_handler.request_deserializer(b"\xff\xff"), Malformed)


@pytest.mark.parametrize("shape", [[0, 2**62], [2**40, 0, 2**40]])
def test_empty_tensor_with_absurd_dims_is_refused_not_crashing(shape: list[int]) -> None:
    with pytest.raises(PayloadTooLargeError):
        array_from_list("x", "FP32", shape, [])
    with pytest.raises(PayloadTooLargeError):
        array_from_raw("x", "FP32", shape, b"")
