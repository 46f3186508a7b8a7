"""ModelInferRequest/Response protobufs <-> InferenceRequest/Response."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tritonclient.grpc import service_pb2 as pb

from mcp2026ai.errors import InvalidArgumentError, InvalidInputError
from mcp2026ai.inference import InferenceRequest, InferenceResponse, RequestedOutput
from mcp2026ai.ir.dtypes import v2_datatype
from mcp2026ai.protocol.tensors import array_from_list, array_from_raw, array_to_list, array_to_raw
from mcp2026ai.protocol.v2_json import MAX_CLASS_COUNT
from mcp2026ai.shared_memory import SharedMemoryRegions, region_ref

# Which InferTensorContents field carries each v2 datatype (FP16/BF16 travel only as raw bytes).
CONTENTS_FIELD = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def parameters_to_dict(parameters: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, parameter in parameters.items():
        kind = parameter.WhichOneof("parameter_choice")
        if kind is not None:
            values[key] = getattr(parameter, kind)
    return values


def decode_request(
    message: pb.ModelInferRequest, headers: dict[str, str], regions: SharedMemoryRegions | None = None
) -> InferenceRequest:
    """raw_input_contents hold the inputs that are not in shared memory, in order (tritonclient's layout)."""
    refs = [region_ref(parameters_to_dict(t.parameters), f"input {t.name!r}") for t in message.inputs]
    raw = iter(message.raw_input_contents)
    in_band = sum(ref is None for ref in refs)
    if message.raw_input_contents:
        _refuse_typed_contents(message)
    if message.raw_input_contents and len(message.raw_input_contents) != in_band:
        raise InvalidInputError(f"{len(message.raw_input_contents)} raw_input_contents for {in_band} inputs")
    inputs: dict[str, np.ndarray] = {}
    for tensor, ref in zip(message.inputs, refs, strict=True):
        if tensor.name in inputs:
            raise InvalidInputError(f"input {tensor.name!r} appears twice")
        if ref is not None:
            if regions is None:
                raise InvalidInputError("this endpoint does not take shared memory tensors")
            data = regions.read(ref, f"input {tensor.name!r}")
            inputs[tensor.name] = array_from_raw(tensor.name, tensor.datatype, list(tensor.shape), data)
        else:
            inputs[tensor.name] = _decode_tensor(tensor, next(raw) if message.raw_input_contents else None)
    if not inputs:
        raise InvalidInputError("request has no inputs")
    return InferenceRequest(
        model=message.model_name,
        version=message.model_version or None,
        inputs=inputs,
        id=message.id,
        outputs=[_requested(output) for output in message.outputs],
        parameters=parameters_to_dict(message.parameters),
        headers=headers,
    )


def encode_request(
    model: str,
    version: str | None,
    tensors: Mapping[str, np.ndarray],
    outputs: Sequence[str] = (),
    binary: bool = True,
) -> pb.ModelInferRequest:
    """A ModelInferRequest: raw_input_contents when ``binary``, typed contents otherwise."""
    request = pb.ModelInferRequest(model_name=model, model_version=version or "")
    for name, array in tensors.items():
        datatype = v2_datatype(array.dtype)
        tensor = request.inputs.add(name=name, datatype=datatype, shape=list(array.shape))
        if binary:
            request.raw_input_contents.append(array_to_raw(array))
        elif datatype in CONTENTS_FIELD:
            getattr(tensor.contents, CONTENTS_FIELD[datatype]).extend(_flat(array))
        else:
            raise InvalidArgumentError(f"input {name!r}: {datatype} has no typed gRPC contents; use --binary")
    for name in outputs:
        request.outputs.add(name=name)
    return request


def encode_response(
    response: InferenceResponse,
    request: InferenceRequest | None = None,
    regions: SharedMemoryRegions | None = None,
) -> pb.ModelInferResponse:
    """Outputs as raw_output_contents; one asked for in shared memory is written there, described by its
    parameters, with an empty raw entry so the others keep their positions."""
    in_memory = {o.name: o.shared_memory for o in (request.outputs if request else []) if o.shared_memory}
    message = pb.ModelInferResponse(model_name=response.model, model_version=response.version, id=response.id)
    for name, array in response.outputs.items():
        tensor = message.outputs.add(name=name, datatype=v2_datatype(array.dtype), shape=list(array.shape))
        ref = in_memory.get(name)
        if ref is None:
            message.raw_output_contents.append(array_to_raw(array))
            continue
        if regions is None:
            raise InvalidInputError("this endpoint does not take shared memory tensors")
        written = regions.write(ref, array_to_raw(array), f"output {name!r}")
        tensor.parameters["shared_memory_region"].string_param = ref.region
        tensor.parameters["shared_memory_byte_size"].int64_param = written
        message.raw_output_contents.append(b"")
    return message


def decode_response(message: pb.ModelInferResponse) -> InferenceResponse:
    """A ModelInferResponse's outputs (raw_output_contents in order, else typed contents); an output
    written to shared memory (empty raw entry, region parameters) is left out."""
    outputs: dict[str, np.ndarray] = {}
    raw = list(message.raw_output_contents)
    for index, tensor in enumerate(message.outputs):
        parameters = parameters_to_dict(tensor.parameters)
        if "shared_memory_region" in parameters:
            continue
        shape = list(tensor.shape)
        if raw:
            outputs[tensor.name] = array_from_raw(tensor.name, tensor.datatype, shape, raw[index])
        else:
            field = CONTENTS_FIELD.get(tensor.datatype, "bytes_contents")
            values = list(getattr(tensor.contents, field))
            outputs[tensor.name] = array_from_list(tensor.name, tensor.datatype, shape, values)
    return InferenceResponse(
        model=message.model_name,
        version=message.model_version,
        id=message.id,
        outputs=outputs,
        parameters=parameters_to_dict(message.parameters),
    )


def _refuse_typed_contents(message: pb.ModelInferRequest) -> None:
    """Typed contents beside raw_input_contents: refused in Triton's words (its clients check them)."""
    for tensor in message.inputs:
        if tensor.HasField("contents"):
            raise InvalidInputError(
                f"contents field must not be specified when using raw_input_contents for '{tensor.name}' "
                f"for model '{message.model_name}'"
            )


def _decode_tensor(tensor: pb.ModelInferRequest.InferInputTensor, raw: bytes | None) -> np.ndarray:
    shape = list(tensor.shape)
    if raw is not None:
        return array_from_raw(tensor.name, tensor.datatype, shape, raw)
    field = CONTENTS_FIELD.get(tensor.datatype)
    if field is None:
        raise InvalidInputError(
            f"input {tensor.name!r}: datatype {tensor.datatype!r} must be sent in raw_input_contents"
        )
    return array_from_list(tensor.name, tensor.datatype, shape, list(getattr(tensor.contents, field)))


def _flat(array: np.ndarray) -> list[Any]:
    values = array_to_list(array.reshape(-1))
    return [value.encode() if isinstance(value, str) else value for value in values]


def _requested(output: pb.ModelInferRequest.InferRequestedOutputTensor) -> RequestedOutput:
    shm = region_ref(parameters_to_dict(output.parameters), f"output {output.name!r}")
    return RequestedOutput(output.name, class_count=_class_count(output), shared_memory=shm)


def _class_count(output: pb.ModelInferRequest.InferRequestedOutputTensor) -> int:
    if "classification" not in output.parameters:
        return 0
    count = output.parameters["classification"].int64_param
    if not 0 <= count <= MAX_CLASS_COUNT:
        raise InvalidInputError(f"output parameter 'classification' must be an integer in 0..{MAX_CLASS_COUNT}")
    return int(count)
