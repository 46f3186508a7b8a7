"""One bench run end to end: find the model, shape its inputs, drive the load, summarize.

report = asyncio.run(run_bench(BenchConfig(url="localhost:8080", concurrency=8, requests=2000)))
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mcp2026ai.bench import grpc as grpc_client
from mcp2026ai.bench import http as http_client
from mcp2026ai.bench.config import BenchConfig, Target
from mcp2026ai.bench.inputs import ModelInfo, model_info, request_shapes, synthesize
from mcp2026ai.bench.load import Bounds, Samples, SenderFactory, closed_loop, open_loop
from mcp2026ai.bench.report import BenchReport, summarize
from mcp2026ai.client import AsyncV2GrpcClient, AsyncV2HttpClient
from mcp2026ai.errors import InvalidArgumentError, NotFoundError, UnavailableError
from mcp2026ai.inference import InferenceResponse
from mcp2026ai.protocol import v2_grpc, v2_json

Tick = Callable[[Samples], None]


class _Control(Protocol):
    """The v2 client calls the bench makes before the load (either protocol's async client)."""

    async def repository_index(self) -> list[dict[str, Any]]: ...
    async def model_metadata(self, model: str, version: str | None = None) -> dict[str, Any]: ...
    async def model_config(self, model: str, version: str | None = None) -> dict[str, Any]: ...
    async def infer(
        self, model: str, inputs: Mapping[str, np.ndarray], outputs: Sequence[str] = (), version: str | None = None
    ) -> InferenceResponse: ...


class _Side(ABC):
    """One protocol: the v2 client for discovery and the check request, lean senders for the load."""

    def __init__(self, client: _Control) -> None:
        self.client = client

    async def ready_models(self) -> list[str]:
        index = await self.client.repository_index()
        return sorted({row["name"] for row in index if row.get("state", "READY") in ("", "READY")})

    async def metadata(self, model: str, version: str | None) -> dict[str, Any] | None:
        try:
            return await self.client.model_metadata(model, version)
        except NotFoundError:
            return None

    async def config(self, model: str, version: str | None) -> dict[str, Any] | None:
        try:
            return await self.client.model_config(model, version)
        except NotFoundError:
            return None

    async def check(self, model: str, version: str | None, tensors: dict[str, np.ndarray], outputs: list[str]) -> None:
        """One request through the client before the load: a server that refuses the synthesized
        inputs or answers without an output stops the bench with why, not with N identical errors.
        A busy or unavailable server is left to the load to measure."""
        try:
            response = await self.client.infer(model, tensors, version=version)
        except (InvalidArgumentError, NotFoundError) as exc:
            raise InvalidArgumentError(f"the server refused the bench's request: {exc}") from None
        except UnavailableError:
            return
        missing = sorted(set(outputs) - set(response.outputs))
        if missing:
            raise InvalidArgumentError(f"{model}: the server's answer lacks output(s) {missing}")

    @abstractmethod
    def factory(self, model: str, version: str | None, tensors: dict[str, np.ndarray], outputs: list[str]) -> Any:
        """What makes the load's senders (each protocol has its own lean ones)."""

    @abstractmethod
    async def close(self) -> None: ...


class _HttpSide(_Side):
    def __init__(self, target: Target, config: BenchConfig) -> None:
        self.target, self.bench = target, config
        self.base = f"http://{target.host}:{target.port}"
        self.http = AsyncV2HttpClient(self.base, timeout_s=config.timeout_s, headers=config.headers)
        super().__init__(self.http)

    def factory(self, model: str, version: str | None, tensors: dict[str, np.ndarray], outputs: list[str]) -> Any:
        body, header_length = v2_json.encode_request(tensors, outputs, self.bench.binary)
        path = http_client.infer_path(model, version)
        data = http_client.request_bytes(
            self.target.host, self.target.port, path, body, header_length, self.bench.headers
        )

        async def make() -> http_client.HttpSender:
            sender = http_client.HttpSender(self.target.host, self.target.port, data)
            try:
                await sender.connect()
            except OSError as exc:
                raise UnavailableError(f"cannot connect to {self.base}: {exc}") from None
            return sender

        return make

    async def close(self) -> None:
        await self.http.aclose()


class _GrpcSide(_Side):
    def __init__(self, target: Target, config: BenchConfig) -> None:
        self.bench = config
        self.session = grpc_client.GrpcSession(target.host, target.port, config.headers, config.timeout_s)
        address = f"{target.host}:{target.port}"
        self.grpc = AsyncV2GrpcClient(address, timeout_s=config.timeout_s, headers=config.headers)
        super().__init__(self.grpc)

    def factory(self, model: str, version: str | None, tensors: dict[str, np.ndarray], outputs: list[str]) -> Any:
        data = v2_grpc.encode_request(model, version, tensors, outputs, self.bench.binary).SerializeToString()

        async def make() -> grpc_client.GrpcSender:
            return grpc_client.GrpcSender(self.session, data)

        return make

    async def close(self) -> None:
        await self.session.close()
        await self.grpc.aclose()


@dataclass(frozen=True)
class Workload:
    """What will be sent: the model, its inputs' shapes and a factory of senders."""

    model: str
    version: str | None
    info: ModelInfo
    shapes: dict[str, list[int]]
    factory: SenderFactory


async def _choose_model(side: _Side, config: BenchConfig, target: Target) -> str:
    if config.model or target.model:
        return str(config.model or target.model)
    names = await side.ready_models()
    if len(names) == 1:
        return names[0]
    served = ", ".join(names) or "none"
    raise InvalidArgumentError(f"--model is required: the server has {len(names)} ready models ({served})")


async def workload(side: _Side, config: BenchConfig) -> Workload:
    target = config.target()
    model = await _choose_model(side, config, target)
    version = config.version or target.version
    metadata = await side.metadata(model, version)
    if metadata is None:
        raise NotFoundError(f"--model {model!r}: the server at {config.url} does not serve it")
    info = model_info(metadata, await side.config(model, version))
    shapes = request_shapes(info, config.shapes, config.batch_size)
    tensors = synthesize(info, shapes, config.seed)
    await side.check(model, version, tensors, list(info.outputs))
    return Workload(model, version, info, shapes, side.factory(model, version, tensors, list(info.outputs)))


async def _ticker(samples: Samples, tick: Tick, every_s: float) -> None:
    while True:
        tick(samples)
        await asyncio.sleep(every_s)


async def run_bench(config: BenchConfig, tick: Tick | None = None, tick_every_s: float = 0.25) -> BenchReport:
    target = config.target()
    side: _Side = _HttpSide(target, config) if config.protocol == "http" else _GrpcSide(target, config)
    try:
        chosen = await workload(side, config)
        samples = Samples()
        bounds = Bounds(config.requests, config.duration_s, config.timeout_s, config.start_at_unix)
        ticker = asyncio.create_task(_ticker(samples, tick, tick_every_s)) if tick else None
        cpu_started_s = time.process_time()
        try:
            if config.rate is not None:
                await open_loop(chosen.factory, config.rate, config.max_in_flight, bounds, samples, config.seed)
            else:
                await closed_loop(chosen.factory, config.concurrency, bounds, samples)
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
                tick(samples)  # type: ignore[misc]
        client_cpu_s = time.process_time() - cpu_started_s
    finally:
        await side.close()
    return summarize(
        samples,
        model=chosen.model,
        protocol=config.protocol,
        concurrency=config.concurrency,
        rate=config.rate,
        batch_size=config.batch_size if chosen.info.max_batch_size else 1,
        client_cpu_s=client_cpu_s,
    )
