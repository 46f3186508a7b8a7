"""Sequence batching with tritonclient over HTTP, gRPC and gRPC streaming: control inputs filled as
the contract names them, implicit state kept between a sequence's requests, a real stateful model
(silero-vad's ONNX) streamed chunk by chunk and matched against onnxruntime run offline."""

from __future__ import annotations

import importlib.util
import json
import queue
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from onnx import TensorProto, helper

from mcp2026ai.contract import InferenceContract, SequenceControls, SequenceSpec, SequenceState
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.testing import BackgroundServer
from tests.conformance.test_v2_protocol import as_json, error_of

CONTROLS = SequenceControls(start="START", end="END", ready="READY", corrid="CORRID")
ACCUMULATOR_STATE = [SequenceState(input="ACC_IN", output="ACC_OUT")]
CHUNK = 512
RATE = 16_000


def accumulator_model(path: Path, corrid_type: int) -> Path:
    """ACC_OUT = SUM = ACC_IN * (1 - START) + INPUT; FLAGS = 100 START + 10 END + READY; CORRID_OUT = CORRID."""
    tensor = helper.make_tensor_value_info
    nodes = [
        helper.make_node("Cast", ["START"], ["start_f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "start_f"], ["keep"]),
        helper.make_node("Mul", ["ACC_IN", "keep"], ["kept"]),
        helper.make_node("Add", ["kept", "INPUT"], ["ACC_OUT"]),
        helper.make_node("Mul", ["START", "hundred"], ["s100"]),
        helper.make_node("Mul", ["END", "ten"], ["e10"]),
        helper.make_node("Add", ["s100", "e10"], ["se"]),
        helper.make_node("Add", ["se", "READY"], ["FLAGS"]),
        helper.make_node("Identity", ["CORRID"], ["CORRID_OUT"]),
        helper.make_node("Identity", ["ACC_OUT"], ["SUM"]),
    ]
    graph = helper.make_graph(
        nodes,
        "accumulator",
        [
            tensor("INPUT", TensorProto.FLOAT, [1]),
            tensor("START", TensorProto.INT32, [1]),
            tensor("END", TensorProto.INT32, [1]),
            tensor("READY", TensorProto.INT32, [1]),
            tensor("CORRID", corrid_type, [1]),
            tensor("ACC_IN", TensorProto.FLOAT, [1]),
        ],
        [
            tensor("ACC_OUT", TensorProto.FLOAT, [1]),
            tensor("SUM", TensorProto.FLOAT, [1]),
            tensor("FLAGS", TensorProto.INT32, [1]),
            tensor("CORRID_OUT", corrid_type, [1]),
        ],
        [
            helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
            helper.make_tensor("hundred", TensorProto.INT32, [1], [100]),
            helper.make_tensor("ten", TensorProto.INT32, [1], [10]),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def silero_path() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.submodule_search_locations is None:
        pytest.skip("silero-vad is not installed (it is in the test extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"


def audio(seconds: float = 1.0) -> np.ndarray:
    """Seeded noise with a voiced burst (harmonics of 150 Hz) in the middle, 16 kHz mono."""
    rng = np.random.default_rng(7)
    t = np.arange(int(seconds * RATE)) / RATE
    voiced = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 8)) * (np.abs(t - seconds / 2) < seconds / 4)
    return (0.02 * rng.standard_normal(t.size) + 0.3 * voiced).astype(np.float32)


@pytest.fixture(scope="module")
def seq_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    home, models = tmp_path_factory.mktemp("seq-home"), tmp_path_factory.mktemp("seq-models")
    registry = ModelRegistry(home)
    for name, corrid in [("accumulate", TensorProto.INT64), ("accumulate_str", TensorProto.STRING)]:
        contract = InferenceContract(sequence=SequenceSpec(controls=CONTROLS, state=ACCUMULATOR_STATE))
        registry.register(name, accumulator_model(models / f"{name}.onnx", corrid), contract=contract)
    vad = InferenceContract(sequence=SequenceSpec(state=[SequenceState(input="state", output="stateN")]))
    registry.register("vad", silero_path(), contract=vad)
    with BackgroundServer(registry, ["accumulate", "accumulate_str", "vad"]) as running:
        yield running


@pytest.fixture()
def seq_client(seq_server: BackgroundServer, protocol: str) -> Iterator[Any]:
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(seq_server.http_url if protocol == "http" else seq_server.grpc_url)
    yield client
    client.close()


def value(module: Any, x: float) -> list[Any]:
    tensor = module.InferInput("INPUT", [1], "FP32")
    tensor.set_data_from_numpy(np.array([x], np.float32))
    return [tensor]


def run_sequence(client: Any, module: Any, model: str, corrid: int | str, values: list[float]) -> list[Any]:
    results = []
    for i, x in enumerate(values):
        results.append(
            client.infer(
                model, value(module, x), sequence_id=corrid, sequence_start=i == 0, sequence_end=i == len(values) - 1
            )
        )
    return results


class TestSequenceBatching:
    @pytest.mark.parametrize(("model", "corrid"), [("accumulate", 42), ("accumulate_str", "user-7")])
    def test_controls_and_state(self, seq_client: Any, protocol: str, model: str, corrid: int | str) -> None:
        module = httpclient if protocol == "http" else grpcclient
        results = run_sequence(seq_client, module, model, corrid, [1.0, 2.0, 3.0, 4.0])
        assert [float(r.as_numpy("SUM")[0]) for r in results] == [1.0, 3.0, 6.0, 10.0]
        assert [int(r.as_numpy("FLAGS")[0]) for r in results] == [101, 1, 1, 11]
        got = results[0].as_numpy("CORRID_OUT")[0]
        assert (got.decode() if isinstance(got, bytes) else int(got)) == corrid
        assert results[0].as_numpy("ACC_OUT") is None  # the implicit state stays on the server

    def test_interleaved_sequences_keep_their_own_state(self, seq_client: Any, protocol: str) -> None:
        module = httpclient if protocol == "http" else grpcclient
        seq_client.infer("accumulate", value(module, 1.0), sequence_id=1, sequence_start=True)
        seq_client.infer("accumulate", value(module, 100.0), sequence_id=2, sequence_start=True)
        one = seq_client.infer("accumulate", value(module, 1.0), sequence_id=1, sequence_end=True)
        two = seq_client.infer("accumulate", value(module, 100.0), sequence_id=2, sequence_end=True)
        assert float(one.as_numpy("SUM")[0]) == 2.0 and float(two.as_numpy("SUM")[0]) == 200.0

    def test_errors_use_tritons_words(self, seq_client: Any, protocol: str) -> None:
        module = httpclient if protocol == "http" else grpcclient
        missing = error_of(lambda: seq_client.infer("accumulate", value(module, 1.0)))
        assert "must specify a non-zero or non-empty correlation ID" in missing
        unstarted = error_of(lambda: seq_client.infer("accumulate", value(module, 1.0), sequence_id=999))
        assert "must specify the START flag on the first request of the sequence" in unstarted
        ended = run_sequence(seq_client, module, "accumulate", 5, [1.0, 1.0])
        assert len(ended) == 2
        after_end = error_of(lambda: seq_client.infer("accumulate", value(module, 1.0), sequence_id=5))
        assert "START flag" in after_end

    def test_config_reports_sequence_batching(self, seq_client: Any, protocol: str) -> None:
        config = as_json(seq_client, protocol, "get_model_config", "accumulate")
        section = config.get("config", config)["sequence_batching"]
        # protobuf's JSON leaves out an enum's zero value, which is CONTROL_SEQUENCE_START
        kinds = {c["name"]: c["control"][0].get("kind", "CONTROL_SEQUENCE_START") for c in section["control_input"]}
        assert kinds == {
            "START": "CONTROL_SEQUENCE_START",
            "END": "CONTROL_SEQUENCE_END",
            "READY": "CONTROL_SEQUENCE_READY",
            "CORRID": "CONTROL_SEQUENCE_CORRID",
        }
        assert section["state"][0]["input_name"] == "ACC_IN" and section["state"][0]["output_name"] == "ACC_OUT"
        assert "direct" in section


def offline_vad(chunks: list[np.ndarray], carry_state: bool = True) -> list[float]:
    """onnxruntime over the chunks in order, the state carried (or reset to zeros for every chunk)."""
    session = ort.InferenceSession(str(silero_path()), providers=["CPUExecutionProvider"])
    zeros = np.zeros((2, 1, 128), np.float32)
    state = zeros
    probabilities = []
    for chunk in chunks:
        out, new_state = session.run(None, {"input": chunk[None, :], "state": state, "sr": np.array(RATE, np.int64)})
        state = new_state if carry_state else zeros
        probabilities.append(float(out[0, 0]))
    return probabilities


def vad_inputs(module: Any, chunk: np.ndarray) -> list[Any]:
    samples = module.InferInput("input", [1, CHUNK], "FP32")
    samples.set_data_from_numpy(chunk[None, :])
    rate = module.InferInput("sr", [], "INT64")
    rate.set_data_from_numpy(np.array(RATE, np.int64))
    return [samples, rate]


class TestStatefulModel:
    def chunks(self) -> list[np.ndarray]:
        signal = audio()
        return [signal[i : i + CHUNK] for i in range(0, signal.size - CHUNK + 1, CHUNK)]

    def test_silero_vad_streamed_matches_offline(self, seq_client: Any, protocol: str) -> None:
        module = httpclient if protocol == "http" else grpcclient
        chunks = self.chunks()
        served = []
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            result = seq_client.infer(
                "vad", vad_inputs(module, chunk), sequence_id=77, sequence_start=i == 0, sequence_end=last
            )
            served.append(float(result.as_numpy("output")[0, 0]))
        expected = offline_vad(chunks)
        np.testing.assert_allclose(served, expected, atol=1e-5)
        stateless = offline_vad(chunks, carry_state=False)
        assert np.max(np.abs(np.array(expected) - stateless)) > 1e-3  # the carried state changes the answers

    def test_silero_vad_over_model_stream_infer(self, seq_server: BackgroundServer) -> None:
        chunks = self.chunks()
        answers: queue.Queue[Any] = queue.Queue()
        client = grpcclient.InferenceServerClient(seq_server.grpc_url)
        callback: Callable[[Any, Any], None] = lambda result, error: answers.put(error or result)  # noqa: E731
        client.start_stream(callback=callback)
        try:
            for i, chunk in enumerate(chunks):
                client.async_stream_infer(
                    "vad",
                    vad_inputs(grpcclient, chunk),
                    sequence_id="stream-1",
                    sequence_start=i == 0,
                    sequence_end=i == len(chunks) - 1,
                )
            received = [answers.get(timeout=30) for _ in chunks]
        finally:
            client.stop_stream()
            client.close()
        assert all(not isinstance(r, Exception) for r in received), json.dumps([str(r) for r in received][:2])
        served = [float(r.as_numpy("output")[0, 0]) for r in received]
        np.testing.assert_allclose(served, offline_vad(chunks), atol=1e-5)
