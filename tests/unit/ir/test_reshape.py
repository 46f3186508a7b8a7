"""Triton's reshape wrapped into the ONNX graph: clients' shapes outside, the model's inside."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.ir import import_model
from mcp2026ai.ir.reshape import Reshape, wrap_reshapes
from tests.support.triton_repository import add_sub


def test_batched_reshape_keeps_the_batch(tmp_path: Path) -> None:
    source = add_sub(tmp_path / "add_sub.onnx", width=4)  # INPUT0, INPUT1 [-1, 4] -> OUTPUT0, OUTPUT1 [-1, 4]
    wrapped = wrap_reshapes(
        source,
        tmp_path / "wrapped.onnx",
        inputs=[Reshape("INPUT0", (2, 2), (4,), batched=True)],
        outputs=[Reshape("OUTPUT0", (2, 2), (4,), batched=True)],
    )
    signature = import_model(wrapped, tmp_path).signature
    assert [(t.name, t.shape) for t in signature.inputs] == [("INPUT0", [-1, 2, 2]), ("INPUT1", [-1, 4])]
    assert [(t.name, t.shape) for t in signature.outputs] == [("OUTPUT0", [-1, 2, 2]), ("OUTPUT1", [-1, 4])]
    a = np.arange(12, dtype=np.int32).reshape(3, 2, 2)
    b = np.ones((3, 4), np.int32)
    total, difference = ort.InferenceSession(str(wrapped)).run(None, {"INPUT0": a, "INPUT1": b})
    np.testing.assert_array_equal(total, (a.reshape(3, 4) + b).reshape(3, 2, 2))
    np.testing.assert_array_equal(difference, a.reshape(3, 4) - b)
