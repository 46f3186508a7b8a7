"""Triton-shaped server metadata, model metadata and model configuration (what tritonclient and
perf_analyzer read), built from a transport-neutral :class:`ModelDescription`."""

from __future__ import annotations

from typing import Any

from mcp2026ai import __version__
from mcp2026ai.contract import SequenceSpec
from mcp2026ai.inference import ModelDescription
from mcp2026ai.ir.signature import Signature, TensorSpec

SERVER_NAME = "mcp2026ai"
EXTENSIONS = [
    "binary_tensor_data",
    "model_repository",
    "model_configuration",
    "statistics",
    "schedule_policy",
    "sla_classes",
    "classification",
    "trace",
    "logging",
    "system_shared_memory",
    "cuda_shared_memory",
    "sequence",
]
LABEL_FILENAME = "labels.txt"
_TRITON_TYPES = {"BOOL": "TYPE_BOOL", "BYTES": "TYPE_STRING"}


def server_metadata() -> dict[str, Any]:
    return {"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS}


def model_metadata(model: ModelDescription) -> dict[str, Any]:
    return {
        "name": model.name,
        "versions": list(model.versions),
        "platform": model.platform,
        "inputs": [_tensor_metadata(spec) for spec in model.signature.inputs],
        "outputs": [_tensor_metadata(spec) for spec in model.signature.outputs],
    }


def model_config(model: ModelDescription) -> dict[str, Any]:
    """Triton's model configuration; ``max_batch_size`` 0 says the model takes no batch dimension."""
    batched = model.max_batch_size > 0
    config: dict[str, Any] = {
        "name": model.name,
        "platform": model.platform,
        "backend": model.platform.partition("_")[0],
        "version_policy": {"latest": {"num_versions": 1}},
        "max_batch_size": model.max_batch_size,
        "input": [_config_input(spec, batched, model.image_layout) for spec in model.signature.inputs],
        "output": [_config_output(spec, batched, model.labels) for spec in model.signature.outputs],
        "instance_group": [{"name": model.name, "kind": "KIND_CPU", "count": model.instance_count}],
        "parameters": {"mcp_plan": {"string_value": model.plan}},
    }
    if batched and model.dynamic_batching is not None:
        config["dynamic_batching"] = {
            "max_queue_delay_microseconds": int(model.dynamic_batching.max_queue_delay_ms * 1000),
            "preferred_batch_size": list(model.dynamic_batching.preferred_batch_sizes),
        }
    if model.sequence is not None:
        config["sequence_batching"] = sequence_batching(model.sequence, model.signature)
    if model.decoupled:  # streaming clients (perf_analyzer) read it to choose ModelStreamInfer
        config["model_transaction_policy"] = {"decoupled": True}
    return config


_CONTROL_KINDS = {
    "start": "CONTROL_SEQUENCE_START",
    "end": "CONTROL_SEQUENCE_END",
    "ready": "CONTROL_SEQUENCE_READY",
    "corrid": "CONTROL_SEQUENCE_CORRID",
}


def sequence_batching(spec: SequenceSpec, signature: Signature) -> dict[str, Any]:
    """Triton's sequence_batching section: control inputs, implicit state, idle time, strategy."""
    types = {tensor.name: tensor for tensor in [*signature.inputs, *signature.outputs]}
    controls = []
    for field, kind in _CONTROL_KINDS.items():
        name = getattr(spec.controls, field)
        if name is None or name not in types:
            continue
        datatype = _TRITON_TYPES.get(types[name].datatype, f"TYPE_{types[name].datatype}")
        control: dict[str, Any] = {"kind": kind}
        if kind == "CONTROL_SEQUENCE_CORRID":
            control["data_type"] = datatype
        else:
            key = _FALSE_TRUE.get(datatype, "int32_false_true")
            control[key] = [False, True] if key == "bool_false_true" else [0, 1]
        controls.append({"name": name, "control": [control]})
    states = [
        {
            "input_name": state.input,
            "output_name": state.output,
            "data_type": _TRITON_TYPES.get(types[state.input].datatype, f"TYPE_{types[state.input].datatype}"),
            "dims": types[state.input].shape,
        }
        for state in spec.state
        if state.input in types
    ]
    return {
        "max_sequence_idle_microseconds": int(spec.idle_timeout_s * 1_000_000),
        "control_input": controls,
        "state": states,
        spec.strategy: {},
    }


_FALSE_TRUE = {"TYPE_FP32": "fp32_false_true", "TYPE_BOOL": "bool_false_true"}


def _tensor_metadata(spec: TensorSpec) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": spec.shape}


def _config_input(spec: TensorSpec, batched: bool, image_layout: str | None) -> dict[str, Any]:
    """An image input (rank 3 past the batch) is marked with its layout, as image clients expect."""
    tensor = _config_tensor(spec, batched)
    if image_layout is not None and len(tensor["dims"]) == 3:
        tensor["format"] = f"FORMAT_{image_layout}"
    return tensor


def _config_output(spec: TensorSpec, batched: bool, labels: tuple[str, ...]) -> dict[str, Any]:
    """An output with one score per registered label names the labels file, as Triton's configs do."""
    tensor = _config_tensor(spec, batched)
    if labels and tensor["dims"] and tensor["dims"][-1] == len(labels):
        tensor["label_filename"] = LABEL_FILENAME
    return tensor


def _config_tensor(spec: TensorSpec, batched: bool) -> dict[str, Any]:
    dims = spec.shape[1:] if batched else spec.shape
    return {"name": spec.name, "data_type": _TRITON_TYPES.get(spec.datatype, f"TYPE_{spec.datatype}"), "dims": dims}
