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


def decode_request(message: pb.ModelInferRequest, headers: dict[str, str]) -> InferenceRequest:
    raw = list(message.raw_input_contents)
    if raw and len(raw) != len(message.inputs):
        raise InvalidInputError(f"{len(raw)} raw_input_contents for {len(message.inputs)} inputs")
    inputs: dict[str, np.ndarray] = {}
    for index, tensor in enumerate(message.inputs):
        if tensor.name in inputs:
            raise InvalidInputError(f"input {tensor.name!r} appears twice")
        inputs[tensor.name] = _decode_tensor(tensor, raw[index] if raw else None)
    if not inputs:
        raise InvalidInputError("request has no inputs")
    return InferenceRequest(
        model=message.model_name,
        version=message.model_version or None,
        inputs=inputs,
        id=message.id,
        outputs=[RequestedOutput(output.name, class_count=_class_count(output)) for output in message.outputs],
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


def encode_response(response: InferenceResponse) -> pb.ModelInferResponse:
    message = pb.ModelInferResponse(model_name=response.model, model_version=response.version, id=response.id)
    for name, array in response.outputs.items():
        message.outputs.add(name=name, datatype=v2_datatype(array.dtype), shape=list(array.shape))
        message.raw_output_contents.append(array_to_raw(array))
    return message


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


def _class_count(output: pb.ModelInferRequest.InferRequestedOutputTensor) -> int:
    if "classification" not in output.parameters:
        return 0
    count = output.parameters["classification"].int64_param
    if not 0 <= count <= MAX_CLASS_COUNT:
        raise InvalidInputError(f"output parameter 'classification' must be an integer in 0..{MAX_CLASS_COUNT}")
    return int(count)
