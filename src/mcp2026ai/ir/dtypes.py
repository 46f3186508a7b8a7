"""Datatype names across the KServe v2 protocol, numpy and ONNX."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from mcp2026ai.errors import InvalidInputError, ModelImportError

# KServe v2 / Triton datatype name -> numpy dtype. BYTES holds variable-length byte strings.
V2_TO_NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(np.object_),
}

NUMPY_TO_V2: dict[np.dtype, str] = {dtype: name for name, dtype in V2_TO_NUMPY.items()}

ONNX_TO_V2: dict[int, str] = {
    TensorProto.BOOL: "BOOL",
    TensorProto.UINT8: "UINT8",
    TensorProto.UINT16: "UINT16",
    TensorProto.UINT32: "UINT32",
    TensorProto.UINT64: "UINT64",
    TensorProto.INT8: "INT8",
    TensorProto.INT16: "INT16",
    TensorProto.INT32: "INT32",
    TensorProto.INT64: "INT64",
    TensorProto.FLOAT16: "FP16",
    TensorProto.FLOAT: "FP32",
    TensorProto.DOUBLE: "FP64",
    TensorProto.STRING: "BYTES",
}

V2_ITEM_SIZE: dict[str, int] = {name: dtype.itemsize for name, dtype in V2_TO_NUMPY.items() if name != "BYTES"}


def numpy_dtype(datatype: str) -> np.dtype:
    """The numpy dtype of a v2 datatype name, or InvalidInputError naming it."""
    try:
        return V2_TO_NUMPY[datatype]
    except KeyError:
        known = ", ".join(V2_TO_NUMPY)
        raise InvalidInputError(f"unsupported datatype {datatype!r} (known: {known})") from None


def v2_datatype(dtype: np.dtype) -> str:
    """The v2 datatype name of a numpy dtype; unicode and bytes strings map to BYTES."""
    dtype = np.dtype(dtype)
    if dtype.kind in ("U", "S", "O"):
        return "BYTES"
    try:
        return NUMPY_TO_V2[dtype]
    except KeyError:
        raise InvalidInputError(f"numpy dtype {dtype} has no v2 datatype") from None


def onnx_elem_to_v2(elem_type: int, where: str) -> str:
    try:
        return ONNX_TO_V2[elem_type]
    except KeyError:
        name = TensorProto.DataType.Name(elem_type) if elem_type in TensorProto.DataType.values() else elem_type
        raise ModelImportError(f"{where}: tensor type {name} is not supported") from None
