"""KServe v2 JSON bodies with Triton's binary tensor extension, decoded and encoded."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from mcp2026ai.errors import InvalidInputError, PayloadTooLargeError
from mcp2026ai.inference import InferenceRequest, InferenceResponse, RequestedOutput
from mcp2026ai.ir.dtypes import v2_datatype
from mcp2026ai.protocol.tensors import array_from_list, array_from_raw, array_to_list, array_to_raw
from mcp2026ai.shared_memory import RegionRef, SharedMemoryRegions, region_ref

HEADER_LENGTH = "inference-header-content-length"
MAX_CLASS_COUNT = 1 << 16


def parse_json(body: bytes | memoryview) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidInputError(f"request body is not valid JSON ({exc})") from None


def decode_request(
    model: str,
    version: str | None,
    body: bytes,
    header_length: str | None,
    headers: dict[str, str],
    max_json_bytes: int | None = None,
    regions: SharedMemoryRegions | None = None,
) -> InferenceRequest:
    """A v2 request body; its JSON part may not exceed ``max_json_bytes`` (parsed JSON numbers take
    several times their text's size: big tensors belong in the binary part)."""
    json_end = _json_length(header_length, len(body))
    if max_json_bytes is not None and json_end > max_json_bytes:
        raise PayloadTooLargeError(
            f"the JSON part of the request is {json_end} bytes (limit {max_json_bytes}); "
            "send large tensors with the binary tensor extension"
        )
    document = parse_json(memoryview(body)[:json_end])
    if not isinstance(document, dict):
        raise InvalidInputError("request body must be a JSON object")
    binary = memoryview(body)[json_end:]
    inputs, used = _decode_inputs(document.get("inputs"), binary, regions)
    if used != len(binary):
        raise InvalidInputError(f"{len(binary) - used} bytes of binary data are not claimed by any input")
    parameters = _dict(document.get("parameters"), "parameters")
    return InferenceRequest(
        model=model,
        version=version or None,
        inputs=inputs,
        id=str(document.get("id") or ""),
        outputs=_decode_outputs(document.get("outputs"), parameters),
        parameters=parameters,
        headers=headers,
    )


def encode_request(
    tensors: Mapping[str, np.ndarray],
    outputs: Sequence[str] = (),
    binary: bool = False,
    parameters: Mapping[str, Any] | None = None,
) -> tuple[bytes, int | None]:
    """A v2 infer request body (binary tensor extension or JSON lists) and, if binary, the JSON header's length."""
    entries, blobs = _tensor_entries(tensors, lambda name: binary)
    document: dict[str, Any] = {"inputs": entries}
    if outputs:
        document["outputs"] = [{"name": name, "parameters": {"binary_data": binary}} for name in outputs]
    if parameters:
        document["parameters"] = dict(parameters)
    return _body(document, blobs)


def encode_response(
    response: InferenceResponse, request: InferenceRequest, regions: SharedMemoryRegions | None = None
) -> tuple[bytes, int | None]:
    """The body and, when any output travels as binary, the JSON header's length; outputs asked for
    in shared memory are written there and described without data."""
    wanted = {output.name: output for output in request.outputs}
    binary_default = bool(request.parameters.get("binary_data_output", False))

    def binary(name: str) -> bool:
        requested = wanted.get(name)
        return requested.binary if requested and requested.binary is not None else binary_default

    in_memory = {name: o.shared_memory for name, o in wanted.items() if o.shared_memory is not None}
    outputs = {name: array for name, array in response.outputs.items() if name not in in_memory}
    entries, blobs = _tensor_entries(outputs, binary)
    entries += _shared_memory_entries(response, in_memory, regions)
    document = {"model_name": response.model, "model_version": response.version, "id": response.id, "outputs": entries}
    return _body(document, blobs)


def decode_response(body: bytes, header_length: str | int | None = None) -> InferenceResponse:
    """A v2 infer response body (outputs inline or after the JSON with the binary tensor extension);
    an output described only by shared memory parameters is left out (its data is in the region)."""
    json_end = _json_length(None if header_length is None else str(header_length), len(body))
    document = _dict(parse_json(memoryview(body)[:json_end]), "response")
    binary = memoryview(body)[json_end:]
    outputs: dict[str, np.ndarray] = {}
    offset = 0
    for index, item in enumerate(document.get("outputs") or []):
        if not isinstance(item, dict):
            raise InvalidInputError(f"outputs[{index}] of the response must be an object")
        name, datatype, shape = _input_header(item, index)
        params = _dict(item.get("parameters"), f"outputs[{index}].parameters")
        size = params.get("binary_data_size")
        if "data" in item:
            outputs[name] = array_from_list(name, datatype, shape, item["data"])
        elif size and "shared_memory_region" not in params:
            if not isinstance(size, int) or offset + size > len(binary):
                raise InvalidInputError(f"output {name!r}: binary_data_size {size!r} exceeds the binary data")
            outputs[name] = array_from_raw(name, datatype, shape, bytes(binary[offset : offset + size]))
            offset += size
    return InferenceResponse(
        model=str(document.get("model_name", "")),
        version=str(document.get("model_version", "")),
        id=str(document.get("id", "")),
        outputs=outputs,
        parameters=_dict(document.get("parameters"), "parameters"),
    )


def _shared_memory_entries(
    response: InferenceResponse, in_memory: dict[str, RegionRef], regions: SharedMemoryRegions | None
) -> list[dict[str, Any]]:
    entries = []
    for name, ref in in_memory.items():
        array = response.outputs.get(name)
        if array is None:
            continue
        written = _require(regions).write(ref, array_to_raw(array), f"output {name!r}")
        # binary_data_size 0: Triton's C++ HTTP client (perf_analyzer) reads it for every output it
        # asked for in binary, shared memory ones included; nothing follows the JSON for them
        parameters = {"shared_memory_region": ref.region, "shared_memory_byte_size": written, "binary_data_size": 0}
        entries.append(
            {"name": name, "datatype": v2_datatype(array.dtype), "shape": list(array.shape), "parameters": parameters}
        )
    return entries


def _require(regions: SharedMemoryRegions | None) -> SharedMemoryRegions:
    if regions is None:
        raise InvalidInputError("this endpoint does not take shared memory tensors")
    return regions


def _tensor_entries(
    tensors: Mapping[str, np.ndarray], binary: Callable[[str], bool]
) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Each tensor's JSON entry, with its data inline or, when ``binary(name)``, as a blob after the JSON."""
    entries: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for name, array in tensors.items():
        entry: dict[str, Any] = {"name": name, "datatype": v2_datatype(array.dtype), "shape": list(array.shape)}
        if binary(name):
            blob = array_to_raw(array)
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = array_to_list(array)
        entries.append(entry)
    return entries, blobs


def _body(document: dict[str, Any], blobs: list[bytes]) -> tuple[bytes, int | None]:
    header = orjson.dumps(document, option=orjson.OPT_SERIALIZE_NUMPY)
    if not blobs:
        return header, None
    return b"".join([header, *blobs]), len(header)


def _json_length(header_length: str | None, body_length: int) -> int:
    if header_length is None:
        return body_length
    try:
        length = int(header_length)
    except ValueError:
        raise InvalidInputError(f"Inference-Header-Content-Length {header_length!r} is not an integer") from None
    if not 0 < length <= body_length:
        raise InvalidInputError(f"Inference-Header-Content-Length {length} is outside the body's {body_length} bytes")
    return length


def _decode_inputs(
    items: Any, binary: memoryview, regions: SharedMemoryRegions | None = None
) -> tuple[dict[str, np.ndarray], int]:
    if not isinstance(items, list) or not items:
        raise InvalidInputError("request needs a non-empty 'inputs' list")
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidInputError(f"inputs[{index}] must be an object")
        name, datatype, shape = _input_header(item, index)
        if name in inputs:
            raise InvalidInputError(f"input {name!r} appears twice")
        params = _dict(item.get("parameters"), f"inputs[{index}].parameters")
        size = params.get("binary_data_size")
        ref = region_ref(params, f"input {name!r}")
        if ref is not None:
            inputs[name] = array_from_raw(name, datatype, shape, _require(regions).read(ref, f"input {name!r}"))
        elif size is not None:
            if not isinstance(size, int) or size < 0 or offset + size > len(binary):
                raise InvalidInputError(f"input {name!r}: binary_data_size {size!r} exceeds the binary data sent")
            inputs[name] = array_from_raw(name, datatype, shape, binary[offset : offset + size])
            offset += size
        elif "data" in item:
            inputs[name] = array_from_list(name, datatype, shape, item["data"])
        else:
            raise InvalidInputError(f"input {name!r} has neither 'data' nor binary_data_size")
    return inputs, offset


def _input_header(item: dict[str, Any], index: int) -> tuple[str, str, list[int]]:
    name, datatype, shape = item.get("name"), item.get("datatype"), item.get("shape")
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"inputs[{index}] needs a string 'name'")
    if not isinstance(datatype, str):
        raise InvalidInputError(f"input {name!r} needs a string 'datatype'")
    if not isinstance(shape, list):
        raise InvalidInputError(f"input {name!r} needs a 'shape' list")
    return name, datatype, shape


def _decode_outputs(items: Any, parameters: dict[str, Any]) -> list[RequestedOutput]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise InvalidInputError("'outputs' must be a list")
    outputs = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise InvalidInputError(f"outputs[{index}] needs a string 'name'")
        params = _dict(item.get("parameters"), f"outputs[{index}].parameters")
        binary = params.get("binary_data")
        binary_flag = bool(binary) if binary is not None else None
        shm = region_ref(params, f"output {item['name']!r}")
        outputs.append(RequestedOutput(item["name"], binary_flag, _class_count(params.get("classification")), shm))
    return outputs


def _class_count(value: Any) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_CLASS_COUNT:
        raise InvalidInputError(f"output parameter 'classification' must be an integer in 0..{MAX_CLASS_COUNT}")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(f"'{where}' must be an object")
    return value
