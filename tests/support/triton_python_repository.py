"""Triton repositories with ``backend: "python"`` models, built for tests.

The Python models and configs are Triton's own, unchanged (python_backend ``examples/``: add_sub,
bls sync and async, decoupled repeat_int32; vendored in tests/support/triton_examples/python_backend,
BSD-3-Clause, NVIDIA). Beside them: ``pytorch``, an ONNX model of add_sub's contract under the name
Triton's BLS examples call (they call a PyTorch model of that name), broken python models for the
load-time checks, and a model whose ``execute`` fails. :func:`build_ensemble_repository` lays out
what tritonclient's ``ensemble_image_client.py`` needs: a python preprocessing model (JPEG bytes ->
densenet's input), densenet121 with a dynamic batch, and an ``ensemble`` config wiring them.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from mcp2026ai.bundled import bundled_model_path
from tests.support.triton_repository import DENSENET_LABELS

EXAMPLES = Path(__file__).parent / "triton_examples" / "python_backend"
VENDORED = {
    "add_sub": ("add_sub/model.py", "add_sub/config.pbtxt"),
    "bls_sync": ("bls/sync_model.py", "bls/sync_config.pbtxt"),
    "bls_async": ("bls/async_model.py", "bls/async_config.pbtxt"),
    "repeat_int32": ("decoupled/repeat_model.py", "decoupled/repeat_config.pbtxt"),
}
FP32_PAIR_CONFIG = """name: "{name}"
backend: "{backend}"
input [
  {{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
output [
  {{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }},
  {{ name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }}
]
"""
_HEADER = "import triton_python_backend_utils as pb_utils\n\n\nclass TritonPythonModel:\n"
_EXECUTE = "    def execute(self, requests):\n        return []\n"
BROKEN_SOURCES = {
    "broken_syntax": "import triton_python_backend_utils as pb_utils\n\nclass TritonPythonModel:\n"
    "    def execute(self, requests)\n        return []\n",
    "broken_import": "import numpy as np\nimport no_such_module_here\n\nclass TritonPythonModel:\n" + _EXECUTE,
    "broken_unsupported": _HEADER
    + "    def initialize(self, args):\n"
    + "        self.requests = pb_utils.MetricFamily(name='n', description='d', kind=pb_utils.MetricFamily.COUNTER)\n\n"
    + _EXECUTE,
}
FAILING_SOURCE = '''import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """INPUT0[0] < 0: an error response (INVALID_ARG); INPUT0[0] == 0: execute raises; else add_sub."""

    def execute(self, requests):
        responses = []
        for request in requests:
            first = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            second = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if first[0] == 0:
                raise pb_utils.TritonModelException("INPUT0 starts with zero: refused by the model")
            if first[0] < 0:
                error = pb_utils.TritonError("INPUT0 must be positive", pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            outputs = [pb_utils.Tensor("OUTPUT0", first + second), pb_utils.Tensor("OUTPUT1", first - second)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
'''
BATCHED_SOURCE = '''import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    """OUTPUT0 = INPUT0 * 2; OUTPUT1 = how many requests the execute call that ran it held."""

    def initialize(self, args):
        self.max_batch_size = json.loads(args["model_config"])["max_batch_size"]

    def execute(self, requests):
        responses = []
        for request in requests:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            count = np.full((data.shape[0], 1), len(requests), dtype=np.int32)
            outputs = [pb_utils.Tensor("OUTPUT0", data * 2), pb_utils.Tensor("OUTPUT1", count)]
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
'''
BATCHED_CONFIG = """name: "doubler"
backend: "python"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 50000 }
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]
"""
SLEEPY_SOURCE = """import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    \"\"\"add_sub after sleeping INPUT0[0] seconds (a slow BLS target).\"\"\"

    def execute(self, requests):
        responses = []
        for request in requests:
            first = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            second = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            time.sleep(float(first[0]))
            outputs = [pb_utils.Tensor("OUTPUT0", first + second), pb_utils.Tensor("OUTPUT1", first - second)]
            responses.append(pb_utils.InferenceResponse(outputs))
        return responses
"""
DESCRIBE_SOURCE = """import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    \"\"\"REQUEST: what the request says about itself (id, parameters, requested outputs, model), as JSON.\"\"\"

    def execute(self, requests):
        responses = []
        for request in requests:
            described = {
                "id": request.request_id(),
                "parameters": json.loads(request.parameters()),
                "outputs": request.requested_output_names(),
                "model": request.model_name(),
            }
            text = np.array([json.dumps(described, sort_keys=True).encode()], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("REQUEST", text)]))
        return responses
