"""Run the HTTP and gRPC servers in one event loop: start, serve, drain, stop.

Shutdown order: the data plane stops accepting (ready turns false, new requests get 503 /
UNAVAILABLE), both transports stop taking connections and finish in-flight requests within the
drain timeout, then every model is unloaded. Text generations are told first: queued ones fail at
once (503), running streams may finish until shortly before the drain timeout, then end with an
error event and ``[DONE]`` (never cut off by the transport's own timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass

import grpc
import uvicorn

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import UnavailableError
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.grpc.acceptors import InferAcceptors, missing_internals
from mcp2026ai.server.grpc.auth import AuthInterceptor
from mcp2026ai.server.grpc.call_limit import CallLimitInterceptor
from mcp2026ai.server.grpc.decoding import add_inference_servicer
from mcp2026ai.server.grpc.health import PlaneHealth, add_health_and_reflection
from mcp2026ai.server.grpc.restricted import DisabledApisInterceptor
from mcp2026ai.server.grpc.servicer import InferenceServicer
from mcp2026ai.server.http.app import build_http_server_app
from mcp2026ai.server.http.connection.accept_queue import accept_window_s, until_accepted
from mcp2026ai.server.http.connection.early import EarlyRefusal
from mcp2026ai.server.http.connection.protocol import http_protocol
from mcp2026ai.server.http.site_guard import site_guard
from mcp2026ai.server.statistics import ServerStatistics
from mcp2026ai.serving.generation_configs import GenerationConfigWatcher
from mcp2026ai.serving.sync import ServingSync

log = logging.getLogger(__name__)


class _HttpServer(uvicorn.Server):
    """uvicorn without its own signal handling (the InferenceServer owns shutdown), which accepts what
    the kernel has queued before its listener closes (server/http/connection/accept_queue.py)."""

    def __init__(self, config: uvicorn.Config, listener: socket.socket, accept_window_s: float) -> None:
        super().__init__(config)
        self.listener = listener
        self.accept_window_s = accept_window_s

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await until_accepted([self.listener], self.accept_window_s)
        await super().shutdown(sockets)  # closes the listener before its first await


def grpc_interceptors(config: ServerConfig) -> list[grpc.aio.ServerInterceptor]:
    """The call limit (--max-connections) first, the API groups switched off (--disable-api), then
    authentication (--auth); every acceptor runs them (server/grpc/acceptors.py)."""
    authenticator = config.security.authenticator()
    limited = [CallLimitInterceptor(config.max_connections)] if config.max_connections is not None else []
    restricted = [DisabledApisInterceptor(config.disabled_apis)] if config.disabled_apis else []
    return [*limited, *restricted, *([AuthInterceptor(authenticator)] if authenticator else [])]


def bind_grpc(server: grpc.aio.Server, config: ServerConfig, port: int) -> int:
    """Listen on ``port`` (0: a free one), over TLS when a certificate is configured; the port bound."""
    address = f"{config.host}:{port}"
    tls = config.security.tls
    try:
        if tls:
            bound = server.add_secure_port(address, tls.grpc_server_credentials())
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError as exc:  # grpc's "Failed to bind to address ..."
        raise UnavailableError(f"cannot listen on {address} (--grpc-port): in use or not permitted") from exc
    return int(bound)


def ensure_port_free(host: str, port: int, option: str) -> None:
    """Refuse a port another server listens on, naming the reason (grpc's own bind error does not).
    Under ``--workers`` the parent must check: the workers' SO_REUSEPORT listeners would otherwise
    share a port another server holds and take half its connections instead of failing."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # lingering TIME_WAIT is no listener
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UnavailableError(f"cannot listen on {host}:{port} ({option}): {exc.strerror}") from exc


def ensure_ports_free(config: ServerConfig) -> None:
    """Refuse the configured HTTP and gRPC ports when another server listens on them."""
    ensure_port_free(config.host, config.http_port, "--port")
    if config.grpc_port is not None:
        ensure_port_free(config.host, config.grpc_port, "--grpc-port")


STREAM_FLUSH_S = 1.0
"""Time left, after text generations are stopped, for their final error events to reach the clients
before the transports' drain timeout cancels what still runs."""


def grpc_refusal_s(drain_timeout_s: float) -> float:
    """How long gRPC keeps taking calls after the gate closed, to refuse them itself instead of gRPC
    core cancelling them at its shutdown: the same window as HTTP's accepting (accept_queue.py)."""
    return accept_window_s(drain_timeout_s)


def streams_deadline_s(drain_timeout_s: float) -> float:
    return max(0.0, drain_timeout_s - min(STREAM_FLUSH_S, drain_timeout_s / 5))


@dataclass
class BoundPorts:
    http: int
    grpc: int | None


class InferenceServer:
    def __init__(self, plane: DataPlane, config: ServerConfig, sync: ServingSync) -> None:
        self.plane = plane
        self.config = config
        self.sync = sync
        self._http: _HttpServer | None = None
        self._http_task: asyncio.Task[None] | None = None
        self._grpc: grpc.aio.Server | None = None
        self.infer_acceptors: InferAcceptors | None = None
        self.grpc_health: PlaneHealth | None = None
        self._stopped = asyncio.Event()
        self.statistics = ServerStatistics(plane, config.peer_dir)
        self.ports = BoundPorts(http=0, grpc=None)
        self.generation_configs = GenerationConfigWatcher(plane.llms, config.generation_configs)

    async def start(self) -> BoundPorts:
        self.generation_configs.start()  # before the ports open: the first request gets the defaults
        self.ports = BoundPorts(http=await self._start_http(), grpc=await self._start_grpc())
        self.sync.start()
        await self.statistics.start()
        log.info("serving HTTP on %s:%s, gRPC on %s", self.config.host, self.ports.http, self.ports.grpc)
        return self.ports

    async def _start_http(self) -> int:
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        # proto must be IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets that say so, and
        # without it uvicorn's separate header/body writes meet delayed ACKs (+40 ms per response).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.config.reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((self.config.host, self.config.http_port))
        except OSError as exc:
            sock.close()
            address = f"{self.config.host}:{self.config.http_port}"
            raise UnavailableError(f"cannot listen on {address} (--port): {exc.strerror}") from exc
        uv_config = uvicorn.Config(
            build_http_server_app(self.plane, self.config, self.statistics),
            log_level=self.config.log_level,
            lifespan="off",
            access_log=False,
            # v2 error JSON for malformed requests; a connection cap; refusals answered from the headers
            http=http_protocol(
                self.config.max_connections,
                self.config.header_timeout_s,
                EarlyRefusal(self.plane, self.config.security.authenticator(), site_guard(self.config)),
            ),
            timeout_graceful_shutdown=int(self.config.drain_timeout_s) or None,
            timeout_keep_alive=self.config.keep_alive_s,
            backlog=self.config.listen_backlog,
            # uvicorn believes X-Forwarded-For from 127.0.0.1 by default: any local client could name
            # itself; only the proxies the operator lists are believed.
            proxy_headers=bool(self.config.trusted_proxies),
            forwarded_allow_ips=list(self.config.trusted_proxies) or "",
            **(self.config.security.tls.uvicorn_kwargs() if self.config.security.tls else {}),
        )
        self._http = _HttpServer(uv_config, sock, accept_window_s(self.config.drain_timeout_s))
        self._http_task = asyncio.create_task(self._http.serve(sockets=[sock]))
        while not self._http.started:
            if self._http_task.done():
                self._http_task.result()
            await asyncio.sleep(0.01)
        return int(sock.getsockname()[1])

    async def _start_grpc(self) -> int | None:
        """The gRPC server, with ``grpc_acceptors`` ModelInfer calls requested from gRPC core at once
        (grpc.aio alone keeps one: see server/grpc/acceptors.py)."""
        if self.config.grpc_port is None:
            return None
        if not self.config.reuse_port:  # under --workers the parent checked, and siblings share it
            ensure_port_free(self.config.host, self.config.grpc_port, "--grpc-port")
        interceptors = grpc_interceptors(self.config)
        server = self._grpc_server(interceptors)
        servicer = InferenceServicer(self.plane, self.config.max_request_bytes, self.statistics)
        handlers = add_inference_servicer(servicer, server)
        self.grpc_health = add_health_and_reflection(self.plane, server)
        port = bind_grpc(server, self.config, self.config.grpc_port)
        await server.start()
        self.grpc_health.start()
        self._grpc = server
        self.infer_acceptors = self._start_acceptors(server, handlers["ModelInfer"], interceptors)
        return port

    def _grpc_server(self, interceptors: list[grpc.aio.ServerInterceptor]) -> grpc.aio.Server:
        limit = self.config.max_request_bytes + (1 << 20)
        return grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.max_send_message_length", -1),
                ("grpc.so_reuseport", 1 if self.config.reuse_port else 0),
            ],
            # calls share connections: --max-connections bounds the calls, counted by CallLimitInterceptor
            # (grpc.aio's maximum_concurrent_rpcs misses the calls of the extra acceptors)
            interceptors=interceptors,
        )

    def _start_acceptors(
        self, server: grpc.aio.Server, handler: grpc.RpcMethodHandler, interceptors: list[grpc.aio.ServerInterceptor]
    ) -> InferAcceptors | None:
        extra = self.config.grpc_acceptors - 1  # grpc.aio's own is the first
        if extra < 1:
            return None
        missing = missing_internals(server)
        if missing:
            log.warning(
                "grpcio %s: one gRPC acceptor instead of %d (its internals %s differ)",
                grpc.__version__,
                self.config.grpc_acceptors,
                ", ".join(missing),
            )
            return None
        acceptors = InferAcceptors(server, handler, interceptors, extra)
        acceptors.start()
        return acceptors

    async def stop(self) -> None:
        """Graceful: stop accepting, drain in-flight requests, unload models."""
        if self._stopped.is_set():
            return
        self.plane.stop_accepting()
        if self.grpc_health is not None:
            await self.grpc_health.drain()  # probes read NOT_SERVING before the listeners close
        generations = asyncio.create_task(self.plane.generation.drain(streams_deadline_s(self.config.drain_timeout_s)))
        await self.sync.stop()
        await self.generation_configs.stop()
        waits: list[Awaitable[object]] = []
        if self._grpc is not None:
            waits.append(self._stop_grpc(self._grpc))
        if self._http is not None and self._http_task is not None:
            self._http.should_exit = True
            waits.append(self._http_task)
        await asyncio.gather(*waits, return_exceptions=True)
        for failure in await asyncio.gather(generations, return_exceptions=True):
            if isinstance(failure, BaseException):
                log.error("draining text generations failed: %s", failure)
        await self.statistics.stop()
        await self.plane.shutdown(self.config.drain_timeout_s)
        self._stopped.set()

    async def _stop_grpc(self, server: grpc.aio.Server) -> None:
        """gRPC core's shutdown cancels (CANCELLED) every call it holds that no acceptor has taken yet:
        for a moment first the server keeps taking calls, and the closed gate refuses the new ones
        (UNAVAILABLE, which clients know to retry elsewhere) while the ones in progress go on."""
        await asyncio.sleep(grpc_refusal_s(self.config.drain_timeout_s))
        await server.stop(grace=self.config.drain_timeout_s)
        if self.infer_acceptors is not None:
            await self.infer_acceptors.stop()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    def install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(self.stop()))
