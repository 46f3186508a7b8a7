"""Best-effort models compute at a lower CPU priority: they are built on a lowered thread.

A model's load creates the threads it computes on, each with the nice value of the thread that
creates it (runtime/thread_priority.py): onnxruntime's intra-op workers when a session is built, a
language-model engine's step thread (onnxruntime's caller for its decode steps) when the engine is.
With ``best_effort_nice`` (host tuning ``best_effort_load_nice``, off by default) a best-effort model's
build runs on a short-lived thread that much nicer, so all of those compute below the latency-critical
models' threads for the model's life, and its sessions' workers block instead of spinning. A tensor
model's batches run on the executor's threads, which the event loop creates at normal priority (with
``bulk_batch_nice``, scheduling/cpu_priority.py, those without a latency-critical request run lower).
Models of the other classes, and every model with the knob off, are built as before.

Under the memory budget's mixed workload (benchmarks/lifecycle/budget.py) the best-effort models'
cold loads, ResNet-50 runs and decode steps are what takes the cores from the pinned latency-critical
model (docs/model-lifecycle.md, "The pinned model's tail").
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TypeVar

from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.runtime.thread_priority import THREAD_PRIORITIES, run_lowered

T = TypeVar("T")


def sla_class_of(contract: InferenceContract | None) -> SLAClass:
    """A model's class: its contract's, best-effort without one."""
    return contract.sla_class if contract is not None else SLAClass.BEST_EFFORT


class LoadThreads:
    """Runs a model's build off the event loop: a best-effort model's on a thread ``best_effort_nice``
    nicer (Linux), the others on the default executor."""

    def __init__(self, best_effort_nice: int | None = None) -> None:
        self.best_effort_nice = best_effort_nice if THREAD_PRIORITIES else None

    def lowers(self, sla_class: SLAClass) -> bool:
        """Whether a model of ``sla_class`` is built on a lowered thread."""
        return bool(self.best_effort_nice) and sla_class is SLAClass.BEST_EFFORT

    async def run(self, sla_class: SLAClass, build: Callable[..., T], *args: object) -> T:
        """``build(*args)`` off the event loop, on a lowered thread for a best-effort model. The caller
        trims the heap afterwards (serving: the lowered thread's heap arena keeps what it freed)."""
        call = functools.partial(build, *args)
        if not self.lowers(sla_class) or self.best_effort_nice is None:
            return await asyncio.to_thread(call)
        return await asyncio.to_thread(run_lowered, call, self.best_effort_nice)
