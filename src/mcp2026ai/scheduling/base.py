"""The Executor seam between the data plane and a model's runtime backend.

The data plane hands each request to the executor of the model version it routed to. The executor
checks its tensors against its backend's signature (InvalidInputError before anything is queued);
a direct executor then runs it on a worker thread at once; the batching executor queues it by SLA
class and merges concurrent requests into batches. Both return the request's own outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.base import RequestDetails, Tensors


class Executor(Protocol):
    async def start(self) -> None: ...

    async def submit(
        self,
        inputs: Tensors,
        outputs: Sequence[str] | None,
        *,
        sla_class: SLAClass,
        deadline: float | None,
        details: RequestDetails | None = None,
    ) -> dict[str, np.ndarray]:
        """Run one request; ``deadline`` is a time.monotonic() instant after which it must not start;
        ``details`` (its id, parameters) reach a backend that takes them (Triton Python models)."""
        ...

    def check_admission(self, sla_class: SLAClass) -> None:
        """OverloadedError if a request of ``sla_class`` arriving now would be refused (a cheap early check)."""
        ...

    async def stop(self, drain_timeout_s: float) -> None:
        """Stop accepting, finish or fail what is queued within the timeout."""
        ...
