"""onnxruntime backend: a session built from a Plan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.errors import InferenceFailedError, InvalidInputError, ModelNotReadyError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.runtime.cpu_affinity import confine
from mcp2026ai.runtime.lone import LoneGate
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan
from mcp2026ai.runtime.thread_priority import lowered_session_config
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names

_OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def session_options(plan: Plan, optimized_model_path: Path | None = None) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = confine(options, plan.intra_op_threads)
    options.inter_op_num_threads = plan.inter_op_threads
    options.graph_optimization_level = _OPTIMIZATION_LEVELS[plan.graph_optimization]
    options.log_severity_level = 3
    # onnxruntime's intra-op workers spin while they wait for work; by default they go on spinning after
    # a run ends, on cores that the event loop and any co-located process need between two batches.
    # Stopped at the end of each run (they still spin within one): with the load generator on the same
    # two cores, 3-6 ms less CPU per batch and ~16 % more answers under overload; c=1 latency within
    # 2 % (docs/llm-reliability.md, co-located overload).
    options.add_session_config_entry("session.force_spinning_stop", "1")
    for key, value in lowered_session_config().items():  # built on a niced thread: its workers block
        options.add_session_config_entry(key, value)
    if optimized_model_path is not None:
        options.optimized_model_filepath = str(optimized_model_path)
    return options


_ORT_INVALID_ARGUMENT: type[Exception] = getattr(
    ort.capi.onnxruntime_pybind11_state, "InvalidArgument", ValueError
)  # onnxruntime's INVALID_ARGUMENT status: the caller's inputs, not the model, are at fault

PLATFORM = "onnxruntime_onnx"
"""Triton's platform name for an ONNX model on onnxruntime."""


class OnnxRuntimeBackend:
    """Runs one ONNX model with onnxruntime according to a Plan.

    ``model`` is a file, or the model's bytes (a signature-verified or decrypted artifact: the
    session is built from exactly those bytes, and they are released once it is).
    """

    def __init__(
        self,
        model: Path | bytes,
        signature: Signature,
        plan: Plan = DEFAULT_PLAN,
        optimized_model_path: Path | None = None,
        label: str | None = None,
    ) -> None:
        self.model_path = model if isinstance(model, Path) else None
        self._model_bytes = model if isinstance(model, bytes) else None
        self.label = label or (model.name if isinstance(model, Path) else "in-memory model")
        self._signature = signature
        self.plan = plan
        self.optimized_model_path = optimized_model_path
        self._session: ort.InferenceSession | None = None
        self._lone: ort.InferenceSession | None = None
        self.gate = LoneGate()

    @property
    def signature(self) -> Signature:
        return self._signature

    @property
    def platform(self) -> str:
        return PLATFORM

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> None:
        available = set(ort.get_available_providers())
        providers = [name for name in self.plan.ort_providers() if name in available]
        if self.model_path is not None:
            source: str | bytes = str(self.model_path)
        elif self._model_bytes is not None:
            source = self._model_bytes
        else:
            raise ModelNotReadyError(f"{self.label}: model bytes were released after the first load")
        options = session_options(self.plan, self.optimized_model_path)
        self._session = ort.InferenceSession(source, options, providers=providers)
        if self.plan.lone_threads:  # built from the same source, before model bytes are released
            lone_options = session_options(self.plan.lone_plan())
            self._lone = ort.InferenceSession(source, lone_options, providers=providers)
        self._model_bytes = None

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        session = self._session
        if session is None:
            raise ModelNotReadyError(f"{self.label}: backend is not loaded")
        validate_inputs(self._signature, inputs)
        names = list(outputs) if outputs else [spec.name for spec in self._signature.outputs]
        validate_output_names(self._signature, names)
        feed = {name: _ort_value(array) for name, array in inputs.items()}
        try:
            results = self._run(session, names, feed)
        except Exception as exc:  # onnxruntime raises its own pybind exception types  # noqa: BLE001
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if isinstance(exc, _ORT_INVALID_ARGUMENT):  # the inputs, e.g. a size the graph cannot take
                raise InvalidInputError(f"the model rejects these inputs: {message[:500]}") from None
            raise InferenceFailedError(f"onnxruntime failed: {message[:500]}") from None
        return dict(zip(names, results, strict=True))

    def _run(self, session: ort.InferenceSession, names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        lone = self._lone
        if lone is None:
            return list(session.run(names, feed))
        with self.gate.enter() as alone:
            return list((lone if alone else session).run(names, feed))

    def unload(self) -> None:
        self._session = None
        self._lone = None


def _ort_value(array: np.ndarray) -> np.ndarray:
    """onnxruntime wants str elements for string tensors; the v2 protocol carries bytes."""
    if array.dtype != np.object_:
        return array
    decode = np.vectorize(
        lambda item: item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item), otypes=[object]
    )
    return decode(array) if array.size else array