"""
DESCRIBE_CONFIG = """name: "describe"
backend: "python"
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "REQUEST" data_type: TYPE_STRING dims: [ 1 ] } ]
"""


def fp32_add_sub(path: Path) -> Path:
    """INPUT0, INPUT1 FP32 [4] -> OUTPUT0 = sum, OUTPUT1 = difference (no batch dimension)."""
    tensor = helper.make_tensor_value_info
    inputs = [tensor(name, TensorProto.FLOAT, [4]) for name in ("INPUT0", "INPUT1")]
    outputs = [tensor(name, TensorProto.FLOAT, [4]) for name in ("OUTPUT0", "OUTPUT1")]
    nodes = [
        helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
        helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "add_sub", inputs, outputs), opset_imports=[helper.make_opsetid("", 13)]
    )
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def write_python_model(root: Path, name: str, config: str, source: str | bytes) -> Path:
    directory = root / name
    (directory / "1").mkdir(parents=True, exist_ok=True)
    (directory / "config.pbtxt").write_text(config)
    data = source.encode() if isinstance(source, str) else source
    (directory / "1" / "model.py").write_bytes(data)
    return directory


def build_python_repository(root: Path) -> Path:
    """Triton's example python models, the ONNX ``pytorch``, ``failing``, ``doubler`` and three broken ones."""
    for name, (model, config) in VENDORED.items():
        write_python_model(root, name, (EXAMPLES / config).read_text(), (EXAMPLES / model).read_bytes())
    onnx_dir = root / "pytorch"
    fp32_add_sub(onnx_dir / "1" / "model.onnx")
    (onnx_dir / "config.pbtxt").write_text(
        FP32_PAIR_CONFIG.format(name="pytorch", backend="onnxruntime").replace(
            'backend: "onnxruntime"', 'platform: "onnxruntime_onnx"'
        )
    )
    write_python_model(root, "failing", FP32_PAIR_CONFIG.format(name="failing", backend="python"), FAILING_SOURCE)
    write_python_model(root, "doubler", BATCHED_CONFIG, BATCHED_SOURCE)
    write_python_model(root, "describe", DESCRIBE_CONFIG, DESCRIBE_SOURCE)
    write_python_model(root, "sleepy", FP32_PAIR_CONFIG.format(name="sleepy", backend="python"), SLEEPY_SOURCE)
    for name, source in BROKEN_SOURCES.items():
        write_python_model(root, name, FP32_PAIR_CONFIG.format(name=name, backend="python"), source)
    return root


PREPROCESS_SOURCE = '''import io
import json

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


class TritonPythonModel:
    """INPUT_0: encoded JPEG/PNG bytes, one per row -> OUTPUT_0: [3, 224, 224] normalised RGB."""

    def initialize(self, args):
        config = json.loads(args["model_config"])
        output = pb_utils.get_output_config_by_name(config, "OUTPUT_0")
        self.dtype = pb_utils.triton_string_to_numpy(output["data_type"])
        self.height, self.width = output["dims"][1], output["dims"][2]

    def execute(self, requests):
        responses = []
        for request in requests:
            encoded = pb_utils.get_input_tensor_by_name(request, "INPUT_0").as_numpy()
            try:
                images = [self.preprocess(row[0]) for row in encoded]
            except OSError as exc:
                error = pb_utils.TritonError(f"INPUT_0: not an image ({exc})", pb_utils.TritonError.INVALID_ARG)
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            batch = np.stack(images).astype(self.dtype)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT_0", batch)]))
        return responses

    def preprocess(self, data):
        image = Image.open(io.BytesIO(bytes(data))).convert("RGB").resize((self.width, self.height), Image.BILINEAR)
        pixels = (np.asarray(image, dtype=np.float32) / 255.0 - MEAN) / STD
        return pixels.transpose(2, 0, 1)
'''
PREPROCESS_CONFIG = """name: "preprocess"
backend: "python"
max_batch_size: 4
input [ { name: "INPUT_0" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUTPUT_0" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
instance_group [ { kind: KIND_CPU } ]
"""
CLASSIFIER_CONFIG = """name: "densenet_batched"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "data_0" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] } ]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
"""
ENSEMBLE_CONFIG = """name: "preprocess_inception_ensemble"
platform: "ensemble"
max_batch_size: 4
input [ { name: "INPUT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1000 ] label_filename: "densenet_labels.txt" } ]
ensemble_scheduling {
  step [
    {
      model_name: "preprocess"
      model_version: -1
      input_map { key: "INPUT_0" value: "INPUT" }
      output_map { key: "OUTPUT_0" value: "preprocessed_image" }
    },
    {
      model_name: "densenet_batched"
      model_version: -1
      input_map { key: "data_0" value: "preprocessed_image" }
      output_map { key: "fc6_1" value: "OUTPUT" }
    }
  ]
}
"""


def batched_densenet(path: Path) -> Path:
    """The bundled densenet121 with a dynamic batch dimension (its graph is batch-agnostic)."""
    model = onnx.load(str(bundled_model_path("onnx-densenet121")))
    for value in [*model.graph.input, *model.graph.output]:
        if value.name in ("data_0", "fc6_1"):
            value.type.tensor_type.shape.dim[0].dim_param = "batch"
    del model.graph.value_info[:]
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def build_ensemble_repository(root: Path) -> Path:
    """preprocess (python) -> densenet_batched (ONNX), wired by preprocess_inception_ensemble."""
    labels = "\n".join(DENSENET_LABELS) + "\n"
    write_python_model(root, "preprocess", PREPROCESS_CONFIG, PREPROCESS_SOURCE)
    classifier = root / "densenet_batched"
    batched_densenet(classifier / "1" / "model.onnx")
    (classifier / "config.pbtxt").write_text(CLASSIFIER_CONFIG)
    (classifier / "densenet_labels.txt").write_text(labels)
    ensemble = root / "preprocess_inception_ensemble"
    (ensemble / "1").mkdir(parents=True, exist_ok=True)
    (ensemble / "config.pbtxt").write_text(ENSEMBLE_CONFIG)
    (ensemble / "densenet_labels.txt").write_text(labels)
    return root
