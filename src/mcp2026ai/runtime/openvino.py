"""OpenVINO backend: the ONNX model compiled directly by OpenVINO's CPU plugin, tuned by a Plan.

The plan sets the plugin's performance hint (``LATENCY`` or ``THROUGHPUT``), its streams, the
threads each stream may use (``intra_op_threads``) and the inference precision hint. A plan with
several ``instances`` has as many streams, so that many infer requests run at once. Without a precision
hint the model runs in f32: the CPU plugin would otherwise pick bf16 on CPUs that have it, which
changes the model's numbers (a bf16 plan is a choice the plan states, ``inference_precision``).

Each concurrent ``infer`` takes an infer request from a small pool (a compiled model's requests
are not shared between threads); outputs are copied out of the request before it is reused.
"""

from __future__ import annotations

import queue
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov
import openvino.properties as props
import openvino.properties.hint as hints

from mcp2026ai.errors import InferenceFailedError, InvalidInputError, ModelNotReadyError
from mcp2026ai.ir.signature import Signature
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.runtime.lone import LoneGate
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names

PLATFORM = "openvino"
"""Triton's platform name for a model run by its OpenVINO backend."""

DEVICE = "CPU"

_HINTS = {"LATENCY": hints.PerformanceMode.LATENCY, "THROUGHPUT": hints.PerformanceMode.THROUGHPUT}
_PRECISIONS = {"f32": ov.Type.f32, "bf16": ov.Type.bf16, "f16": ov.Type.f16}


def compile_config(plan: Plan) -> dict[str, Any]:
    """The CPU plugin's configuration for ``plan``."""
    config: dict[str, Any] = {hints.inference_precision: _PRECISIONS[plan.inference_precision or "f32"]}
    if plan.performance_hint is not None:
        config[hints.performance_mode] = _HINTS[plan.performance_hint]
    if plan.streams:
        config[props.num_streams] = plan.streams
    if plan.intra_op_threads:
        config[props.inference_num_threads] = plan.intra_op_threads * max(plan.streams, 1)
    return config


def cpu_precisions() -> list[str]:
    """Inference precisions the CPU plugin supports here (``f32`` always; ``bf16``/``f16`` if the CPU has them)."""
    capabilities = set(ov.Core().get_property(DEVICE, "OPTIMIZATION_CAPABILITIES"))
    return ["f32", *(name for name in ("bf16", "f16") if name.upper() in capabilities)]


class OpenVinoBackend:
    """Runs one ONNX model with OpenVINO (CPU plugin) according to a Plan.

    ``model`` is a file, or the model's bytes (a signature-verified or decrypted artifact).
    ``optimized_model_path`` is onnxruntime's and is ignored here.
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
        self._compiled: ov.CompiledModel | None = None
        self._model: ov.Model | None = None
        self._outputs: dict[str, int] = {}
        self._requests: queue.SimpleQueue[ov.InferRequest] = queue.SimpleQueue()
        self._lone: ov.InferRequest | None = None
        self._lone_compiled: ov.CompiledModel | None = None
        """With ``plan.lone_threads``: the infer request of the all-cores compiled model (runtime/lone.py)."""
        self.gate = LoneGate()

    @property
    def signature(self) -> Signature:
        return self._signature

    @property
    def platform(self) -> str:
        return PLATFORM

    @property
    def loaded(self) -> bool:
        return self._compiled is not None

    def load(self) -> None:
        core = ov.Core()
        try:
            if self.model_path is not None:
                model = core.read_model(str(self.model_path))
            elif self._model_bytes is not None:
                model = core.read_model(model=self._model_bytes, weights=b"")
            else:
                raise ModelNotReadyError(f"{self.label}: model bytes were released after the first load")
            compiled = core.compile_model(model, DEVICE, compile_config(self.plan))
            if self.plan.lone_threads:
                self._lone_compiled = core.compile_model(model, DEVICE, compile_config(self.plan.lone_plan()))
                self._lone = self._lone_compiled.create_infer_request()
        except ModelNotReadyError:
            raise
        except Exception as exc:  # openvino raises RuntimeError subclasses of its own  # noqa: BLE001
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InferenceFailedError(f"{self.label}: OpenVINO cannot compile it ({message[:300]})") from None
        self._outputs = {name: index for index, port in enumerate(compiled.outputs) for name in port.get_names()}
        self._compiled = compiled
        self._model = model  # outlives the compiled model: parts of it live in the ONNX frontend's library
        self._model_bytes = None

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        compiled = self._compiled
        if compiled is None:
            raise ModelNotReadyError(f"{self.label}: backend is not loaded")
        validate_inputs(self._signature, inputs)
        names = list(outputs) if outputs else [spec.name for spec in self._signature.outputs]
        validate_output_names(self._signature, names)
        feed = {name: np.ascontiguousarray(array) for name, array in inputs.items()}
        lone = self._lone
        try:
            if lone is None:
                return self._run(self._request(compiled), feed, names, pooled=True)
            with self.gate.enter() as alone:
                return self._run(lone if alone else self._request(compiled), feed, names, pooled=not alone)
        except KeyError as exc:
            raise InferenceFailedError(f"OpenVINO's compiled model has no output {exc}") from None
        except Exception as exc:  # openvino's own RuntimeError subclasses  # noqa: BLE001
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "shape" in message.lower() or "dimension" in message.lower():
                raise InvalidInputError(f"the model rejects these inputs: {message[:500]}") from None
            raise InferenceFailedError(f"OpenVINO failed: {message[:500]}") from None

    def _run(
        self, request: ov.InferRequest, feed: dict[str, np.ndarray], names: list[str], pooled: bool
    ) -> dict[str, np.ndarray]:
        """Outputs of one run on ``request`` (a pooled request goes back to the pool afterwards)."""
        try:
            request.infer(feed)
            return {name: request.get_output_tensor(self._outputs[name]).data.copy() for name in names}
        finally:
            if pooled:
                self._requests.put(request)

    def _request(self, compiled: ov.CompiledModel) -> ov.InferRequest:
        try:
            return self._requests.get_nowait()
        except queue.Empty:
            return compiled.create_infer_request()

    def unload(self) -> None:
        self._requests = queue.SimpleQueue()
        self._lone = None
        self._lone_compiled = None
        self._compiled = None  # infer requests, then the compiled model, then the model it was built from
        self._model = None
        self._outputs = {}
