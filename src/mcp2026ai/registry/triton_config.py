"""A Triton ``config.pbtxt`` as what the registry keeps: checked dims, a contract, preprocessing.

- no latency budget (a config states none): planned for the best latency with no constraint.
- ``max_batch_size`` and ``dynamic_batching`` (queue delay, preferred sizes) -> the contract's
  ``batching``; no ``dynamic_batching`` -> no queue delay.
- ``sequence_batching`` (control inputs START/END/READY/CORRID, implicit ``state``, idle time,
  direct/oldest) -> the contract's ``sequence``.
- ``dynamic_batching.priority_levels`` / ``default_priority_level`` -> the contract's SLA class
  (level 1 latency-critical, the lowest best-effort, any between throughput-guaranteed).
- an input's ``format`` and an output's ``label_filename`` -> the registered preprocessing (layout,
  size, labels), which the classification extension and ``/config`` read.
- ``reshape`` -> the ONNX graph wrapped at import (:mod:`mcp2026ai.ir.reshape`).
- ``instance_group`` count and the rest are applied when served from the stored config
  (:func:`mcp2026ai.serving.overrides.override_from_triton`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.contract import InferenceContract, SLAClass, parse_contract
from mcp2026ai.ir.reshape import Reshape
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry.records import Preprocessing
from mcp2026ai.registry.triton_repository import TritonConfigError
from mcp2026ai.security.paths import confined_path

APPLIED_FIELDS = {
    "name",
    "platform",
    "backend",
    "version_policy",
    "max_batch_size",
    "input",
    "output",
    "dynamic_batching",
    "sequence_batching",
    "instance_group",
    "default_model_filename",
}
_CONTROL_FIELDS = {
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START: "start",
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END: "end",
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY: "ready",
    mc.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID: "corrid",
}
NO_LATENCY_BUDGET_MS = 3_600_000
"""A Triton config promises no latency: its contract is planned like a model registered without one
(the policy's ``UNCONSTRAINED``), not held to the contract's default 100 ms p99."""
DEFAULT_SEQUENCE_IDLE_US = 1_000_000
"""Triton's ``max_sequence_idle_microseconds`` when the config leaves it out."""


def v2_datatype(data_type: int) -> str:
    """KServe v2 name of a Triton ``DataType`` (``TYPE_STRING`` -> ``BYTES``)."""
    name = mc.DataType.Name(data_type).removeprefix("TYPE_")
    return "BYTES" if name == "STRING" else name


def check_config(config: mc.ModelConfig, source: Path) -> None:
    """What a config says on its own: batch size, dims and reshape of every tensor and state."""
    if config.max_batch_size < 0:
        raise TritonConfigError(f"{source}: max_batch_size: {config.max_batch_size} must be 0 or more")
    seen: set[str] = set()
    for kind, tensors in (("input", config.input), ("output", config.output)):
        for tensor in tensors:
            where = f"{source}: {kind} {tensor.name!r}"
            if not tensor.name or tensor.name in seen:
                raise TritonConfigError(f"{where}: name must be given and unique")
            seen.add(tensor.name)
            if tensor.data_type == mc.TYPE_INVALID:
                raise TritonConfigError(f"{where}: data_type must be given")
            _check_dims(list(tensor.dims), f"{where}: dims")
            if tensor.HasField("reshape"):
                _check_reshape(list(tensor.dims), list(tensor.reshape.shape), f"{where}: reshape.shape")
    for state in config.sequence_batching.state:
        _check_dims(list(state.dims), f"{source}: sequence_batching.state {state.input_name!r}: dims")


def _check_dims(dims: list[int], where: str) -> None:
    bad = [dim for dim in dims if dim < -1]
    if bad:
        raise TritonConfigError(f"{where}: {bad[0]} is impossible (a size, or -1 for any)")


def _check_reshape(dims: list[int], shape: list[int], where: str) -> None:
    _check_dims(shape, where)
    if -1 not in dims and -1 not in shape and _count(dims) != _count(shape):
        raise TritonConfigError(f"{where}: {shape} holds {_count(shape)} elements, dims {dims} hold {_count(dims)}")


def _count(dims: list[int]) -> int:
    count = 1
    for dim in dims:
        count *= dim
    return count


def reshapes(config: mc.ModelConfig) -> tuple[list[Reshape], list[Reshape]]:
    """The inputs and outputs whose model shape differs from the one clients use."""
    batched = config.max_batch_size > 0

    def of(tensors: Any) -> list[Reshape]:
        return [
            Reshape(t.name, tuple(t.dims), tuple(t.reshape.shape), batched) for t in tensors if t.HasField("reshape")
        ]

    return of(config.input), of(config.output)


def check_reshapes(config: mc.ModelConfig, original: Signature, source: Path) -> None:
    """Each ``reshape`` against the model's own tensor, before the graph is wrapped."""
    batched = config.max_batch_size > 0
    for kind, tensors, specs in (("input", config.input, original.inputs), ("output", config.output, original.outputs)):
        shapes = {spec.name: spec.shape for spec in specs}
        for tensor in (t for t in tensors if t.HasField("reshape") and t.name in shapes):
            wanted = [-1, *tensor.reshape.shape] if batched else list(tensor.reshape.shape)
            model = shapes[tensor.name]
            fits = len(wanted) == len(model) and all(m == -1 or m == w for w, m in zip(wanted, model, strict=True))
            if not fits:
                raise TritonConfigError(
                    f"{source}: {kind} {tensor.name!r}: reshape.shape: {list(tensor.reshape.shape)} does not match "
                    f"the model's {_without_batch_shape(model, batched)}"
                )


def _without_batch_shape(shape: list[int], batched: bool) -> list[int]:
    return shape[1:] if batched and shape else shape


def check_signature(config: mc.ModelConfig, signature: Signature, source: Path) -> None:
    """The config's tensors against the model's (after any reshape): names, types and dims; every model
    input is configured or filled by sequence batching."""
    sides = (("input", config.input, signature.inputs), ("output", config.output, signature.outputs))
    for kind, tensors, specs in sides:
        by_name = {spec.name: spec for spec in specs}
        for tensor in tensors:
            spec = by_name.get(tensor.name)
            where = f"{source}: {kind} {tensor.name!r}"
            if spec is None:
                raise TritonConfigError(f"{where}: the model has no such {kind} (it has {sorted(by_name)})")
            _check_tensor(tensor, spec, config.max_batch_size, where)
    filled = set(sequence_inputs(config))
    unconfigured = [spec.name for spec in signature.inputs if spec.name not in {t.name for t in config.input} | filled]
    if unconfigured:
        raise TritonConfigError(f"{source}: input: the model's input {unconfigured[0]!r} is not configured")
    missing = sorted(filled - {spec.name for spec in signature.inputs})
    if missing:
        raise TritonConfigError(f"{source}: sequence_batching: {missing[0]!r} is not an input of the model")


def _check_tensor(tensor: Any, spec: TensorSpec, max_batch_size: int, where: str) -> None:
    batched = max_batch_size > 0
    if v2_datatype(tensor.data_type) != spec.datatype:
        given = mc.DataType.Name(tensor.data_type)
        raise TritonConfigError(f"{where}: data_type: {given} does not match the model's {spec.datatype}")
    dims = [-1, *tensor.dims] if batched else list(tensor.dims)
    if batched and (not spec.shape or spec.shape[0] != -1):
        raise TritonConfigError(
            f"{where}: max_batch_size: {max_batch_size} needs the model's first dimension to be dynamic, "
            f"but its shape is {spec.shape}"
        )
    matches = len(dims) == len(spec.shape) and all(
        model == -1 or model == given for given, model in zip(dims, spec.shape, strict=True)
    )
    if not matches:
        shown = list(tensor.reshape.shape) if tensor.HasField("reshape") else list(tensor.dims)
        raise TritonConfigError(f"{where}: dims: {shown} do not match the model's {_without_batch(spec, batched)}")


def _without_batch(spec: TensorSpec, batched: bool) -> list[int]:
    return spec.shape[1:] if batched and spec.shape else spec.shape


def sequence_inputs(config: mc.ModelConfig) -> list[str]:
    """Inputs sequence batching fills: control inputs and implicit state."""
    batching = config.sequence_batching
    return [control.name for control in batching.control_input] + [state.input_name for state in batching.state]


def contract_from_config(config: mc.ModelConfig, source: Path) -> InferenceContract:
    """The contract a config means (see the module docstring); refused with the file and field named."""
    document: dict[str, Any] = {"latency": {"p99_ms": NO_LATENCY_BUDGET_MS}}
    if config.max_batch_size > 0:
        document["batching"] = _batching(config)
    level_class = priority_class(config.dynamic_batching.default_priority_level, config.dynamic_batching)
    if level_class is not None:
        document["sla_class"] = level_class.value
    if config.HasField("sequence_batching"):
        document["sequence"] = _sequence(config.sequence_batching)
    return parse_contract(document, f"{source} (as a contract)")


def _batching(config: mc.ModelConfig) -> dict[str, Any]:
    batching: dict[str, Any] = {"max_batch_size": config.max_batch_size, "max_queue_delay_ms": 0.0}
    if config.HasField("dynamic_batching"):
        dynamic = config.dynamic_batching
        batching["max_queue_delay_ms"] = dynamic.max_queue_delay_microseconds / 1000
        batching["preferred_batch_sizes"] = list(dynamic.preferred_batch_size)
    return batching


def priority_class(level: int, dynamic: mc.ModelDynamicBatching) -> SLAClass | None:
    """The SLA class of a Triton priority level (1 is the highest; 0: the model's default level)."""
    levels = dynamic.priority_levels
    level = level or dynamic.default_priority_level
    if levels <= 1 or not 1 <= level <= levels:
        return None
    if level == 1:
        return SLAClass.LATENCY_CRITICAL
    return SLAClass.BEST_EFFORT if level == levels else SLAClass.THROUGHPUT_GUARANTEED


def priority_classes(config: mc.ModelConfig) -> dict[int, SLAClass]:
    """Each of the model's priority levels as an SLA class (empty: the model declares no levels), so
    that a request's ``priority`` parameter picks its class queue."""
    dynamic = config.dynamic_batching
    levels = {level: priority_class(level, dynamic) for level in range(1, dynamic.priority_levels + 1)}
    return {level: cls for level, cls in levels.items() if cls is not None}


def _sequence(batching: mc.ModelSequenceBatching) -> dict[str, Any]:
    controls: dict[str, str] = {}
    for control_input in batching.control_input:
        for control in control_input.control:
            controls[_CONTROL_FIELDS[control.kind]] = control_input.name
    idle_us = batching.max_sequence_idle_microseconds or DEFAULT_SEQUENCE_IDLE_US
    return {
        "controls": controls,
        "state": [{"input": state.input_name, "output": state.output_name} for state in batching.state],
        "idle_timeout_s": idle_us / 1_000_000,
        "strategy": "oldest" if batching.WhichOneof("strategy_choice") == "oldest" else "direct",
    }


def preprocessing_from_config(config: mc.ModelConfig, directory: Path) -> Preprocessing | None:
    """Image layout and size (an input with a ``format``) and labels (an output's ``label_filename``)."""
    fields: dict[str, Any] = {}
    image = next((t for t in config.input if t.format in (mc.ModelInput.FORMAT_NCHW, mc.ModelInput.FORMAT_NHWC)), None)
    if image is not None and len(image.dims) == 3:
        layout = mc.ModelInput.Format.Name(image.format).removeprefix("FORMAT_")
        height, width = image.dims[1:] if layout == "NCHW" else image.dims[:2]
        fields.update(layout=layout, height=max(height, 1), width=max(width, 1))
    labelled = next((t for t in config.output if t.label_filename), None)
    if labelled is not None:
        source = f"{directory / 'config.pbtxt'}: output {labelled.name!r}: label_filename"
        path = confined_path(directory, labelled.label_filename, source)
        try:
            fields["labels"] = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise TritonConfigError(
                f"{directory / 'config.pbtxt'}: output {labelled.name!r}: label_filename: "
                f"{labelled.label_filename!r} cannot be read ({exc.__class__.__name__})"
            ) from None
    return Preprocessing(**fields) if fields else None


def unapplied_notes(config: mc.ModelConfig) -> list[str]:
    """One note per configured field that changes nothing here (kept in the stored config)."""
    notes = []
    if config.parameters:
        keys = ", ".join(sorted(config.parameters))
        notes.append(f"parameters {keys}: kept with the version (and exported); nothing here reads them")
    known = APPLIED_FIELDS | {"parameters"}
    if config.backend == "python":  # a python model's decoupled policy is applied (runtime/triton_python)
        known |= {"model_transaction_policy"}
    skipped = sorted(field.name for field, _ in config.ListFields() if field.name not in known)
    if skipped:
        notes.append(f"{', '.join(skipped)}: not applied here (kept in the stored config)")
    kinds = {group.kind for group in config.instance_group} - {mc.ModelInstanceGroup.KIND_CPU}
    if kinds - {mc.ModelInstanceGroup.KIND_AUTO}:
        notes.append("instance_group: GPU and model kinds run on CPU instances here")
    return notes
