"""A Triton-layout model repository like Triton's docs/examples/model_repository, built for tests.

The configs are Triton's own (docs/examples/model_repository/*/config.pbtxt, BSD-3-Clause, NVIDIA);
the ONNX models are built here with the same graphs as Triton's example ``model.onnx`` files
(``simple``: INT32 add/sub; ``simple_sequence``: READY * (INPUT + START); ...). ``densenet_onnx``
is the densenet121 of the onnx package's light model zoo (input data_0 [1,3,224,224], output
fc6_1 [1,1000,1,1]: the shapes Triton's config reshapes), with made-up labels.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from mcp2026ai.bundled import bundled_model_path

_INT32 = TensorProto.INT32


def _save(nodes: list[onnx.NodeProto], name: str, inputs: list, outputs: list, path: Path) -> Path:
    model = helper.make_model(
        helper.make_graph(nodes, name, inputs, outputs), opset_imports=[helper.make_opsetid("", 13)]
    )
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def add_sub(path: Path, elem: int = _INT32, width: int = 16) -> Path:
    """INPUT0, INPUT1 [-1, width] -> OUTPUT0 = sum, OUTPUT1 = difference (computed in INT32, as Triton's
    example graphs do for other types)."""
    tensor = helper.make_tensor_value_info
    inputs = [tensor(name, elem, ["batch", width]) for name in ("INPUT0", "INPUT1")]
    outputs = [tensor(name, elem, ["batch", width]) for name in ("OUTPUT0", "OUTPUT1")]
    if elem != _INT32:
        nodes = [
            helper.make_node("Cast", ["INPUT0"], ["a"], to=_INT32),
            helper.make_node("Cast", ["INPUT1"], ["b"], to=_INT32),
            helper.make_node("Add", ["a", "b"], ["sum"]),
            helper.make_node("Sub", ["a", "b"], ["difference"]),
            helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=elem),
            helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=elem),
        ]
    else:
        nodes = [
            helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
            helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"]),
        ]
    return _save(nodes, "add_sub", inputs, outputs, path)


def sequence_model(path: Path, dynamic: bool = False) -> Path:
    """OUTPUT = READY * (INPUT + START) (+ END * CORRID when ``dynamic``), all [-1, 1]."""
    names = ["INPUT", "START", "READY"] + (["END"] if dynamic else [])
    inputs = [helper.make_tensor_value_info(name, _INT32, ["batch", 1]) for name in names]
    nodes = [helper.make_node("Add", ["INPUT", "START"], ["sum"])]
    if dynamic:
        inputs.append(helper.make_tensor_value_info("CORRID", TensorProto.UINT64, ["batch", 1]))
        nodes += [
            helper.make_node("Cast", ["CORRID"], ["corrid"], to=_INT32),
            helper.make_node("Mul", ["END", "corrid"], ["end_corrid"]),
            helper.make_node("Add", ["sum", "end_corrid"], ["total"]),
        ]
    nodes.append(helper.make_node("Mul", ["READY", "total" if dynamic else "sum"], ["OUTPUT"]))
    output = helper.make_tensor_value_info("OUTPUT", _INT32, ["batch", 1])
    return _save(nodes, "sequence", inputs, [output], path)


def accumulator_model(path: Path) -> Path:
    """Implicit state: ACC_OUT = ACC_IN * (1 - START) + INPUT; OUTPUT = ACC_OUT + END * int(CORRID),
    CORRID a string (Triton's QA simple_string_dyna_sequence)."""
    tensor = helper.make_tensor_value_info
    names = ["INPUT", "START", "END", "ACC_IN"]
    inputs = [tensor(name, _INT32, ["batch", 1]) for name in names]
    inputs.append(tensor("CORRID", TensorProto.STRING, ["batch", 1]))
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", _INT32, [], [1])),
        helper.make_node("Sub", ["one", "START"], ["keep"]),
        helper.make_node("Mul", ["ACC_IN", "keep"], ["kept"]),
        helper.make_node("Add", ["kept", "INPUT"], ["ACC_OUT"]),
        helper.make_node("Cast", ["CORRID"], ["corrid"], to=_INT32),
        helper.make_node("Mul", ["END", "corrid"], ["end_corrid"]),
        helper.make_node("Add", ["ACC_OUT", "end_corrid"], ["OUTPUT"]),
    ]
    outputs = [tensor("OUTPUT", _INT32, ["batch", 1]), tensor("ACC_OUT", _INT32, ["batch", 1])]
    return _save(nodes, "accumulator", inputs, outputs, path)


def _tensors(kind: str, names: list[str], data_type: str, dims: str) -> str:
    entries = ",\n".join(f'  {{ name: "{name}" data_type: {data_type} dims: [ {dims} ] }}' for name in names)
    return f"{kind} [\n{entries}\n]\n"


