"""Check request tensors against a model signature before anything runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mcp2026ai.errors import InvalidInputError
from mcp2026ai.ir.dtypes import v2_datatype
from mcp2026ai.ir.signature import Signature


def validate_inputs(signature: Signature, inputs: Mapping[str, np.ndarray]) -> None:
    """Raise InvalidInputError naming the first tensor whose name, dtype or shape is wrong."""
    expected = {spec.name for spec in signature.inputs}
    unexpected = sorted(set(inputs) - expected)
    if unexpected:
        raise InvalidInputError(f"unexpected input {unexpected[0]!r}; the model takes {sorted(expected)}")
    for spec in signature.inputs:
        array = inputs.get(spec.name)
        if array is None:
            raise InvalidInputError(f"missing input {spec.name!r}")
        got = v2_datatype(array.dtype)
        if got != spec.datatype:
            raise InvalidInputError(f"input {spec.name!r}: datatype {got} does not match the model's {spec.datatype}")
        if 0 in array.shape:
            raise InvalidInputError(f"input {spec.name!r}: shape {list(array.shape)} has a zero-sized dimension")
        if not spec.accepts_shape(tuple(array.shape)):
            raise InvalidInputError(
                f"input {spec.name!r}: shape {list(array.shape)} does not match the model's {spec.shape}"
            )


def validate_output_names(signature: Signature, names: Sequence[str]) -> None:
    known = {spec.name for spec in signature.outputs}
    for name in names:
        if name not in known:
            raise InvalidInputError(f"unknown output {name!r}; the model produces {sorted(known)}")
