"""The Triton Python backend: the pb_utils shim, the load-time checks, and PythonModelBackend run on
Triton's own example models (tests/support/triton_examples/python_backend, unchanged)."""

from __future__ import annotations

import ast
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.errors import (
    InferenceFailedError,
    InvalidInputError,
    MCPError,
    ModelImportError,
    NotFoundError,
    UnsupportedError,
)
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.runtime.base import QueuedRequest, RequestListBackend
from mcp2026ai.runtime.triton_python import BlsCall, BlsGateway, PythonModelBackend, PythonModelSource, pb_utils
from mcp2026ai.runtime.triton_python.model_config import config_dict, initialize_args
from mcp2026ai.runtime.triton_python.support import SUPPORTED, check_model_source, unsupported_uses

EXAMPLES = Path(__file__).parents[2] / "support" / "triton_examples" / "python_backend"
PAIR = Signature(
    inputs=[TensorSpec(name=name, datatype="FP32", shape=[4]) for name in ("INPUT0", "INPUT1")],
    outputs=[TensorSpec(name=name, datatype="FP32", shape=[4]) for name in ("OUTPUT0", "OUTPUT1")],
)


def config(path: str) -> mc.ModelConfig:
    return text_format.Parse((EXAMPLES / path).read_text(), mc.ModelConfig())


def backend(source: bytes, model_config: mc.ModelConfig, gateway: BlsGateway | None = None) -> PythonModelBackend:
    model = PythonModelSource(source, f"{model_config.name}/1/model.py", model_config, 1)
    return PythonModelBackend(model, PAIR, gateway or BlsGateway())


def pair() -> dict[str, np.ndarray]:
    return {"INPUT0": np.arange(4, dtype=np.float32), "INPUT1": np.ones(4, dtype=np.float32)}


def test_every_supported_name_exists_in_the_shim() -> None:
    assert [name for name in SUPPORTED if not hasattr(pb_utils, name)] == []


def test_unsupported_names_are_found_with_their_lines() -> None:
    source = (
        "import triton_python_backend_utils as pb\n"
        "from triton_python_backend_utils import load_model, Tensor\n"
        "x = pb.Tensor\n"
        "y = pb.MetricFamily\n"
    )
    assert unsupported_uses(ast.parse(source)) == [("load_model", 2), ("MetricFamily", 4)]
    with pytest.raises(ModelImportError, match=r"m\.py: .*triton_python_backend_utils\.load_model \(line 2\)"):
        check_model_source(source.encode(), label="m.py")


def test_tritons_examples_pass_the_checks() -> None:
    for path in ("add_sub/model.py", "bls/sync_model.py", "bls/async_model.py", "decoupled/repeat_model.py"):
        check_model_source((EXAMPLES / path).read_bytes(), label=path)


def test_model_config_json_is_tritons() -> None:
    document = config_dict(config("decoupled/repeat_config.pbtxt"))
    assert document["max_batch_size"] == 0 and document["model_transaction_policy"] == {"decoupled": True}
    assert document["input"][0] == {**document["input"][0], "name": "IN", "data_type": "TYPE_INT32", "dims": [-1]}
    args = initialize_args(config("add_sub/config.pbtxt"), version=3)
    assert args["model_name"] == "add_sub" and args["model_version"] == "3" and args["model_instance_kind"] == "CPU"
    assert json.loads(args["model_config"])["model_transaction_policy"] == {"decoupled": False}


def test_add_sub_runs_a_list_of_requests() -> None:
    model = backend((EXAMPLES / "add_sub/model.py").read_bytes(), config("add_sub/config.pbtxt"))
    assert isinstance(model, RequestListBackend) and not model.loaded
    model.load()
    first, second = pair(), {name: array * 3 for name, array in pair().items()}
    answers = model.infer_requests([QueuedRequest(first, None, None), QueuedRequest(second, ["OUTPUT1"], None)])
    assert not isinstance(answers[0], MCPError) and not isinstance(answers[1], MCPError)
    np.testing.assert_array_equal(answers[0]["OUTPUT0"], first["INPUT0"] + first["INPUT1"])
    assert list(answers[1]) == ["OUTPUT1"]
    np.testing.assert_array_equal(model.infer(first)["OUTPUT1"], first["INPUT0"] - first["INPUT1"])
    model.unload()
    assert not model.loaded


ERRORS = b"""import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        codes = [int(pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()[0]) for r in requests]
        if 9 in codes:
            raise ValueError("nine")
        if 8 in codes:
            return []
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("bad", code)) if code else
                pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.zeros(4, np.float32))]) for code in codes]
"""


def errors_model() -> PythonModelBackend:
    model = backend(ERRORS.replace(b"pb_utils\n", b"pb_utils\nimport numpy as np\n", 1), config("add_sub/config.pbtxt"))
    model.load()
    return model


def request(code: float) -> QueuedRequest:
    return QueuedRequest({**pair(), "INPUT0": np.full(4, code, dtype=np.float32)}, None, None)


def test_each_request_gets_its_own_error() -> None:
    """A response's TritonError fails its request only, as the domain error its code means."""
    answers = errors_model().infer_requests([request(0), request(3), request(2)])
    assert isinstance(answers[0], dict)
    assert isinstance(answers[1], InvalidInputError) and str(answers[1]) == "bad"
    assert isinstance(answers[2], NotFoundError)


