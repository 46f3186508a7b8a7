"""A small pipeline of two ONNX models and Python steps, with a branch and a join, for tests.

``text`` (BYTES [1]: four comma-separated numbers) -> parse (Python) -> x [1, 4]; x -> double
(model: 2x) and x -> shift (model: x + 1) side by side; join (Python) adds them: ``total`` = 3x + 1.
The parse step answers a text that is not four numbers with InvalidInputError (a 400) and the text
``crash`` with a RuntimeError (a 500).
"""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper, numpy_helper

from support.models import _save

STEPS = """
import numpy as np

from mcp2026ai.errors import InvalidInputError


class Parse:
    def initialize(self, config):
        self.width = config["width"]

    def execute(self, batch):
        text = batch["text"].reshape(-1)[0].decode()
        if text == "crash":
            raise RuntimeError("the parser crashed")
        if text == "slow":
            import time

            time.sleep(1.0)
        try:
            values = [float(part) for part in text.split(",")]
        except ValueError:
            raise InvalidInputError(f"not numbers: {text!r}") from None
        if len(values) != self.width:
            raise InvalidInputError(f"expected {self.width} numbers, got {len(values)}")
        return {"x": np.asarray([values], dtype=np.float32)}

    def finalize(self):
        pass


class Join:
    def initialize(self, config):
        pass

    def execute(self, batch):
        return {"total": batch["a"] + batch["b"]}

    def finalize(self):
        pass
"""

SPEC = """
kind: pipeline
name: calc
inputs: [{name: text, datatype: BYTES, shape: [1]}]
outputs: [{name: total, datatype: FP32, shape: [-1, 4]}, {name: doubled, datatype: FP32, shape: [-1, 4]}]
contract: {sla_class: throughput-guaranteed, latency: {p99_ms: 200}}
steps:
  - name: parse
    python: steps/calc_steps.py
    class: Parse
    requires: [numpy]
    config: {width: 4}
    inputs: {text: text}
    outputs: {x: x}
  - name: double
    model: models/double.onnx
    inputs: {x: x}
    outputs: {y: doubled}
  - name: shift
    model: models/shift.onnx
    inputs: {x: x}
    outputs: {y: shifted}
  - name: join
    python: steps/calc_steps.py
    class: Join
    inputs: {a: doubled, b: shifted}
    outputs: {total: total}
"""


def scalar_model(path: Path, op: str, value: float, elem: int = TensorProto.FLOAT) -> Path:
    """x [-1, 4] -> y = x (op) value."""
    constant = numpy_helper.from_array(__import__("numpy").asarray(value, dtype="float32"), "c")
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "c"], ["y"])],
        f"{op.lower()}_{value}",
        [helper.make_tensor_value_info("x", elem, ["batch", 4])],
        [helper.make_tensor_value_info("y", elem, ["batch", 4])],
        initializer=[constant],
    )
    return _save(graph, path)


def write_pipeline(folder: Path, spec: str = SPEC, steps: str = STEPS) -> Path:
    """The pipeline's folder (spec, models/, steps/); returns the spec's path."""
    (folder / "models").mkdir(parents=True, exist_ok=True)
    (folder / "steps").mkdir(exist_ok=True)
    scalar_model(folder / "models" / "double.onnx", "Mul", 2.0)
    scalar_model(folder / "models" / "shift.onnx", "Add", 1.0)
    (folder / "steps" / "calc_steps.py").write_text(steps)
    path = folder / "calc.yaml"
    path.write_text(spec)
    return path


def _model_config(name: str) -> str:
    return f"""name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ 4 ] }} ]
"""


ENSEMBLE_CONFIG = """name: "calc_ensemble"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [
  { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "MID" data_type: TYPE_FP32 dims: [ 4 ] }
]
ensemble_scheduling {
  step [
    { model_name: "double" model_version: -1 input_map { key: "x" value: "IN" } output_map { key: "y" value: "MID" } },
    { model_name: "shift" model_version: -1 input_map { key: "x" value: "MID" } output_map { key: "y" value: "OUT" } }
  ]
}
"""


def write_ensemble_repository(root: Path, ensemble: str = ENSEMBLE_CONFIG) -> Path:
    """A Triton repository: ``double`` (2x) and ``shift`` (x + 1), ONNX, and ``calc_ensemble``: OUT = 2x + 1."""
    for name, op, value in (("double", "Mul", 2.0), ("shift", "Add", 1.0)):
        (root / name / "1").mkdir(parents=True, exist_ok=True)
        scalar_model(root / name / "1" / "model.onnx", op, value)
        (root / name / "config.pbtxt").write_text(_model_config(name))
    (root / "calc_ensemble" / "1").mkdir(parents=True, exist_ok=True)
    (root / "calc_ensemble" / "config.pbtxt").write_text(ensemble)
    return root
