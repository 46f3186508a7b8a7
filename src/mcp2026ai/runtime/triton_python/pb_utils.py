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
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mcp2026ai.errors import MCPError, UnavailableError
from mcp2026ai.runtime.triton_python.bls import CURRENT, BlsCall

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1

TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}
_TYPE_NUMBERS = [np.bool_, np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]
_TYPE_NUMBERS += [np.float16, np.float32, np.float64, np.object_]
_log = logging.getLogger("triton_python_backend_utils")


class TritonError:
    """An error a model puts in a response (``InferenceResponse(error=TritonError("..."))``)."""

    UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG, UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED = range(8)

    def __init__(self, message: str, code: int = 1) -> None:
        self._message, self._code = str(message), int(code)

    def message(self) -> str:
        return self._message

    def code(self) -> int:
        return self._code

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, code={self._code})"


class TritonModelException(Exception):
    """What a model raises to fail its requests (its message goes to the client)."""

    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class Tensor:
    """A named tensor: ``Tensor(name, numpy_array)``."""

    def __init__(self, name: str, data: np.ndarray) -> None:
        if not isinstance(data, np.ndarray):
            raise TritonModelException(f"Tensor {name!r}: data must be a numpy array, got {type(data).__name__}")
        if data.dtype.kind in ("U", "S"):  # Triton keeps strings as object arrays of bytes
            data = np.array([_as_bytes(item) for item in data.reshape(-1)], dtype=np.object_).reshape(data.shape)
        self._name, self._array = str(name), data

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        return self._array

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def triton_dtype(self) -> int:
        return numpy_to_triton_type(self._array.dtype.type) or 0

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        array: Any = self._array
        return array.__dlpack__()

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.to_dlpack()

    def __dlpack_device__(self) -> tuple[int, int]:
        device: tuple[int, int] = self._array.__dlpack_device__()
        return device

    @staticmethod
    def from_dlpack(name: str, dlpack: Any) -> Tensor:
        """A tensor sharing the memory of any object with ``__dlpack__`` (a torch tensor, a numpy array)."""
        if not hasattr(dlpack, "__dlpack__"):
            raise TritonModelException("Tensor.from_dlpack: pass an object with __dlpack__ (a raw capsule is not read)")
        return Tensor(name, np.from_dlpack(dlpack))

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, shape={self.shape()}, dtype={self._array.dtype})"


def _as_bytes(item: Any) -> bytes:
    return item if isinstance(item, bytes) else str(item).encode()


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


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type: int) -> Any:
    return _TYPE_NUMBERS[data_type - 1] if 1 <= data_type <= len(_TYPE_NUMBERS) else None


def numpy_to_triton_type(data_type: Any) -> int | None:
    if data_type is np.bytes_:
        return 13
    for number, kind in enumerate(_TYPE_NUMBERS, start=1):
        if data_type == kind:
            return number
    return None


class Logger:
    """``pb_utils.Logger.log_info(...)``: to this server's log."""

    INFO, WARNING, ERROR, VERBOSE = logging.INFO, logging.WARNING, logging.ERROR, logging.DEBUG

    @staticmethod
    def log(message: str, level: int = logging.INFO) -> None:
        _log.log(level, "%s", message)

    @staticmethod
    def log_info(message: str) -> None:
        _log.info("%s", message)

    @staticmethod
    def log_warn(message: str) -> None:
        _log.warning("%s", message)

    @staticmethod
    def log_error(message: str) -> None:
        _log.error("%s", message)

    @staticmethod
    def log_verbose(message: str) -> None:
        _log.debug("%s", message)
