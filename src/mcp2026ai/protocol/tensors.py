"""Tensor encodings shared by both transports: raw little-endian bytes and JSON lists.

BYTES tensors use Triton's raw layout: each element is a 4-byte little-endian length followed by
that many bytes.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from mcp2026ai.errors import InvalidInputError, PayloadTooLargeError
from mcp2026ai.ir.dtypes import V2_ITEM_SIZE, numpy_dtype

MAX_ELEMENTS = 1 << 28
MAX_DIMS = 32
"""More dimensions than any model input has (numpy itself stops at 64)."""
_JSON_TYPES: dict[str, tuple[type, ...]] = {"b": (bool,), "i": (int,), "u": (int,), "f": (int, float)}
"""The JSON value types each datatype kind takes: a number tensor never takes ``true`` or ``null``."""


def element_count(name: str, shape: Sequence[Any]) -> int:
    """Validate a requested shape and return its element count."""
    if not isinstance(shape, list | tuple) or not all(
        isinstance(dim, int) and not isinstance(dim, bool) for dim in shape
    ):
        raise InvalidInputError(f"input {name!r}: shape must be a list of integers, got {str(shape)[:200]}")
    if len(shape) > MAX_DIMS:
        raise InvalidInputError(f"input {name!r}: shape has {len(shape)} dimensions (at most {MAX_DIMS})")
    if any(dim < 0 for dim in shape):
        raise InvalidInputError(f"input {name!r}: shape {list(shape)} has a negative dimension")
    count = math.prod(shape)
    nonzero = math.prod(dim for dim in shape if dim)  # [0, 2**62] holds nothing but numpy still refuses it
    if count > MAX_ELEMENTS or nonzero > MAX_ELEMENTS:
        raise PayloadTooLargeError(f"input {name!r}: shape {list(shape)} has {count} elements (limit {MAX_ELEMENTS})")
    return count


def array_from_raw(name: str, datatype: str, shape: Sequence[int], raw: bytes | memoryview) -> np.ndarray:
    count = element_count(name, shape)
    if datatype == "BYTES":
        return _bytes_from_raw(name, raw, count).reshape(shape)
    dtype = numpy_dtype(datatype).newbyteorder("<")
    expected = count * V2_ITEM_SIZE[datatype]
    if len(raw) != expected:
        raise InvalidInputError(
            f"input {name!r}: {len(raw)} bytes of data for shape {list(shape)} {datatype} (expected {expected})"
        )
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def array_to_raw(array: np.ndarray) -> bytes:
    if array.dtype.kind in ("O", "U", "S"):
        return _bytes_to_raw(array)
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def array_from_list(name: str, datatype: str, shape: Sequence[int], data: Any) -> np.ndarray:
    count = element_count(name, shape)
    dtype = numpy_dtype(datatype)
    try:
        if datatype == "BYTES":
            flat = np.array([_as_bytes(item) for item in _flatten(data)], dtype=np.object_)
        else:
            flat = _numbers(name, datatype, dtype, data)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"input {name!r}: data does not fit datatype {datatype} ({str(exc)[:200]})") from None
    if flat.size != count:
        raise InvalidInputError(f"input {name!r}: {flat.size} values for shape {list(shape)} ({count} expected)")
    return flat.reshape(shape)


def _numbers(name: str, datatype: str, dtype: np.dtype, data: Any) -> np.ndarray:
    """JSON values as ``dtype``, refusing what would silently change meaning: ``true``/``null`` in a
    number tensor, fractions in an integer tensor, values the datatype cannot hold (``1e300`` as FP32)."""
    objects = np.asarray(data, dtype=object).reshape(-1)
    allowed = _JSON_TYPES.get(dtype.kind, (int, float))
    if not set(map(type, objects)) <= set(allowed):
        raise InvalidInputError(f"input {name!r}: {datatype} data must be {_kind_words(dtype)}")
    if dtype.kind in "iu":
        wide = objects.astype(np.int64 if dtype.kind == "i" else np.uint64)  # OverflowError past 64 bits
        info = np.iinfo(dtype)
        if wide.size and (wide.min() < info.min or wide.max() > info.max):
            raise InvalidInputError(f"input {name!r}: {datatype} data holds a value out of range for {datatype}")
        return wide.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        flat = objects.astype(dtype)
    if dtype.kind == "f" and not np.isfinite(flat).all():
        raise InvalidInputError(f"input {name!r}: {datatype} data holds a value out of range for {datatype}")
    return flat


def _kind_words(dtype: np.dtype) -> str:
    return {"b": "true/false", "i": "integers", "u": "integers", "f": "numbers"}.get(dtype.kind, "numbers")


def array_to_list(array: np.ndarray) -> list[Any]:
    flat = array.reshape(-1)
    if array.dtype.kind in ("O", "S"):
        return [item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item) for item in flat]
    if array.dtype.kind == "U":
        return [str(item) for item in flat]
    return flat.tolist()  # type: ignore[no-any-return]


def _bytes_from_raw(name: str, raw: bytes | memoryview, count: int) -> np.ndarray:
    view = memoryview(raw)
    items: list[bytes] = []
    offset = 0
    while offset < len(view):
        if offset + 4 > len(view):
            raise InvalidInputError(f"input {name!r}: truncated BYTES element length at offset {offset}")
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        if offset + length > len(view):
            raise InvalidInputError(f"input {name!r}: BYTES element of {length} bytes overruns the data")
        items.append(bytes(view[offset : offset + length]))
        offset += length
    if len(items) != count:
        raise InvalidInputError(f"input {name!r}: {len(items)} BYTES elements for {count} expected")
    return np.array(items, dtype=np.object_)


def _bytes_to_raw(array: np.ndarray) -> bytes:
    parts = []
    for item in array.reshape(-1):
        data = _as_bytes(item)
        parts.append(struct.pack("<I", len(data)))
        parts.append(data)
    return b"".join(parts)


def _as_bytes(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    return str(item).encode("utf-8")


_END = object()


def _flatten(data: Any) -> list[Any]:
    """The leaves of nested lists in order; iterative, since a hostile body may nest a thousand deep."""
    if not isinstance(data, list | tuple):
        return [data]
    leaves: list[Any] = []
    stack = [iter(data)]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, list | tuple):
            stack.append(iter(item))
        else:
            leaves.append(item)
    return leaves
