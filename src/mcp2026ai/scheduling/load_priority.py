"""The threads models are built on, and so the CPU priority they compute at for their whole life.

A model's load creates the threads it will compute on (runtime/thread_priority.py): onnxruntime's
intra-op workers when its session is built, a language-model engine's step thread when the engine is.
Each starts with the nice value of the thread that built it. So with ``best_effort_nice`` (host
tuning ``best_effort_load_nice``, off by default) a best-effort model is built on a thread that much
nicer: its cold load (parsing, graph optimisation, weight packing), its sessions' workers (which
then block instead of spinning) and its engine's decode steps all run below the latency-critical
models' threads, which the operating system then runs first on cores both want. Models of the other
classes, and every model with the knob off, are built as before (``asyncio.to_thread``).

Under the memory budget's mixed workload (benchmarks/lifecycle/budget.py) the best-effort models'
cold loads, ResNet-50 runs and decode steps are what takes the cores from the pinned latency-critical
model (docs/model-lifecycle.md, "The pinned model's tail").
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.runtime.thread_priority import THREAD_PRIORITIES, lower_thread_priority

T = TypeVar("T")

LOAD_WORKERS = 2
"""Best-effort loads built at once (a memory budget runs its loads one at a time anyway)."""


def sla_class_of(contract: InferenceContract | None) -> SLAClass:
    """A model's class: its contract's, best-effort without one."""
    return contract.sla_class if contract is not None else SLAClass.BEST_EFFORT


class LoadThreads:
    """Runs a model's build off the event loop: on a thread ``best_effort_nice`` nicer for a best-effort
    model (Linux), on the default executor otherwise."""

    def __init__(self, best_effort_nice: int | None = None) -> None:
        self.best_effort_nice = best_effort_nice if THREAD_PRIORITIES else None
        self._lowered: ThreadPoolExecutor | None = None

    def lowers(self, sla_class: SLAClass) -> bool:
        """Whether a model of ``sla_class`` is built on a lowered thread."""
        return bool(self.best_effort_nice) and sla_class is SLAClass.BEST_EFFORT

    async def run(self, sla_class: SLAClass, build: Callable[..., T], *args: object) -> T:
        """``build(*args)`` on the thread a model of ``sla_class`` is built on (context variables kept)."""
        if not self.lowers(sla_class):
            return await asyncio.to_thread(build, *args)
        call = functools.partial(contextvars.copy_context().run, build, *args)
        return await asyncio.get_running_loop().run_in_executor(self._lowered_pool(), call)

    def _lowered_pool(self) -> ThreadPoolExecutor:
        if self._lowered is None:
            self._lowered = ThreadPoolExecutor(
                max_workers=LOAD_WORKERS,
                thread_name_prefix="mcp-load-best-effort",
                initializer=lower_thread_priority,
                initargs=(self.best_effort_nice or 0,),
            )
        return self._lowered

    def shutdown(self) -> None:
        """Stop the lowered threads once their builds are done (without waiting here)."""
        if self._lowered is not None:
            self._lowered.shutdown(wait=False)