def add_sub_config(name: str, data_type: str = "TYPE_INT32") -> str:
    return (
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
        + _tensors("input", ["INPUT0", "INPUT1"], data_type, "16")
        + _tensors("output", ["OUTPUT0", "OUTPUT1"], data_type, "16")
    )


def _control(name: str, kind: str, value: str) -> str:
    return f'    {{ name: "{name}" control [ {{ kind: {kind} {value} }} ] }}'


def sequence_config(name: str, dynamic: bool = False, string_corrid: bool = False) -> str:
    """Triton's simple_sequence config; ``dynamic``: simple_dyna_sequence's (END, CORRID, oldest);
    ``string_corrid``: a string CORRID and the accumulator's implicit state instead of READY."""
    false_true = "int32_false_true: [ 0, 1 ]"
    controls = [_control("START", "CONTROL_SEQUENCE_START", false_true)]
    if dynamic:
        controls.append(_control("END", "CONTROL_SEQUENCE_END", false_true))
    if not string_corrid:
        controls.append(_control("READY", "CONTROL_SEQUENCE_READY", false_true))
    if dynamic:
        corrid = "TYPE_STRING" if string_corrid else "TYPE_UINT64"
        controls.append(_control("CORRID", "CONTROL_SEQUENCE_CORRID", f"data_type: {corrid}"))
    strategy = "  max_sequence_idle_microseconds: 10000000\n  oldest { max_candidate_sequences: 1024 }\n"
    state = '  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]\n'
    return (
        f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n'
        + "sequence_batching {\n"
        + (strategy if dynamic else "")
        + "  control_input [\n"
        + ",\n".join(controls)
        + "\n  ]\n"
        + (state if string_corrid else "")
        + "}\n"
        + _tensors("input", ["INPUT"], "TYPE_INT32", "1")
        + _tensors("output", ["OUTPUT"], "TYPE_INT32", "1")
        + ('parameters [ { key: "execute_delay_ms" value: { string_value: "3" } } ]\n' if dynamic else "")
        + "instance_group [ { count: 2 kind: KIND_CPU } ]\n"
    )


DENSENET_CONFIG = """name: "densenet_onnx"
platform: "onnxruntime_onnx"
max_batch_size : 0
input [
  {
    name: "data_0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape { shape: [ 1, 3, 224, 224 ] }
  }
]
output [
  {
    name: "fc6_1"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    reshape { shape: [ 1, 1000, 1, 1 ] }
    label_filename: "densenet_labels.txt"
  }
]
"""
DENSENET_LABELS = [f"LABEL {index}" for index in range(1000)]
BROKEN_CONFIG = add_sub_config("broken_dims").replace("dims: [ 16 ]", "dims: [ -2 ]", 1)


def write_model(root: Path, name: str, config: str, versions: dict[int, Path] | None = None) -> Path:
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.pbtxt").write_text(config)
    for number, source in (versions or {}).items():
        (directory / str(number)).mkdir(exist_ok=True)
        shutil.copyfile(source, directory / str(number) / "model.onnx")
    return directory


def build_repository(root: Path) -> Path:
    """Seven entries, as Triton's HTTP model-control example expects: six models (``simple_specific``:
    versions 1-3 with ``version_policy: specific [2]``) and one refused for its dims."""
    work = root.parent / f"{root.name}-sources"
    add_sub(work / "simple.onnx")
    write_model(root, "simple", add_sub_config("simple"), {1: work / "simple.onnx"})
    config = add_sub_config("simple_specific") + "version_policy: { specific: { versions: [ 2 ] } }\n"
    write_model(root, "simple_specific", config, dict.fromkeys((1, 2, 3), work / "simple.onnx"))
    sequence_model(work / "sequence.onnx")
    write_model(root, "simple_sequence", sequence_config("simple_sequence"), {1: work / "sequence.onnx"})
    sequence_model(work / "dyna.onnx", dynamic=True)
    write_model(root, "simple_dyna_sequence", sequence_config("simple_dyna_sequence", True), {1: work / "dyna.onnx"})
    accumulator_model(work / "accumulator.onnx")
    string_dyna = sequence_config("simple_string_dyna_sequence", True, string_corrid=True)
    write_model(root, "simple_string_dyna_sequence", string_dyna, {1: work / "accumulator.onnx"})
    densenet = write_model(root, "densenet_onnx", DENSENET_CONFIG, {1: bundled_model_path("onnx-densenet121")})
    (densenet / "densenet_labels.txt").write_text("\n".join(DENSENET_LABELS) + "\n")
    write_model(root, "broken_dims", BROKEN_CONFIG, {1: work / "simple.onnx"})
    return root


def add_int8_model(root: Path) -> Path:
    """An eighth entry (Triton's gRPC model-control example expects eight): simple_int8."""
    source = add_sub(root.parent / f"{root.name}-sources" / "int8.onnx", TensorProto.INT8)
    return write_model(root, "simple_int8", add_sub_config("simple_int8", "TYPE_INT8"), {1: source})
