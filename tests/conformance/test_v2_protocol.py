"""KServe v2 / Open Inference Protocol conformance, run over both HTTP and gRPC with tritonclient."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from tritonclient.utils import InferenceServerException

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.testing import BackgroundServer

pytestmark = pytest.mark.timeout(120)


OCR_OUTPUT = "save_infer_model/scale_0.tmp_1"


def as_json(client: Any, protocol: str, method: str, *args: Any) -> Any:
    call = getattr(client, method)
    return call(*args, as_json=True) if protocol == "grpc" else call(*args)


def infer_input(module: Any, name: str, array: np.ndarray, datatype: str, binary: bool = True) -> Any:
    tensor = module.InferInput(name, list(array.shape), datatype)
    if module.__name__.endswith("http"):
        tensor.set_data_from_numpy(array, binary_data=binary)
    else:
        tensor.set_data_from_numpy(array)
    return tensor


def requested(module: Any, name: str, binary: bool = True) -> Any:
    if module.__name__.endswith("http"):
        return module.InferRequestedOutput(name, binary_data=binary)
    return module.InferRequestedOutput(name)


def error_of(call: Any) -> str:
    with pytest.raises(InferenceServerException) as caught:
        call()
    return f"{caught.value.status()} {caught.value.message()}"


class TestHealthAndMetadata:
    def test_live_and_ready(self, client: Any) -> None:
        assert client.is_server_live()
        assert client.is_server_ready()

    def test_server_metadata(self, client: Any, protocol: str) -> None:
        metadata = as_json(client, protocol, "get_server_metadata")
        assert metadata["name"] == "mcp2026ai"
        assert "binary_tensor_data" in metadata["extensions"]

    def test_model_ready(self, client: Any) -> None:
        assert client.is_model_ready("ocr-cls")
        assert client.is_model_ready("ocr-cls", "1.0.0")
        assert client.is_model_ready("ocr-cls", "1")

    def test_unknown_model_not_ready(self, client: Any) -> None:
        try:
            assert not client.is_model_ready("no-such-model")
        except InferenceServerException as exc:  # gRPC reports NOT_FOUND as an error
            assert "no-such-model" in exc.message()

    def test_unknown_model_and_version_errors_use_tritons_words(self, client: Any, module: Any) -> None:
        """Clients written for Triton match "Request for unknown model" (its own examples do)."""
        assert "Request for unknown model: 'wrong_model_name' is not found" in error_of(
            lambda: client.get_model_metadata("wrong_model_name")
        )
        assert "Request for unknown model: 'ocr-cls' version 9 is not found" in error_of(
            lambda: client.get_model_metadata("ocr-cls", "9")
        )
        x = infer_input(module, "x", np.zeros((1, 3, 48, 192), np.float32), "FP32")
        assert "Request for unknown model" in error_of(lambda: client.infer("wrong_model_name", [x]))

    def test_model_metadata(self, client: Any, protocol: str) -> None:
        metadata = as_json(client, protocol, "get_model_metadata", "add_sub")
        assert metadata["name"] == "add_sub"
        assert metadata["versions"] == ["1.0.0"]
        assert {t["name"] for t in metadata["inputs"]} == {"INPUT0", "INPUT1"}
        assert [int(d) for d in metadata["inputs"][0]["shape"]] == [-1, 4]
        assert metadata["outputs"][0]["datatype"] == "FP32"

    def test_model_config_is_triton_shaped(self, client: Any, protocol: str) -> None:
        config = as_json(client, protocol, "get_model_config", "ocr-cls")
        config = config.get("config", config)
        assert config["name"] == "ocr-cls"
        assert int(config["max_batch_size"]) >= 1
        assert config["input"][0]["data_type"] == "TYPE_FP32"
        assert [int(d) for d in config["input"][0]["dims"]] == [3, -1, -1]

    def test_model_config_names_image_format_and_labels(self, client: Any, protocol: str) -> None:
        """The registered preprocessing gives the image input its format and the scores their labels file."""
        config = as_json(client, protocol, "get_model_config", "ocr-cls")
        config = config.get("config", config)
        assert config["input"][0]["format"] == "FORMAT_NCHW"
        scores = next(output for output in config["output"] if output["name"] == OCR_OUTPUT)
        assert scores["label_filename"] == "labels.txt"
        plain = as_json(client, protocol, "get_model_config", "add_sub")
        plain = plain.get("config", plain)
        assert all("format" not in tensor for tensor in plain["input"])
        assert all("label_filename" not in tensor for tensor in plain["output"])

    def test_statistics_count_inferences(self, client: Any, protocol: str, module: Any) -> None:
        x = np.ones((2, 4), np.float32)
        client.infer("add_sub", [infer_input(module, "INPUT0", x, "FP32"), infer_input(module, "INPUT1", x, "FP32")])
        stats = as_json(client, protocol, "get_inference_statistics", "add_sub")["model_stats"][0]
        assert stats["name"] == "add_sub"
        assert int(stats["inference_count"]) >= 2
        assert int(stats["inference_stats"]["success"]["count"]) >= 1

    def test_repository_index_lists_models(self, client: Any, protocol: str) -> None:
        index = as_json(client, protocol, "get_model_repository_index")
        rows = index.get("models", index) if isinstance(index, dict) else index
        ready = {row["name"] for row in rows if row.get("state") == "READY"}
        assert {"ocr-cls", "add_sub", "mlp"} <= ready


class TestInference:
    def test_add_sub(self, client: Any, module: Any, protocol: str) -> None:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        b = np.full((3, 4), 0.5, np.float32)
        # gRPC always carries raw bytes; over HTTP both Triton's binary extension and JSON tensors
        for binary in (True, False) if protocol == "http" else (True,):
            outputs = [requested(module, "OUTPUT0", binary), requested(module, "OUTPUT1", binary)]
            inputs = [
                infer_input(module, "INPUT0", a, "FP32", binary),
                infer_input(module, "INPUT1", b, "FP32", binary),
            ]
            result = client.infer("add_sub", inputs, outputs=outputs)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), a + b)
            np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), a - b)

    def test_real_model_matches_onnxruntime_exactly(self, client: Any, module: Any) -> None:
        x = np.random.default_rng(1).random((4, 3, 48, 192), dtype=np.float32)
        expected = ort.InferenceSession(str(bundled_model_path("ocr-cls"))).run(None, {"x": x})[0]
        result = client.infer("ocr-cls", [infer_input(module, "x", x, "FP32")])
        np.testing.assert_array_equal(result.as_numpy("save_infer_model/scale_0.tmp_1"), expected)

    def test_classification_extension(self, client: Any, module: Any) -> None:
        """An output asked for with ``class_count`` comes back as "score:index:label" strings, best first."""
        image = np.random.default_rng(3).random((2, 3, 48, 192), dtype=np.float32)
        scores = client.infer("ocr-cls", [infer_input(module, "x", image, "FP32")]).as_numpy(OCR_OUTPUT)
        wanted = [module.InferRequestedOutput(OCR_OUTPUT, class_count=2)]
        inputs = [infer_input(module, "x", image, "FP32")]
        classes = client.infer("ocr-cls", inputs, outputs=wanted).as_numpy(OCR_OUTPUT)
        assert classes.shape == (2, 2)
        labels = ["0", "180"]
        for row, top in zip(scores, classes, strict=True):
            best = int(np.argmax(row))
            score, index, label = top[0].decode().split(":")
            assert (int(index), label) == (best, labels[best]) and float(score) == pytest.approx(row[best], abs=1e-5)
            assert int(top[1].decode().split(":")[1]) == 1 - best

    def test_requested_subset_of_outputs(self, client: Any, module: Any) -> None:
        x = np.ones((1, 4), np.float32)
        result = client.infer(
            "add_sub",
            [infer_input(module, "INPUT0", x, "FP32"), infer_input(module, "INPUT1", x, "FP32")],
            outputs=[requested(module, "OUTPUT1")],
        )
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.zeros((1, 4), np.float32))
        assert result.as_numpy("OUTPUT0") is None

    def test_integer_datatypes(self, client: Any, module: Any) -> None:
        ids = np.array([[1, 2, 3], [2**40, -5, 0]], np.int64)
        mask = np.array([[1, 1, 0], [0, 1, 1]], np.int32)
        result = client.infer(
            "int_identity", [infer_input(module, "ids", ids, "INT64"), infer_input(module, "mask", mask, "INT32")]
        )
        np.testing.assert_array_equal(result.as_numpy("ids_out"), ids)
        np.testing.assert_array_equal(result.as_numpy("mask_out"), mask)

    def test_bytes_datatype(self, client: Any, module: Any) -> None:
        text = np.array([b"hello", "ünïcødé".encode(), b""], dtype=np.object_)
        result = client.infer("string_identity", [infer_input(module, "text", text, "BYTES")])
        assert list(result.as_numpy("text_out")) == list(text)

    def test_explicit_version_and_integer_alias(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 16), np.float32)
        for version in ("1.0.0", "1"):
            result = client.infer("mlp", [infer_input(module, "x", x, "FP32")], model_version=version)
            response = result.get_response(as_json=True) if protocol == "grpc" else result.get_response()
            assert response["model_version"] == "1.0.0"
            assert result.as_numpy("probs").shape == (1, 10)

    def test_request_id_echoed(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 16), np.float32)
        result = client.infer("mlp", [infer_input(module, "x", x, "FP32")], request_id="req-42")
        response = result.get_response(as_json=True) if protocol == "grpc" else result.get_response()
        assert response["id"] == "req-42"


class TestErrors:
    def test_unknown_model(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 4), np.float32)
        message = error_of(lambda: client.infer("nope", [infer_input(module, "INPUT0", x, "FP32")]))
        assert ("404" in message) if protocol == "http" else ("NOT_FOUND" in message)
        assert "nope" in message

    def test_unknown_version(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 16), np.float32)
        message = error_of(lambda: client.infer("mlp", [infer_input(module, "x", x, "FP32")], model_version="9.9.9"))
        assert ("404" in message) if protocol == "http" else ("NOT_FOUND" in message)

    def test_wrong_shape(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 5), np.float32)
        message = error_of(
            lambda: client.infer(
                "add_sub", [infer_input(module, "INPUT0", x, "FP32"), infer_input(module, "INPUT1", x, "FP32")]
            )
        )
        assert ("400" in message) if protocol == "http" else ("INVALID_ARGUMENT" in message)
        assert "INPUT0" in message and "shape" in message

    def test_wrong_datatype(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 16), np.float64)
        message = error_of(lambda: client.infer("mlp", [infer_input(module, "x", x, "FP64")]))
        assert ("400" in message) if protocol == "http" else ("INVALID_ARGUMENT" in message)
        assert "datatype" in message

    def test_missing_input(self, client: Any, module: Any, protocol: str) -> None:
        x = np.ones((1, 4), np.float32)
        message = error_of(lambda: client.infer("add_sub", [infer_input(module, "INPUT0", x, "FP32")]))
        assert "missing input 'INPUT1'" in message

    def test_unknown_output(self, client: Any, module: Any) -> None:
        x = np.ones((1, 16), np.float32)
        message = error_of(
            lambda: client.infer("mlp", [infer_input(module, "x", x, "FP32")], outputs=[requested(module, "nope")])
        )
        assert "unknown output 'nope'" in message

    def test_server_keeps_serving_after_errors(self, client: Any, module: Any) -> None:
        x = np.ones((1, 16), np.float32)
        for _ in range(3):
            error_of(lambda: client.infer("mlp", [infer_input(module, "x", np.ones((1, 3), np.float32), "FP32")]))
        assert client.infer("mlp", [infer_input(module, "x", x, "FP32")]).as_numpy("probs").shape == (1, 10)


class TestRepository:
    def test_unload_then_load(self, server: BackgroundServer, client: Any, module: Any, protocol: str) -> None:
        client.unload_model("int_identity")
        assert not client.is_model_ready("int_identity")  # known, not loaded: False over gRPC too, as in Triton
        ids = np.ones((1, 3), np.int64)
        mask = np.ones((1, 3), np.int32)
        inputs = [infer_input(module, "ids", ids, "INT64"), infer_input(module, "mask", mask, "INT32")]
        message = error_of(lambda: client.infer("int_identity", inputs))
        assert "int_identity" in message
        client.load_model("int_identity")
        assert client.is_model_ready("int_identity")
        np.testing.assert_array_equal(client.infer("int_identity", inputs).as_numpy("ids_out"), ids)


class TestTraceAndLoggingExtensions:
    def test_trace_settings_read_update_and_per_model(self, client: Any, protocol: str) -> None:
        before = as_json(client, protocol, "get_trace_settings")
        assert "trace_rate" in _settings(before)
        updated = _settings(client.update_trace_settings(settings={"trace_rate": "10", "trace_level": ["TIMESTAMPS"]}))
        assert _value(updated["trace_rate"]) == "10" and _values(updated["trace_level"]) == ["TIMESTAMPS"]
        model = _settings(client.update_trace_settings(model_name="ocr-cls", settings={"trace_rate": "5"}))
        assert _value(model["trace_rate"]) == "5"
        assert _value(_settings(as_json(client, protocol, "get_trace_settings"))["trace_rate"]) == "10"
        client.update_trace_settings(settings={"trace_rate": "1000", "trace_level": ["OFF"]})
        client.update_trace_settings(model_name="ocr-cls", settings={"trace_rate": None})
        assert "unknown trace setting" in error_of(lambda: client.update_trace_settings(settings={"colour": "1"}))
        assert "nope" in error_of(lambda: client.get_trace_settings(model_name="nope"))

    def test_log_settings_drive_the_server_log_level(self, client: Any, protocol: str) -> None:
        import logging

        logger = logging.getLogger("mcp2026ai")
        try:
            settings = _settings(client.update_log_settings({"log_verbose_level": 1}))
            assert _log_value(settings["log_verbose_level"]) == 1 and logger.level == logging.DEBUG
            client.update_log_settings({"log_verbose_level": 0, "log_info": False})
            assert logger.level == logging.WARNING
            if protocol == "http":  # tritonclient's gRPC client types each setting itself
                assert "log_info must be true or false" in error_of(
                    lambda: client.update_log_settings({"log_info": "x"})
                )
        finally:
            client.update_log_settings({"log_verbose_level": 0, "log_info": True})
            logger.setLevel(logging.NOTSET)


def _settings(reply: Any) -> dict[str, Any]:
    """HTTP returns the settings object; gRPC (as_json) wraps it in ``settings``."""
    if hasattr(reply, "settings"):
        from google.protobuf import json_format

        reply = json_format.MessageToDict(reply, preserving_proto_field_name=True)
    return reply.get("settings", reply) if isinstance(reply, dict) else reply


def _values(item: Any) -> list[str]:
    return list(item["value"]) if isinstance(item, dict) and "value" in item else list(item)


def _value(item: Any) -> str:
    return _values(item)[0] if isinstance(item, dict | list) else str(item)


def _log_value(item: Any) -> Any:
    if isinstance(item, dict):
        return int(next(iter(item.values())))
    return item


class TestSystemSharedMemory:
    """Triton's simple_*_shm_client flow: inputs and outputs through /dev/shm, over both protocols."""

    def test_inputs_and_outputs_through_shared_memory(self, client: Any, module: Any, protocol: str) -> None:
        import tritonclient.utils.shared_memory as shm

        client.unregister_system_shared_memory()
        client.unregister_cuda_shared_memory()  # examples call it first: succeeds without a GPU
        x0, x1 = np.arange(4, dtype=np.float32).reshape(1, 4), np.ones((1, 4), np.float32)
        size = x0.nbytes
        inputs_handle = shm.create_shared_memory_region(f"in_{protocol}", f"/mcp_in_{protocol}", 2 * size)
        outputs_handle = shm.create_shared_memory_region(f"out_{protocol}", f"/mcp_out_{protocol}", 2 * size)
        try:
            shm.set_shared_memory_region(inputs_handle, [x0, x1])
            client.register_system_shared_memory(f"in_{protocol}", f"/mcp_in_{protocol}", 2 * size)
            client.register_system_shared_memory(f"out_{protocol}", f"/mcp_out_{protocol}", 2 * size)
            status = as_json(client, protocol, "get_system_shared_memory_status")
            assert f"in_{protocol}" in str(status)
            inputs = [module.InferInput(n, [1, 4], "FP32") for n in ("INPUT0", "INPUT1")]
            inputs[0].set_shared_memory(f"in_{protocol}", size)
            inputs[1].set_shared_memory(f"in_{protocol}", size, offset=size)
            outputs = [module.InferRequestedOutput(n) for n in ("OUTPUT0", "OUTPUT1")]
            outputs[0].set_shared_memory(f"out_{protocol}", size)
            outputs[1].set_shared_memory(f"out_{protocol}", size, offset=size)
            client.infer("add_sub", inputs, outputs=outputs)
            total = shm.get_contents_as_numpy(outputs_handle, np.float32, [1, 4])
            difference = shm.get_contents_as_numpy(outputs_handle, np.float32, [1, 4], offset=size)
            np.testing.assert_array_equal(total, x0 + x1)
            np.testing.assert_array_equal(difference, x0 - x1)
            outside = module.InferInput("INPUT0", [1, 4], "FP32")
            outside.set_shared_memory(f"in_{protocol}", size, offset=2 * size)
            assert "outside shared memory region" in error_of(lambda: client.infer("add_sub", [outside, inputs[1]]))
            assert "no GPU" in error_of(lambda: client.register_cuda_shared_memory("gpu", b"", 0, 16))
        finally:
            client.unregister_system_shared_memory()
            shm.destroy_shared_memory_region(inputs_handle)
            shm.destroy_shared_memory_region(outputs_handle)
        assert "Unable to find system shared memory region" in error_of(
            lambda: client.get_system_shared_memory_status(f"in_{protocol}")
        )


