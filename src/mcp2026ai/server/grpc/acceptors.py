"""Keep several ModelInfer calls requested from gRPC core, where grpc.aio keeps one.

grpc.aio's serving coroutine (``AioServer._server_main_loop``) keeps exactly one call requested from
gRPC core per method. When a ModelInfer call arrives, the next one is requested only after that
arrival has gone from gRPC core's completion queue through grpc.aio's poller thread to the event
loop and the loop got round to it; meanwhile every other arriving RPC waits in gRPC core, and they
are let in one loop iteration at a time. On a busy loop that line is the wide gRPC tail: at 32
concurrent clients our median stayed low while the p99 reached 3x it.

:class:`InferAcceptors` runs more acceptors beside grpc.aio's own: each keeps one more ModelInfer
call requested and hands what arrives to grpc.aio's own RPC handling (interceptors, cancellation,
status, message codecs), exactly as the serving coroutine does. MLP at c=32 over gRPC, A/B against
three whole grpc.aio servers on the port: 1531 vs 915 and 1541 vs 1115 req/s, p99 46 vs 84 and
40 vs 68 ms, CPU 0.63 vs 0.85-0.92 ms per request (docs/notebook/benchmarks.md).

grpc.aio has no public API for this: it takes grpc.aio.Server's core server and five of grpcio's
Cython internals, checked by name and signature first (:func:`missing_internals`). Where a grpcio
release changes them, the server keeps grpc.aio's single acceptor and says so once in its log.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence

import grpc
from grpc._cython import cygrpc  # grpcio's private Cython core: see missing_internals

log = logging.getLogger(__name__)

INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"

_EXPECTED_SIGNATURES: dict[str, tuple[str, ...]] = {
    "_handle_rpc": ("method_name", "method_resolver", "interceptors", "rpc_state", "loop", "concurrency_exceeded"),
    "_schedule_rpc_coro": ("rpc_coro", "rpc_state", "loop", "method_name"),
    "AioServer._request_registered_call": ("self", "method"),
}


def _parameters(function: Callable[..., object]) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None


def missing_internals(server: grpc.aio.Server) -> list[str]:
    """The grpcio internals this module needs that this grpcio lacks or shapes differently (empty: usable)."""
    missing = [] if isinstance(getattr(server, "_server", None), cygrpc.AioServer) else ["Server._server"]
    for dotted, expected in _EXPECTED_SIGNATURES.items():
        target: object = cygrpc
        for part in dotted.split("."):
            target = getattr(target, part, None)
        if not callable(target) or _parameters(target) != expected:
            missing.append(dotted)
    for name in ("_MethodResolver", "_RequestCallError"):
        if not isinstance(getattr(cygrpc, name, None), type):
            missing.append(name)
    return missing


class InferAcceptors:
    """``count`` extra ModelInfer acceptors on one started grpc.aio server.

    ``handler`` is the ModelInfer method handler the server itself was given, ``interceptors`` the
    server's interceptors (they run for these calls too).
    """

    def __init__(
        self,
        server: grpc.aio.Server,
        handler: grpc.RpcMethodHandler,
        interceptors: Sequence[grpc.aio.ServerInterceptor],
        count: int,
    ) -> None:
        self._core_server = server._server  # type: ignore[attr-defined]  # grpc.aio's cygrpc.AioServer
        self._resolver = cygrpc._MethodResolver([], {INFER_METHOD: handler})
        self._interceptors = tuple(interceptors)
        self.count = count
        self.accepted = 0
        """Calls these acceptors took (the rest went to grpc.aio's own)."""
        self._acceptors: set[asyncio.Task[None]] = set()
        self._calls: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for index in range(self.count):
            self._acceptors.add(loop.create_task(self._accept(), name=f"mcp-grpc-acceptor-{index}"))

    async def stop(self) -> None:
        """Stop requesting calls (the server's shutdown already failed the requested ones)."""
        acceptors, self._acceptors = self._acceptors, set()
        for task in acceptors:
            task.cancel()
        await asyncio.gather(*acceptors, return_exceptions=True)

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        method = INFER_METHOD.encode()
        while True:
            try:
                call = await self._core_server._request_registered_call(method)
            except cygrpc._RequestCallError:
                return  # the server is shutting down: gRPC core failed the requested call
            except Exception:  # grpc.aio's own acceptor still serves
                log.warning("a gRPC ModelInfer acceptor stopped", exc_info=True)
                return
            self.accepted += 1
            # concurrency_exceeded=False: --max-connections is counted by CallLimitInterceptor (call_limit.py),
            # one of self._interceptors, for these calls and grpc.aio's own alike
            handling = cygrpc._handle_rpc(INFER_METHOD, self._resolver, self._interceptors, call, loop, False)
            task = loop.create_task(cygrpc._schedule_rpc_coro(handling, call, loop, INFER_METHOD), name="rpc_task")
            self._calls.add(task)  # the loop holds tasks weakly
            task.add_done_callback(self._calls.discard)
