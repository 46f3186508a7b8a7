"""Extra ModelInfer acceptors on the real gRPC server (server/grpc/acceptors.py): the calls they take
are served like grpc.aio's own (answers, interceptors, errors), and a grpcio whose internals differ
falls back to grpc.aio's single acceptor."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import AuthConfig, Scope, ServingSecurity, TokenStore
from mcp2026ai.server import lifecycle
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.grpc.acceptors import missing_internals
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

pytestmark = pytest.mark.timeout(120)

CALLS = 96
CHANNELS = 4


@pytest.fixture()
def add_sub_registry(tmp_path: Path) -> ModelRegistry:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    return registry


@pytest.fixture()
def served(add_sub_registry: ModelRegistry) -> Iterator[BackgroundServer]:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, grpc_acceptors=5)
    with BackgroundServer(add_sub_registry, ["add_sub"], config) as server:
        yield server


def infer_request(value: float) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="add_sub", id=f"{value:g}")
    for name, offset in (("INPUT0", 0.0), ("INPUT1", 1.0)):
        request.inputs.add(name=name, datatype="FP32", shape=[1, 4])  # values travel as raw bytes, in order
        request.raw_input_contents.append(np.full((1, 4), value + offset, np.float32).tobytes())
    return request


async def infer_concurrently(
    url: str, values: list[float], metadata: tuple[tuple[str, str], ...] = ()
) -> list[pb.ModelInferResponse | grpc.aio.AioRpcError]:
    """Every value as its own ModelInfer, all at once over ``CHANNELS`` connections."""
    channels = [grpc.aio.insecure_channel(url) for _ in range(CHANNELS)]
    try:
        stubs = [pb_grpc.GRPCInferenceServiceStub(channel) for channel in channels]

        async def one(index: int, value: float) -> pb.ModelInferResponse | grpc.aio.AioRpcError:
            try:
                return await stubs[index % CHANNELS].ModelInfer(infer_request(value), metadata=metadata, timeout=30)
            except grpc.aio.AioRpcError as error:
                return error

        return await asyncio.gather(*(one(index, value) for index, value in enumerate(values)))
    finally:
        await asyncio.gather(*(channel.close() for channel in channels))


def outputs(response: pb.ModelInferResponse) -> dict[str, np.ndarray]:
    return {
        tensor.name: np.frombuffer(raw, np.float32).reshape(tuple(tensor.shape))
        for tensor, raw in zip(response.outputs, response.raw_output_contents, strict=True)
    }


def test_this_grpcio_has_the_internals_the_acceptors_use() -> None:
    """Canary: a grpcio release that reshapes them turns the extra acceptors off (the last test)."""

    async def missing_on_a_fresh_server() -> list[str]:
        server = grpc.aio.server()
        try:
            return missing_internals(server)
        finally:
            await server.stop(None)

    assert asyncio.run(missing_on_a_fresh_server()) == []
    assert missing_internals(object()) == ["Server._server"]  # type: ignore[arg-type]


def test_calls_the_extra_acceptors_take_are_answered_like_any_other(served: BackgroundServer) -> None:
    acceptors = served.server.infer_acceptors if served.server else None
    assert acceptors is not None and acceptors.count == 4  # grpc.aio's own is the fifth
    values = [float(index) for index in range(CALLS)]
    responses = asyncio.run(infer_concurrently(served.grpc_url, values))
    for value, response in zip(values, responses, strict=True):
        assert isinstance(response, pb.ModelInferResponse), response
        assert response.id == f"{value:g}"
        got = outputs(response)
        np.testing.assert_array_equal(got["OUTPUT0"], np.full((1, 4), 2 * value + 1, np.float32))
        np.testing.assert_array_equal(got["OUTPUT1"], np.full((1, 4), -1.0, np.float32))
    assert acceptors.accepted > 0
    # A client's mistake on a call they take is the same clear error (the server's own codecs and checks).
    bad = pb.ModelInferRequest(model_name="add_sub")
    bad.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 4])

    async def send_bad() -> list[grpc.StatusCode]:
        async with grpc.aio.insecure_channel(served.grpc_url) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            codes = []
            for _ in range(10):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.ModelInfer(bad, timeout=30)
                codes.append(caught.value.code())
            return codes

    assert set(asyncio.run(send_bad())) == {grpc.StatusCode.INVALID_ARGUMENT}
    # ... and the server still answers afterwards.
    assert isinstance(asyncio.run(infer_concurrently(served.grpc_url, [7.0]))[0], pb.ModelInferResponse)


def test_interceptors_run_for_the_calls_the_extra_acceptors_take(
    add_sub_registry: ModelRegistry, tmp_path: Path
) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.create("app", frozenset({Scope.INFER})).token
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=store.path))
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, grpc_acceptors=5, security=security)
    with BackgroundServer(add_sub_registry, ["add_sub"], config) as served:
        acceptors = served.server.infer_acceptors if served.server else None
        assert acceptors is not None
        values = [float(index) for index in range(CALLS)]
        refused = asyncio.run(infer_concurrently(served.grpc_url, values))
        taken_while_refusing = acceptors.accepted
        allowed = asyncio.run(infer_concurrently(served.grpc_url, values, (("authorization", f"Bearer {token}"),)))
    assert taken_while_refusing > 0
    assert all(isinstance(error, grpc.aio.AioRpcError) for error in refused)
    assert {error.code() for error in refused if isinstance(error, grpc.aio.AioRpcError)} == {
        grpc.StatusCode.UNAUTHENTICATED
    }
    assert all(isinstance(response, pb.ModelInferResponse) for response in allowed)


def test_one_acceptor_is_grpc_aio_alone(add_sub_registry: ModelRegistry) -> None:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, grpc_acceptors=1)
    with BackgroundServer(add_sub_registry, ["add_sub"], config) as served:
        assert served.server is not None and served.server.infer_acceptors is None
        responses = asyncio.run(infer_concurrently(served.grpc_url, [float(index) for index in range(16)]))
    assert all(isinstance(response, pb.ModelInferResponse) for response in responses)


def test_a_grpcio_with_other_internals_serves_with_one_acceptor_and_says_so(
    add_sub_registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A grpcio that is not installed here: its internals answer differently."""
    monkeypatch.setattr(lifecycle, "missing_internals", lambda server: ["_handle_rpc"])
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, grpc_acceptors=5)
    with (
        caplog.at_level(logging.WARNING, logger=lifecycle.__name__),
        BackgroundServer(add_sub_registry, ["add_sub"], config) as served,
    ):
        assert served.server is not None and served.server.infer_acceptors is None
        responses = asyncio.run(infer_concurrently(served.grpc_url, [1.0, 2.0, 3.0]))
    assert all(isinstance(response, pb.ModelInferResponse) for response in responses)
    warning = f"grpcio {grpc.__version__}: one gRPC acceptor instead of 5 (its internals _handle_rpc differ)"
    assert warning in caplog.text
