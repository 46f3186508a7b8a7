"""BLS: a Triton Python model's ``InferenceRequest(...).exec()`` run as an inference request of this plane.

The Python backend calls :class:`BlsBridge` from its worker thread (runtime/triton_python/bls.py);
the request goes through :meth:`InferenceHandlers.infer` on the server's event loop like any other
(routing, the target's own queue and batching), with what is left of the caller's deadline as its
timeout, and the worker waits for its answer no longer than that.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import numpy as np

from mcp2026ai.dataplane.inference import InferenceHandlers
from mcp2026ai.errors import DeadlineExceededError, InferenceFailedError, InvalidArgumentError, MCPError
from mcp2026ai.inference import InferenceRequest, RequestedOutput
from mcp2026ai.runtime.triton_python import BlsCall, BlsGateway

BLS_DEADLINE_MESSAGE = "BLS request timeout expired (the calling request's deadline)"


class BlsBridge:
    """``BlsTarget``: runs a BLS call on ``loop`` and waits for it on the calling (worker) thread."""

    def __init__(self, inference: InferenceHandlers, loop: asyncio.AbstractEventLoop) -> None:
        self.inference = inference
        self.loop = loop
        self._loop_thread = threading.get_ident()

    def __call__(self, call: BlsCall) -> dict[str, np.ndarray]:
        if threading.get_ident() == self._loop_thread:
            raise InvalidArgumentError("BLS exec() on the server's event loop would block it; refused")
        remaining = call.remaining_s()
        if remaining is not None and remaining <= 0:
            raise DeadlineExceededError(BLS_DEADLINE_MESSAGE)
        request = InferenceRequest(
            model=call.model,
            inputs=dict(call.inputs),
            version=call.version,
            outputs=[RequestedOutput(name) for name in call.outputs or []],
            parameters=dict(call.parameters),
            timeout_s=remaining,
        )
        future = asyncio.run_coroutine_threadsafe(self.inference.infer(request), self.loop)
        try:
            return future.result(timeout=remaining).outputs
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise DeadlineExceededError(BLS_DEADLINE_MESSAGE) from None
        except MCPError:
            raise
        except Exception as exc:  # noqa: BLE001 - the target's failure, as the caller's error
            raise InferenceFailedError(f"BLS request to {call.model!r} failed: {type(exc).__name__}") from None


def bind_bls(gateway: object, inference: InferenceHandlers, loop: asyncio.AbstractEventLoop) -> None:
    """Point the backend factory's BLS gateway (if it has one) at ``inference`` on ``loop``."""
    if isinstance(gateway, BlsGateway):
        gateway.bind(BlsBridge(inference, loop))
