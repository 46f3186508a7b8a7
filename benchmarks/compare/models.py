"""The benchmark models: a dynamic-batch copy of the bundled ResNet-50 and a tiny MLP.

ResNet-50 (onnx's "light" zoo copy shipped in the ``onnx`` wheel: the real ResNet-50 graph with
synthetic constant weights) has a fixed batch dimension of 1, and its flatten before the classifier
is a ``Reshape`` to the constant ``[1, 2048]``. :func:`resnet50_dynamic` makes the copy batchable:
input/output dim 0 becomes the symbolic ``batch``, that one shape constant becomes ``[-1, 2048]``
(identical at batch 1, checked), and the weights stop being overridable graph inputs (IR >= 4), so
onnxruntime may constant-fold them (BatchNorm into Conv) as it would for any exported model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # tests/support/models.py: the project's generated test models

from mcp2026ai.bundled import bundled_model_path  # noqa: E402
from support.models import mlp_model  # noqa: E402

FLATTEN_SHAPE = "OC2_DUMMY_1"
RESNET_INPUT = "gpu_0/data_0"
RESNET_SHAPE = (3, 224, 224)
CLASSIFIER_INPUT = "data_0"
CLASSIFIER_OUTPUT = "softmaxout_1"
MLP_FEATURES = 16


def resnet50_dynamic(path: Path, check_batches: tuple[int, ...] = (8, 32)) -> Path:
    """Write the dynamic-batch ResNet-50 copy to ``path``; check it matches the original at batch 1
    and gives [batch, 1000] at each of ``check_batches``."""
    source = bundled_model_path("onnx-resnet50")
    model = onnx.load(str(source))
    initializers = {init.name for init in model.graph.initializer}
    used = {name for node in model.graph.node for name in node.input}
    kept = [init for init in model.graph.initializer if init.name in used]  # one unused blob: drop it
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    data_inputs = [value for value in model.graph.input if value.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(data_inputs)
    for value in [*model.graph.input, *model.graph.output]:
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    for index, init in enumerate(model.graph.initializer):
        if init.name == FLATTEN_SHAPE:
            flatten = numpy_helper.from_array(np.array([-1, 2048], np.int64), FLATTEN_SHAPE)
            model.graph.initializer[index].CopyFrom(flatten)
    model.ir_version = max(model.ir_version, 4)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    _check_resnet(source, path, check_batches)
    return path


def plain_inputs(source: Path, target: Path, dynamic_batch: bool = False) -> Path:
    """The onnx package's light models list their weights as graph inputs too (IR < 4 style); keep
    only the data input, as a model exported today has it (and, if asked, a dynamic batch dimension)."""
    model = onnx.load(str(source))
    weights = {init.name for init in model.graph.initializer}
    data = [value for value in model.graph.input if value.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(data)
    if dynamic_batch:
        for value in [*model.graph.input, *model.graph.output]:
            value.type.tensor_type.shape.dim[0].dim_param = "batch"
    model.ir_version = max(model.ir_version, 4)
    onnx.save(model, str(target))
    return target


def squeezenet_classifier(path: Path) -> Path:
    """The 224x224 image classifier of the benchmarks: the light zoo's SqueezeNet 1.0 (1x3x224x224 FP32
    -> 1000 class scores), with a dynamic batch dimension; checked against the original at batch 1."""
    source = bundled_model_path("onnx-squeezenet")
    plain_inputs(source, path, dynamic_batch=True)
    one = np.random.default_rng(0).standard_normal((1, *RESNET_SHAPE)).astype(np.float32)
    before = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    feeds = {CLASSIFIER_INPUT: one}
    want = before.run([CLASSIFIER_OUTPUT], feeds)[0]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run([CLASSIFIER_OUTPUT], feeds)[0]
    if not np.allclose(want, got, rtol=1e-4, atol=1e-6):
        raise RuntimeError("the dynamic-batch SqueezeNet differs from the original at batch 1")
    four = session.run([CLASSIFIER_OUTPUT], {CLASSIFIER_INPUT: np.repeat(one, 4, axis=0)})[0]
    if four.shape[0] != 4:
        raise RuntimeError(f"the dynamic-batch SqueezeNet gave shape {four.shape} at batch 4")
    return path


def _check_resnet(original: Path, dynamic: Path, batches: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    one = rng.standard_normal((1, *RESNET_SHAPE)).astype(np.float32)
    before = ort.InferenceSession(str(original), providers=["CPUExecutionProvider"]).run(None, {RESNET_INPUT: one})[0]
    session = ort.InferenceSession(str(dynamic), providers=["CPUExecutionProvider"])
    after = session.run(None, {RESNET_INPUT: one})[0]
    if not np.allclose(before, after, rtol=1e-4, atol=1e-5):
        raise RuntimeError("dynamic-batch ResNet-50 differs from the original at batch 1")
    for batch in batches:
        out = session.run(None, {RESNET_INPUT: np.repeat(one, batch, axis=0)})[0]
        if out.shape != (batch, 1000):
            raise RuntimeError(f"dynamic-batch ResNet-50 gave shape {out.shape} at batch {batch}")


def tiny_mlp(path: Path) -> Path:
    """The tests' tiny MLP: FP32 [batch, 16] -> softmax [batch, 10]."""
    return mlp_model(path, features=MLP_FEATURES)


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    print(resnet50_dynamic(out / "resnet50.onnx"), tiny_mlp(out / "mlp.onnx"))