def test_a_raising_or_miscounting_execute_fails_every_request_of_its_call() -> None:
    model = errors_model()
    raised = model.infer_requests([request(0), request(9)])
    assert all(isinstance(answer, InferenceFailedError) for answer in raised)
    assert "execute() failed: ValueError: nine" in str(raised[0])
    miscounted = model.infer_requests([request(8)])
    assert "must return one InferenceResponse per request (1), it returned 0" in str(miscounted[0])


def test_a_failing_initialize_is_a_load_error_naming_the_file() -> None:
    source = b"class TritonPythonModel:\n    def initialize(self, args):\n        raise RuntimeError('no')\n"
    source += b"    def execute(self, requests):\n        return []\n"
    with pytest.raises(ModelImportError, match=r"^add_sub/1/model\.py: initialize\(\) failed: RuntimeError: no$"):
        backend(source, config("add_sub/config.pbtxt")).load()


def test_decoupled_responses_arrive_after_execute_returned() -> None:
    """Triton's repeat_int32: one response per IN element, sent from the model's own thread, then None."""
    model = backend((EXAMPLES / "decoupled/repeat_model.py").read_bytes(), config("decoupled/repeat_config.pbtxt"))
    model.load()
    assert model.decoupled
    received: list[object] = []
    finished = threading.Event()

    def emit(item: object) -> None:
        received.append(item)
        if item is None:
            finished.set()

    inputs = {
        "IN": np.array([7, 8, 9], dtype=np.int32),
        "DELAY": np.array([1, 1, 1], dtype=np.uint32),
        "WAIT": np.array([0], dtype=np.uint32),
    }
    model.run_decoupled(QueuedRequest(inputs, ["OUT"], None), emit)
    assert finished.wait(10)
    assert [int(item["OUT"][0]) for item in received[:-1]] == [7, 8, 9]  # type: ignore[index]
    assert received[-1] is None
    refused = model.infer_requests([QueuedRequest(inputs, None, None)])[0]
    assert isinstance(refused, UnsupportedError) and "decoupled transaction policy" in str(refused)
    model.unload()


def test_bls_exec_goes_through_the_gateway_with_the_callers_deadline() -> None:
    calls: list[BlsCall] = []

    def target(call: BlsCall) -> dict[str, np.ndarray]:
        calls.append(call)
        if call.model == "missing":
            raise NotFoundError("Request for unknown model: 'missing' is not found")
        return {"OUTPUT0": call.inputs["INPUT0"] + call.inputs["INPUT1"], "OUTPUT1": call.inputs["INPUT0"]}

    gateway = BlsGateway()
    gateway.bind(target)
    model = backend((EXAMPLES / "bls/sync_model.py").read_bytes(), config("bls/sync_config.pbtxt"), gateway)
    model.load()
    inputs = {**pair(), "MODEL_NAME": np.array([b"add_sub"], dtype=np.object_)}
    deadline = time.monotonic() + 5
    answer = model.infer_requests([QueuedRequest(inputs, None, deadline)])[0]
    assert isinstance(answer, dict)
    np.testing.assert_array_equal(answer["OUTPUT0"], pair()["INPUT0"] + 1)
    assert calls[0].model == "add_sub" and calls[0].outputs == ["OUTPUT0", "OUTPUT1"] and calls[0].deadline == deadline
    missing = model.infer_requests(
        [QueuedRequest({**inputs, "MODEL_NAME": np.array([b"missing"], np.object_)}, None, None)]
    )
    assert isinstance(missing[0], InferenceFailedError) and "'missing' is not found" in str(missing[0])


def test_bls_outside_execute_and_unbound_gateway_answer_errors() -> None:
    response = pb_utils.InferenceRequest(model_name="x", inputs=[], requested_output_names=[]).exec()
    assert response.has_error() and "outside execute()" in response.error().message()  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="BLS is not available"):
        BlsGateway()(BlsCall("x", {}, None))
    expired = BlsCall("x", {}, None, deadline=time.monotonic() - 1)
    assert expired.remaining_s() == 0.0


def test_tensor_strings_and_dlpack() -> None:
    tensor = pb_utils.Tensor("T", np.array(["a", "bc"]))
    assert tensor.as_numpy().dtype == np.object_ and list(tensor.as_numpy()) == [b"a", b"bc"]
    numbers = pb_utils.Tensor("N", np.arange(3, dtype=np.float32))
    shared = pb_utils.Tensor.from_dlpack("M", numbers)
    assert np.shares_memory(shared.as_numpy(), numbers.as_numpy()) and shared.name() == "M"
    assert pb_utils.triton_string_to_numpy("TYPE_FP32") is np.float32
    assert pb_utils.numpy_to_triton_type(np.float32) == 11 and pb_utils.triton_to_numpy_type(13) is np.object_


INSTANCES = b"""import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.name = args["model_instance_name"]

    def execute(self, requests):
        time.sleep(0.3)
        text = np.array([self.name.encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", text)]) for _ in requests]
"""


def test_instance_group_count_instances_run_side_by_side() -> None:
    """``instance_group [{ count: 2 }]``: two instances, each initialized with its own name, two execute
    calls at once (each instance one at a time)."""
    model_config = config("add_sub/config.pbtxt")
    model_config.instance_group[0].count = 2
    model = backend(INSTANCES, model_config)
    model.load()
    started = time.monotonic()
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: model.infer(pair())["OUTPUT0"][0], range(2)))
    assert sorted(answers) == [b"add_sub_0_0", b"add_sub_0_1"]
    assert time.monotonic() - started < 0.55
    model.unload()
    assert not model.loaded
