"""Host tuning: every setting that changes the interpreter's or the operating system's state, in one place.

Each knob won a few milliseconds on one benchmark, the co-located overload (benchmarks/overload/overload.py:
8,000 connections, the load generator on the server's two cores; figures in docs/notebook/benchmarks.md, and in
docs/serving.md "Host tuning"), and none was A/B-tested on the other standard benchmarks. So every knob
is **off by default**: ``mcp serve`` with its defaults leaves the interpreter and the OS as it found
them. ``--host-tuning latency`` turns on the set measured for that overload; each field can also be set
alone. Off is spelled one way per kind: ``None`` for a value, ``false`` for a switch.

The knobs (and where each acts):

- ``gil_switch_interval_ms`` (scheduling/gil.py): Python's GIL switch interval while model runs of a
  millisecond or more are on worker threads. 0.5 ms: latency-critical p99 57.8 -> 54.6 ms, goodput
  0.80 -> 0.82 x capacity (ten pairs); costs 5 % HTTP throughput where batches take microseconds.
- ``bulk_batch_nice`` (scheduling/cpu_priority.py): batches without a latency-critical request run on
  threads this much nicer while that class is served. 10: p99 53.8 -> 51.1 ms, goodput unchanged.
- ``best_effort_load_nice`` (scheduling/load_priority.py): a best-effort model is built on a thread this
  much nicer, so the threads it computes on (its sessions' intra-op workers, which then block instead of
  spinning, and a language-model engine's step thread) run at that priority for its life. Measured on the memory
  budget's mixed workload (benchmarks/lifecycle/budget.py, interleaved with ``--variants``;
  docs/model-lifecycle.md); not in a preset until the other workloads' A/B is done.
- ``freeze_startup_heap`` and ``full_collection_after``: ``gc.freeze()`` after start-up, and full
  collections every N middle ones (CPython: 10). Tiny MLP over gRPC c=32: 821 -> 898 req/s, p99 95 -> 69
  ms; 4x overload with 3,000 connections: no answer in flight during a full collection.
- ``lone_session_plan`` (serving/artifacts.py, runtime/lone.py): the plan a model without a measured
  plan runs becomes one single-threaded instance per core plus a lone session of all of them. Goodput
  under the overload 0.66 -> 0.78 x capacity, but it **holds the model's weights twice** and the
  latency-critical p99 rose 51 -> 62 ms.

Tried and not kept, so no knob: the event loop's thread at nice +3 / +6 (no better at the client),
middle-generation collections three times as often (docs/notebook/benchmarks.md).
"""

from __future__ import annotations

import gc
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.scheduling.cpu_priority import BULK_NICE
from mcp2026ai.scheduling.gil import SHORT_INTERVAL_S, SWITCH_INTERVAL

Preset = Literal["off", "latency"]

FULL_COLLECTION_AFTER = 100
"""The latency preset's middle-generation collections between two full ones (CPython's default: 10)."""

PRESETS: dict[str, dict[str, object]] = {
    "off": {},
    "latency": {
        "gil_switch_interval_ms": SHORT_INTERVAL_S * 1000,
        "bulk_batch_nice": BULK_NICE,
        "freeze_startup_heap": True,
        "full_collection_after": FULL_COLLECTION_AFTER,
        "lone_session_plan": True,
    },
}
"""Named sets of knobs: ``latency`` is what the co-located overload measured (docs/serving.md)."""


class HostTuning(BaseModel):
    """Process-wide and OS-wide settings of a serving process; all off unless asked for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preset: Preset = Field(
        "off",
        description="A named set of the knobs below (latency: the co-located overload's); fields set "
        "alongside it override it.",
    )
    gil_switch_interval_ms: float | None = Field(
        None,
        gt=0,
        le=100,
        description="Python's GIL switch interval while model runs of 1 ms or more are on worker threads "
        "(scheduling/gil.py). None: Python's own, never changed.",
    )
    bulk_batch_nice: int | None = Field(
        None,
        ge=1,
        le=19,
        description="While latency-critical requests are served, batches without one run on threads this much "
        "nicer (Linux; scheduling/cpu_priority.py). None: every batch at normal priority.",
    )
    best_effort_load_nice: int | None = Field(
        None,
        ge=1,
        le=19,
        description="A best-effort model is built on a thread this much nicer: its sessions' intra-op workers "
        "(blocking, not spinning) and its engine's step thread compute at that priority "
        "(Linux; scheduling/load_priority.py). None: every model built at normal priority.",
    )
    freeze_startup_heap: bool = Field(
        False, description="gc.freeze() once the models are loaded: full collections stop walking them."
    )
    full_collection_after: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Middle-generation collections between two full ones. None: CPython's own (10).",
    )
    lone_session_plan: bool = Field(
        False,
        description="A model with no measured plan runs one single-threaded instance per core plus a lone session "
        "of all cores (runtime/lone.py): holds its weights twice. false: one session (onnxruntime's default).",
    )

    @model_validator(mode="before")
    @classmethod
    def _expand_preset(cls, data: object) -> object:
        """A preset's knobs under the fields given; a bare preset name stands for ``{preset: name}``."""
        if isinstance(data, str):
            data = {"preset": data}
        if not isinstance(data, dict) or data.get("preset") not in PRESETS:
            return data
        return PRESETS[str(data["preset"])] | data

    @property
    def switch_interval_s(self) -> float | None:
        return None if self.gil_switch_interval_ms is None else self.gil_switch_interval_ms / 1000

    def changes(self) -> dict[str, object]:
        """The knobs that are on, by name (empty: nothing about the host is changed)."""
        return {
            name: value for name, value in self.model_dump(exclude={"preset"}).items() if value not in (None, False)
        }


def apply_host_tuning(tuning: HostTuning) -> None:
    """At process start, before any model runs: the knobs that hold for the process's life.
    Off leaves each setting as it is (the switch interval is then never shortened)."""
    SWITCH_INTERVAL.short_s = tuning.switch_interval_s
    if tuning.full_collection_after is not None:
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, tuning.full_collection_after)


def settle_startup_heap(tuning: HostTuning) -> None:
    """Once the models are loaded: move everything alive out of the collector's reach, when asked."""
    if tuning.freeze_startup_heap:
        gc.collect()
        gc.freeze()
