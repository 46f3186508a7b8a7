"""Candidate plans: every (variant, provider, threads, batch) the hardware and the contract allow.

A *variant* is a model artifact at one precision: the registered FP32 model itself, or a verified
quantized/FP16 child version. Which children exist is answered by a :data:`VariantLookup`; the default,
:func:`registry_variants`, reads child versions (``ModelVersion.parent``) and their latest
``verification`` annotation from the registry catalog.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import InferenceContract, Precision
from mcp2026ai.policy.probe import HardwareProfile
from mcp2026ai.quantization.verification_store import verified_drift, version_precision
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.plan import DEFAULT_RUNTIME, Plan, Provider

GPU_PROVIDERS = (Provider.CUDA, Provider.TENSORRT)
INFERENCE_PRECISIONS: dict[str, Precision] = {"bf16": Precision.BF16}
"""OpenVINO inference precision hints that compute an FP32 artifact at a contract precision below FP32."""


class Variant(BaseModel):
    """A model artifact a plan can run: which version, at which precision, how far it drifts from FP32."""

    model_config = ConfigDict(frozen=True)

    version: str
    digest: str
    name: str = Field("", description="Model name of a child registered under another name; empty: same model.")
    precision: Precision = Precision.FP32
    drift: float | None = Field(None, description="Verified relative L2 drift against FP32; None if not verified.")

    def label(self) -> str:
        return f"{self.precision.value}@{self.version}"


class Candidate(BaseModel):
    """One plan to measure, bound to the variant whose artifact it runs."""

    model_config = ConfigDict(frozen=True)

    plan: Plan
    variant: Variant

    def describe(self) -> str:
        return f"{self.plan.describe()} [{self.variant.version}]"

    def session_key(self) -> tuple[object, ...]:
        """Candidates sharing this key can share one session (only the batch and its delay differ)."""
        plan = self.plan
        return (
            self.variant.digest,
            plan.runtime,
            plan.provider,
            plan.intra_op_threads,
            plan.inter_op_threads,
            plan.graph_optimization,
            plan.performance_hint,
            plan.streams,
            plan.inference_precision,
            plan.instances,
        )


VariantLookup = Callable[[ModelVersion, InferenceContract], list[Variant]]


def base_variant(record: ModelVersion) -> Variant:
    """The registered artifact itself (FP32 unless tagged ``precision=...``)."""
    precision = Precision(record.tags.get("precision", Precision.FP32.value))
    return Variant(version=record.version, digest=record.digest, precision=precision, drift=0.0)


def _verified_drift(registry: ModelRegistry, child: ModelVersion) -> tuple[Precision | None, float | None]:
    """The child's precision and the drift of its latest *passing* verification (None if never passed)."""
    drift = verified_drift(registry, child.name, child.version)
    if drift is None:
        return None, None
    return version_precision(child), drift


def registry_variants(registry: ModelRegistry) -> VariantLookup:
    """Verified child versions of a record (``parent`` = its ref, its version, or its digest)."""

    def lookup(record: ModelVersion, contract: InferenceContract) -> list[Variant]:
        parents = {record.ref, record.digest}
        variants = []
        for child in registry.catalog.versions():
            is_child = child.parent in parents or (child.name == record.name and child.parent == record.version)
            if not is_child or (child.name, child.version) == (record.name, record.version):
                continue
            precision, drift = _verified_drift(registry, child)
            if precision is not None and precision in contract.precision.allowed:
                name = child.name if child.name != record.name else ""
                variants.append(
                    Variant(version=child.version, digest=child.digest, name=name, precision=precision, drift=drift)
                )
        return variants

    return lookup


def thread_counts(cores: int) -> list[int]:
    """1, 2, 4, ... up to and including ``cores``."""
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return [*counts, max(1, cores)]


def batch_sizes(contract: InferenceContract, batchable: bool) -> list[int]:
    """1, powers of two and the contract's preferred sizes, up to ``batching.max_batch_size``."""
    if not batchable:
        return [1]
    limit = contract.batching.max_batch_size
    sizes = {1, limit, *contract.batching.preferred_batch_sizes}
    n = 2
    while n < limit:
        sizes.add(n)
        n *= 2
    return sorted(size for size in sizes if 1 <= size <= limit)


