"""Execution plans: a frozen description the runtime turns into a live session."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp2026ai.contract import Precision


class Provider(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"
    OPENVINO = "openvino"


ORT_PROVIDER_NAMES: dict[Provider, str] = {
    Provider.CPU: "CPUExecutionProvider",
    Provider.CUDA: "CUDAExecutionProvider",
    Provider.TENSORRT: "TensorrtExecutionProvider",
    Provider.OPENVINO: "OpenVINOExecutionProvider",
}

DEFAULT_RUNTIME = "onnxruntime"

GraphOptimization = Literal["disable", "basic", "extended", "all"]
PerformanceHint = Literal["LATENCY", "THROUGHPUT"]
InferencePrecision = Literal["f32", "bf16", "f16"]


class Plan(BaseModel):
    """How to run a model: runtime, provider, precision, threads and batching limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runtime: str = Field(DEFAULT_RUNTIME, description="A name in the backend catalog (runtime/catalog.py).")
    provider: Provider = Provider.CPU
    precision: Precision = Precision.FP32
    intra_op_threads: int = Field(0, ge=0, le=1024, description="0 lets onnxruntime choose.")
    inter_op_threads: int = Field(1, ge=0, le=1024)
    graph_optimization: GraphOptimization = "all"
    max_batch_size: int = Field(1, ge=1, le=4096)
    max_queue_delay_ms: float = Field(0.0, ge=0, le=10_000)
    performance_hint: PerformanceHint | None = Field(
        None, description="OpenVINO: the CPU plugin's performance hint (None: the plugin's default)."
    )
    streams: int = Field(0, ge=0, le=1024, description="OpenVINO: CPU inference streams (0: the hint decides).")
    inference_precision: InferencePrecision | None = Field(
        None, description="OpenVINO: inference precision hint (None: f32, the model's own arithmetic)."
    )
    instances: int = Field(
        1,
        ge=1,
        le=64,
        description=(
            "Batches run at once (Triton's instance_group count), each on intra_op_threads threads: several"
            " single-threaded instances keep every core busy under concurrent load without the"
            " synchronisation of one multi-threaded run (OpenVINO: one stream per instance)."
        ),
    )

    lone_threads: int = Field(
        0,
        ge=0,
        le=1024,
        description=(
            "With several instances: a batch that finds no other running runs on a second session of this"
            " many threads (the instances' cores together), the others waiting for it; so a lone request"
            " gets every core and concurrent ones the instances (runtime/lone.py). 0: off."
        ),
    )

    measured: bool = Field(
        True,
        description=(
            "Whether the policy measured this plan against the contract: a measured plan sets the batching"
            " window it traded latency for; an unmeasured one (a default) leaves the contract's batching as"
            " it is and adds only its instances."
        ),
    )

    @model_validator(mode="after")
    def _lone_needs_instances(self) -> Plan:
        if self.lone_threads and self.instances < 2:
            raise ValueError(f"lone_threads ({self.lone_threads}) needs several instances (instances={self.instances})")
        return self

    def lone_plan(self) -> Plan:
        """The one-instance plan a lone batch runs with (``lone_threads`` threads; OpenVINO: the LATENCY hint)."""
        update: dict[str, object] = {"intra_op_threads": self.lone_threads, "instances": 1, "lone_threads": 0}
        if self.performance_hint is not None:
            update |= {"performance_hint": "LATENCY", "streams": 1}
        return self.model_copy(update=update)

    def ort_providers(self) -> list[str]:
        """The provider chain, always ending with CPU as onnxruntime's fallback."""
        chain = [ORT_PROVIDER_NAMES[self.provider]]
        if self.provider is not Provider.CPU:
            chain.append(ORT_PROVIDER_NAMES[Provider.CPU])
        return chain

    @property
    def computes_on_caller(self) -> bool:
        """Whether one batch's compute runs on the thread that calls ``infer`` (so that thread's CPU time
        measures it), with no other batch running at once. False for several instances, and for
        OpenVINO's THROUGHPUT hint, whose streams compute on the plugin's own threads while the
        caller waits: such a batch must never run inline on the event loop (scheduling.placement)."""
        return self.instances == 1 and self.performance_hint != "THROUGHPUT"

    def describe(self) -> str:
        threads = self.intra_op_threads or "auto"
        runtime = "" if self.runtime == DEFAULT_RUNTIME else f"{self.runtime}:"
        tuning = ""
        if self.performance_hint is not None:
            tuning += f" hint={self.performance_hint.lower()}"
        if self.streams:
            tuning += f" streams={self.streams}"
        if self.inference_precision is not None:
            tuning += f" infer={self.inference_precision}"
        if self.instances > 1:
            tuning += f" instances={self.instances}"
        if self.lone_threads:
            tuning += f" lone={self.lone_threads}"
        return (
            f"{runtime}{self.provider.value}/{self.precision.value} threads={threads}{tuning} "
            f"batch<={self.max_batch_size} delay={self.max_queue_delay_ms:g}ms"
        )


DEFAULT_PLAN = Plan(measured=False)
