"""``triton_python_backend_utils`` as this server provides it to Triton Python models.

The part of Triton's module (python_backend src/pb_stub.cc and src/resources/
triton_python_backend_utils.py) that real models use, with the same names, signatures and
behaviour; :data:`SUPPORTED` lists it, and a model using any other attribute is refused at load
(:mod:`.support`). Tensors are numpy arrays on the CPU: ``as_numpy`` hands out the request's own
array (no copy), ``to_dlpack``/``from_dlpack`` exchange them through DLPack without copies.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp2026ai.errors import MCPError, UnavailableError
from mcp2026ai.runtime.triton_python.bls import CURRENT, BlsCall
from mcp2026ai.runtime.triton_python.pb_tensors import TRITON_STRING_TO_NUMPY as TRITON_STRING_TO_NUMPY
from mcp2026ai.runtime.triton_python.pb_tensors import Logger as Logger
from mcp2026ai.runtime.triton_python.pb_tensors import Tensor as Tensor
from mcp2026ai.runtime.triton_python.pb_tensors import TritonError as TritonError
from mcp2026ai.runtime.triton_python.pb_tensors import TritonModelException as TritonModelException
from mcp2026ai.runtime.triton_python.pb_tensors import numpy_to_triton_type as numpy_to_triton_type
from mcp2026ai.runtime.triton_python.pb_tensors import triton_string_to_numpy as triton_string_to_numpy
from mcp2026ai.runtime.triton_python.pb_tensors import triton_to_numpy_type as triton_to_numpy_type

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1


class InferenceResponse:
    """A request's response: output tensors, or an error."""

    def __init__(
        self,
        output_tensors: Sequence[Tensor] | None = None,
        error: TritonError | None = None,
        parameters: Mapping[str, Any] | str | None = None,
    ) -> None:
        self._tensors = list(output_tensors or [])
        self._error = error
        self._parameters = parameters if isinstance(parameters, str) else json.dumps(dict(parameters or {}))

    def output_tensors(self) -> list[Tensor]:
        return self._tensors

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error

    def parameters(self) -> str:
        return self._parameters


class InferenceResponseSender:
    """A decoupled request's sender: any number of ``send(response)``, then ``send(flags=FINAL)``."""

    def __init__(self, emit: Callable[[InferenceResponse | None, bool], None]) -> None:
        self._emit = emit
        self._closed = False

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        final = bool(flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        self._closed = final
        self._emit(response, final)

    def is_cancelled(self) -> bool:
        return False


class InferenceRequest:
    """A request handed to ``execute``, or one a model builds to call another model (BLS)."""

    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: Sequence[Tensor] = (),
        requested_output_names: Sequence[str] = (),
        model_name: str = "",
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: Any = None,
        trace: Any = None,
        parameters: Mapping[str, Any] | str | None = None,
    ) -> None:
        self._id, self._correlation_id, self._flags = request_id, correlation_id, flags
        self._inputs = list(inputs)
        self._outputs = list(requested_output_names)
        self._model, self._version, self._timeout_us = _text(model_name), int(model_version), int(timeout)
        self._parameters = parameters if isinstance(parameters, str) else json.dumps(dict(parameters or {}))
        self._sender: InferenceResponseSender | None = None

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def request_id(self) -> str:
        return self._id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def flags(self) -> int:
        return self._flags

    def timeout(self) -> int:
        return self._timeout_us

    def parameters(self) -> str:
        return self._parameters

    def model_name(self) -> str:
        return self._model

    def requested_output_names(self) -> list[str]:
        return self._outputs

    def get_response_sender(self) -> InferenceResponseSender:
        if self._sender is None:
            raise TritonModelException("get_response_sender: only a decoupled model's requests have a sender")
        return self._sender

    def is_cancelled(self) -> bool:
        return False

    def exec(self, decoupled: bool = False) -> InferenceResponse:
        """Run this request on the served model it names (BLS); an error comes back in the response."""
        if decoupled:
            raise TritonModelException("exec(decoupled=True): BLS calls to decoupled models are not supported here")
        context = CURRENT.get()
        if context is None:
            error = "BLS exec() outside execute() (e.g. in a thread the model started) is not supported here"
            return InferenceResponse(error=TritonError(error, TritonError.UNAVAILABLE))
        call = BlsCall(
            model=self._model,
            inputs={tensor.name(): tensor.as_numpy() for tensor in self._inputs},
            outputs=self._outputs or None,
            version=str(self._version) if self._version > 0 else None,
            deadline=_earliest(context.deadline, self._timeout_us),
            parameters=json.loads(self._parameters),
        )
        try:
            outputs = context.gateway(call)
        except MCPError as exc:
            return InferenceResponse(error=TritonError(str(exc), _error_code(exc)))
        return InferenceResponse([Tensor(name, array) for name, array in outputs.items()])

    def async_exec(self, decoupled: bool = False) -> asyncio.Future[InferenceResponse]:
        """``await request.async_exec()`` inside an ``async def execute``: runs on the loop's executor."""
        context = CURRENT.get()

        def run() -> InferenceResponse:
            token = CURRENT.set(context)
            try:
                return self.exec(decoupled)
            finally:
                CURRENT.reset(token)

        return asyncio.get_running_loop().run_in_executor(None, run)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _earliest(deadline: float | None, timeout_us: int) -> float | None:
    own = time.monotonic() + timeout_us / 1e6 if timeout_us > 0 else None
    known = [instant for instant in (deadline, own) if instant is not None]
    return min(known) if known else None


def _error_code(exc: MCPError) -> int:
    name = type(exc).__name__
    if "NotFound" in name:
        return TritonError.NOT_FOUND
    if isinstance(exc, UnavailableError):
        return TritonError.UNAVAILABLE
    return TritonError.INVALID_ARG if "Invalid" in name else TritonError.INTERNAL


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    return next((tensor for tensor in inference_request.inputs() if tensor.name() == name), None)


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Tensor | None:
    return next((tensor for tensor in inference_response.output_tensors() if tensor.name() == name), None)


def get_input_config_by_name(model_config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next((entry for entry in model_config.get("input", []) if entry.get("name") == name), None)


def get_output_config_by_name(model_config: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    return next((entry for entry in model_config.get("output", []) if entry.get("name") == name), None)


def using_decoupled_model_transaction_policy(model_config: Mapping[str, Any]) -> bool:
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))