def enumerate_candidates(
    record: ModelVersion,
    contract: InferenceContract,
    hardware: HardwareProfile,
    variants: list[Variant],
    runtime: str | None = None,
) -> list[Candidate]:
    """Cartesian product of variants x runtime settings (providers, thread counts, hints) x batch sizes;
    ``runtime`` keeps only that runtime's (``mcp serve --backend openvino``).

    Under the ``latency`` objective every plan is work-conserving: its queue delay is 0, so a batch
    is whatever is already queued (up to the plan's max batch) and no request waits for company.
    """
    sizes = batch_sizes(contract, record.signature.batchable)
    delay = 0.0 if contract.objective == "latency" else contract.batching.max_queue_delay_ms
    candidates = []
    for variant in [base_variant(record), *variants]:
        for base in runtime_plans(hardware, contract, runtime):
            reduced = INFERENCE_PRECISIONS.get(base.inference_precision or "")
            if reduced is not None and variant.precision is not Precision.FP32:
                continue  # a reduced inference precision computes the FP32 artifact, not a quantized one
            for size in sizes:
                plan = base.model_copy(
                    update={
                        "precision": reduced or variant.precision,
                        "max_batch_size": size,
                        "max_queue_delay_ms": delay if size > 1 else 0.0,
                    }
                )
                candidates.append(Candidate(plan=plan, variant=variant))
    return candidates


def instance_splits(cores: int) -> list[tuple[int, int]]:
    """(threads per instance, instances) that split the cores among concurrent runs: 1 x cores, 2 x cores/2 ..."""
    return [(threads, cores // threads) for threads in thread_counts(cores) if cores // threads > 1]


def runtime_plans(hardware: HardwareProfile, contract: InferenceContract, runtime: str | None = None) -> list[Plan]:
    """One plan per session setting (batch 1) of each runtime installed here, or only of ``runtime``.

    onnxruntime: each provider, each thread count on the CPU, and the CPU's cores split among
    concurrent instances (Triton's instance_group), whose lone requests run on all those cores
    (``lone_threads``: runtime/lone.py). OpenVINO (CPU plugin, f32): the LATENCY hint with one stream
    at each thread count, and the THROUGHPUT hint with one stream per instance (lone requests: all
    the cores, LATENCY hint); each again
    at a reduced inference precision (bf16) the CPU runs natively, where the contract allows it (its
    drift is measured against FP32 while profiling, never assumed).
    """
    wanted = [name for name in hardware.runtimes if runtime is None or name == runtime]
    if runtime is not None and runtime not in wanted:
        wanted = [runtime]  # forced but not probed as installed: creating its backend says what to install
    cores = hardware.logical_cores
    plans = []
    if DEFAULT_RUNTIME in wanted:
        for provider in hardware.providers:
            if provider in GPU_PROVIDERS:
                plans.append(Plan(provider=provider, intra_op_threads=cores, inter_op_threads=1))
                continue
            plans += [
                Plan(provider=provider, intra_op_threads=intra, inter_op_threads=1) for intra in thread_counts(cores)
            ]
            plans += [
                Plan(provider=provider, intra_op_threads=intra, inter_op_threads=1, instances=count, lone_threads=cores)
                for intra, count in instance_splits(cores)
            ]
    if "openvino" in wanted:
        openvino = [
            Plan(runtime="openvino", intra_op_threads=intra, performance_hint="LATENCY", streams=1)
            for intra in thread_counts(cores)
        ]
        openvino += [
            Plan(
                runtime="openvino",
                intra_op_threads=intra,
                performance_hint="THROUGHPUT",
                streams=n,
                instances=n,
                lone_threads=cores,
            )
            for intra, n in instance_splits(cores)
        ]
        plans += openvino + reduced_precision_plans(hardware, contract, openvino)
    return plans


def reduced_precision_plans(hardware: HardwareProfile, contract: InferenceContract, plans: list[Plan]) -> list[Plan]:
    """``plans`` again at each reduced inference precision the CPU has and the contract allows."""
    allowed = contract.precision.allowed
    hints = [hint for hint in hardware.reduced_precisions if INFERENCE_PRECISIONS[hint] in allowed]
    return [plan.model_copy(update={"inference_precision": hint}) for hint in hints for plan in plans]
