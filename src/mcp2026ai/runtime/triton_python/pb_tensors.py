"""The tensors, errors, type names and logger of ``triton_python_backend_utils`` (re-exported by
:mod:`.pb_utils`, the module models import)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

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
