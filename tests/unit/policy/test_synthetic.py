from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.policy.synthetic import SyntheticShapes, parse_shape_override, resolve_shape, synthetic_inputs
from mcp2026ai.registry import Preprocessing

IMAGE = TensorSpec(name="x", datatype="FP32", shape=[-1, 3, -1, -1])


def test_batch_and_default_dims() -> None:
    spec = TensorSpec(name="ids", datatype="INT64", shape=[-1, -1])
    assert resolve_shape(spec, 4, SyntheticShapes(default_dim=7)) == [4, 7]


def test_image_dims_come_from_preprocessing() -> None:
    prep = Preprocessing(height=48, width=192)
    assert resolve_shape(IMAGE, 2, SyntheticShapes(), prep) == [2, 3, 48, 192]
    nhwc = TensorSpec(name="x", datatype="FP32", shape=[-1, -1, -1, 3])
    assert resolve_shape(nhwc, 1, SyntheticShapes(), Preprocessing(layout="NHWC", height=8, width=9)) == [1, 8, 9, 3]


def test_override_wins_and_batch_is_replaced() -> None:
    shapes = SyntheticShapes(overrides={"x": [1, 3, 32, 100]})
    assert resolve_shape(IMAGE, 8, shapes, Preprocessing()) == [8, 3, 32, 100]


def test_override_that_does_not_fit_names_the_input() -> None:
    with pytest.raises(InvalidArgumentError, match=r"--shape x: \[1, 4, 32, 100\] does not fit"):
        resolve_shape(IMAGE, 1, SyntheticShapes(overrides={"x": [1, 4, 32, 100]}))


def test_parse_shape_override() -> None:
    assert parse_shape_override("x=1x3x48x192") == ("x", [1, 3, 48, 192])
    for bad in ("x", "x=", "x=1xax2", "=1x2", "x=0x3"):
        with pytest.raises(InvalidArgumentError, match=repr(bad)):
            parse_shape_override(bad)


def test_inputs_match_signature_dtypes_and_are_deterministic() -> None:
    signature = Signature(
        inputs=[
            TensorSpec(name="f", datatype="FP16", shape=[-1, 2]),
            TensorSpec(name="i", datatype="INT32", shape=[-1]),
            TensorSpec(name="b", datatype="BOOL", shape=[3]),
            TensorSpec(name="s", datatype="BYTES", shape=[-1]),
        ],
        outputs=[TensorSpec(name="y", datatype="FP32", shape=[-1])],
    )
    first = synthetic_inputs(signature, 5)
    assert {k: (v.dtype, v.shape) for k, v in first.items()} == {
        "f": (np.dtype(np.float16), (5, 2)),
        "i": (np.dtype(np.int32), (5,)),
        "b": (np.dtype(np.bool_), (3,)),
        "s": (np.dtype(object), (5,)),
    }
    again = synthetic_inputs(signature, 5)
    assert np.array_equal(first["f"], again["f"]) and np.array_equal(first["i"], again["i"])
