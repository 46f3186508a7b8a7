"""Signatures: shape acceptance with dynamic dimensions, lookup, batchability."""

from __future__ import annotations

import pytest

from mcp2026ai.ir import Signature, TensorSpec


@pytest.mark.parametrize(
    ("spec_shape", "shape", "accepted"),
    [
        ([-1, 4], (1, 4), True),
        ([-1, 4], (64, 4), True),
        ([-1, 4], (2, 5), False),
        ([-1, 4], (2, 4, 1), False),
        ([-1, 4], (4,), False),
        ([1, 3, -1, -1], (1, 3, 48, 192), True),
        ([1, 3, -1, -1], (2, 3, 48, 192), False),
        ([], (), True),
        ([], (1,), False),
    ],
)
def test_accepts_shape(spec_shape: list[int], shape: tuple[int, ...], accepted: bool) -> None:
    assert TensorSpec(name="t", datatype="FP32", shape=spec_shape).accepts_shape(shape) is accepted


def test_batch_dynamic() -> None:
    assert TensorSpec(name="t", datatype="FP32", shape=[-1, 3]).batch_dynamic
    assert not TensorSpec(name="t", datatype="FP32", shape=[1, 3]).batch_dynamic
    assert not TensorSpec(name="t", datatype="FP32", shape=[]).batch_dynamic


def test_lookup_and_batchable() -> None:
    signature = Signature(
        inputs=[TensorSpec(name="a", datatype="FP32", shape=[-1, 2])],
        outputs=[
            TensorSpec(name="b", datatype="INT64", shape=[-1]),
            TensorSpec(name="c", datatype="FP32", shape=[1]),
        ],
    )
    assert signature.input("a") is signature.inputs[0]
    assert signature.input("b") is None
    assert signature.output("c") is signature.outputs[1]
    assert signature.output("zzz") is None
    assert not signature.batchable
    assert Signature(inputs=signature.inputs, outputs=signature.outputs[:1]).batchable


def test_signature_round_trips_through_json() -> None:
    signature = Signature(
        inputs=[TensorSpec(name="x", datatype="FP32", shape=[-1, 4])],
        outputs=[TensorSpec(name="y", datatype="FP16", shape=[-1, 3])],
    )
    assert Signature.model_validate_json(signature.model_dump_json()) == signature