class TestModelControl:
    def test_load_with_a_config_override_is_applied_and_reported(self, client: Any, protocol: str) -> None:
        override = {
            "max_batch_size": 8,
            "instance_group": [{"count": 2, "kind": "KIND_CPU"}],
            "dynamic_batching": {"max_queue_delay_microseconds": 500, "preferred_batch_size": [4, 8]},
        }
        client.load_model("mlp", config=json.dumps(override))
        try:
            config = as_json(client, protocol, "get_model_config", "mlp")
            config = config.get("config", config)
            assert int(config["max_batch_size"]) == 8
            assert int(config["instance_group"][0]["count"]) == 2
            batching = config["dynamic_batching"]
            assert int(batching["max_queue_delay_microseconds"]) == 500
            assert [int(size) for size in batching["preferred_batch_size"]] == [4, 8]
        finally:
            client.load_model("mlp", config=json.dumps({"max_batch_size": 32, "instance_group": [{"count": 1}]}))

    @pytest.mark.parametrize(
        ("config", "says"),
        [
            ("{not json", "not valid JSON"),
            ('{"name": "other"}', "names model 'other', not 'mlp'"),
            ('{"colour": 1}', "unknown field 'colour'"),
            ('{"max_batch_size": 100000}', "max_batch_size"),
            ('{"dynamic_batching": {"preferred_batch_size": [64]}}', "preferred_batch_sizes"),
        ],
    )
    def test_an_invalid_override_fails_and_changes_nothing(
        self, client: Any, protocol: str, config: str, says: str
    ) -> None:
        before = as_json(client, protocol, "get_model_config", "mlp")
        assert says in error_of(lambda: client.load_model("mlp", config=config))
        assert as_json(client, protocol, "get_model_config", "mlp") == before

    def test_load_with_a_model_file_registers_and_serves_it(
        self, client: Any, module: Any, protocol: str, tmp_path: Any
    ) -> None:
        """tritonclient's load_model(files=...): the file becomes a version of the model and is served."""
        from support.models import add_sub_model

        name = f"uploaded_{protocol}"
        model = add_sub_model(tmp_path / "model.onnx", width=2).read_bytes()
        client.load_model(name, config=json.dumps({"max_batch_size": 4}), files={"file:1/model.onnx": model})
        x = np.array([[1.0, 2.0]], np.float32)
        inputs = [infer_input(module, n, x, "FP32") for n in ("INPUT0", "INPUT1")]
        np.testing.assert_array_equal(client.infer(name, inputs).as_numpy("OUTPUT0"), 2 * x)
        assert "need a 'config' parameter" in error_of(
            lambda: client.load_model(name, files={"file:1/model.onnx": model})
        )
        client.unload_model(name)
