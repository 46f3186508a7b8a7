"""Execution plans: a frozen description the runtime turns into a live session."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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

    def ort_providers(self) -> list[str]:
        """The provider chain, always ending with CPU as onnxruntime's fallback."""
        chain = [ORT_PROVIDER_NAMES[self.provider]]
        if self.provider is not Provider.CPU:
            chain.append(ORT_PROVIDER_NAMES[Provider.CPU])
        return chain

    def describe(self) -> str:
        threads = self.intra_op_threads or "auto"
        runtime = "" if self.runtime == DEFAULT_RUNTIME else f"{self.runtime}:"
        return (
            f"{runtime}{self.provider.value}/{self.precision.value} threads={threads} "
            f"batch<={self.max_batch_size} delay={self.max_queue_delay_ms:g}ms"
        )


DEFAULT_PLAN = Plan()
