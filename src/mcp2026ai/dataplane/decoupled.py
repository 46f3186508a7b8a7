"""Decoupled models (``model_transaction_policy { decoupled: true }``): any number of responses per
request, as a stream (gRPC ``ModelStreamInfer``).

The model's ``execute`` runs on a worker thread and may go on sending from threads of its own after it
returned; each response crosses to the event loop as it is sent and is yielded in order. The stream of
one request ends at the model's final flag, at its error, or when no response came for
:data:`IDLE_TIMEOUT_S` (or past the request's deadline): a model that never closes its sender cannot
hold a stream forever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import numpy as np

from mcp2026ai.errors import DeadlineExceededError, MCPError
from mcp2026ai.runtime.base import QueuedRequest
from mcp2026ai.runtime.triton_python import PythonModelBackend
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names
from mcp2026ai.serving.served_model import ServedModel

IDLE_TIMEOUT_S = 60.0
Item = dict[str, np.ndarray] | MCPError | None


def is_decoupled(served: ServedModel) -> bool:
    return isinstance(served.backend, PythonModelBackend) and served.backend.decoupled


async def stream_responses(served: ServedModel, request: QueuedRequest) -> AsyncIterator[dict[str, np.ndarray]]:
    """Each response's outputs as the model sends it; its error raised where it comes."""
    backend = served.backend
    assert isinstance(backend, PythonModelBackend)
    validate_inputs(backend.signature, request.inputs)
    if request.outputs:
        validate_output_names(backend.signature, request.outputs)
    deadline = request.deadline
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Item] = asyncio.Queue()

    def emit(item: Item) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    running = loop.run_in_executor(None, backend.run_decoupled, request, emit)
    try:
        while True:
            item = await asyncio.wait_for(queue.get(), _wait_s(deadline))
            if item is None:
                return
            if isinstance(item, MCPError):
                raise item
            yield item
    except TimeoutError:
        raise DeadlineExceededError(f"model {served.record.name!r} sent no response in time") from None
    finally:
        if running.done() and not running.cancelled():
            running.exception()  # retrieved: run_decoupled reports its failures through emit


def _wait_s(deadline: float | None) -> float:
    if deadline is None:
        return IDLE_TIMEOUT_S
    return max(min(IDLE_TIMEOUT_S, deadline - time.monotonic()), 0.0)
