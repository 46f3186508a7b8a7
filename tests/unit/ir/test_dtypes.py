"""Datatype names across KServe v2, numpy and ONNX."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from mcp2026ai.errors import InvalidInputError, ModelImportError
from mcp2026ai.ir.dtypes import V2_ITEM_SIZE, V2_TO_NUMPY, numpy_dtype, onnx_elem_to_v2, v2_datatype


@pytest.mark.parametrize("name", sorted(V2_TO_NUMPY))
def test_numpy_round_trip(name: str) -> None:
    assert v2_datatype(numpy_dtype(name)) == name


@pytest.mark.parametrize("dtype", [np.dtype("<U5"), np.dtype("S3"), np.dtype(object)])
def test_strings_are_bytes(dtype: np.dtype) -> None:
    assert v2_datatype(dtype) == "BYTES"


def test_item_sizes() -> None:
    assert V2_ITEM_SIZE["FP32"] == 4
    assert V2_ITEM_SIZE["INT64"] == 8
    assert V2_ITEM_SIZE["BOOL"] == 1
    assert "BYTES" not in V2_ITEM_SIZE


def test_unknown_v2_name() -> None:
    with pytest.raises(InvalidInputError, match=r"unsupported datatype 'FLOAT32' \(known: BOOL, "):
        numpy_dtype("FLOAT32")


def test_numpy_dtype_without_v2_name() -> None:
    with pytest.raises(InvalidInputError, match="complex64"):
        v2_datatype(np.dtype(np.complex64))


def test_onnx_types() -> None:
    assert onnx_elem_to_v2(TensorProto.FLOAT, "m") == "FP32"
    assert onnx_elem_to_v2(TensorProto.FLOAT16, "m") == "FP16"
    assert onnx_elem_to_v2(TensorProto.STRING, "m") == "BYTES"


def test_unsupported_onnx_type_names_where() -> None:
    with pytest.raises(ModelImportError, match=r"^model.onnx: 'x': tensor type BFLOAT16 is not supported$"):
        onnx_elem_to_v2(TensorProto.BFLOAT16, "model.onnx: 'x'")
