"""The ``args`` Triton hands a Python model's ``initialize``: its config as JSON, and where it runs.

The JSON is the config.pbtxt as Triton serialises it (protobuf field names, enums by name, defaults
written out, 64-bit numbers as JSON numbers: Triton converts them, protobuf alone writes strings).
"""

from __future__ import annotations

import json
import re
from typing import Any

from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2 as mc

_INT64_KEYS = {
    "dims",
    "shape",
    "max_queue_delay_microseconds",
    "max_sequence_idle_microseconds",
    "default_timeout_microseconds",
    "versions",
}
_NUMBER = re.compile(r"^-?\d+$")


def config_dict(config: mc.ModelConfig) -> dict[str, Any]:
    """The config as Triton's Python backend sees it (``json.loads(args["model_config"])``)."""
    document = json_format.MessageToDict(
        config, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    fixed: dict[str, Any] = _numbers(document)
    fixed.setdefault("model_transaction_policy", {"decoupled": False})
    return fixed


def _numbers(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {name: _numbers(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [_numbers(item, key) for item in value]
    if key in _INT64_KEYS and isinstance(value, str) and _NUMBER.match(value):
        return int(value)
    return value


def initialize_args(config: mc.ModelConfig, *, version: int, repository: str = "", instance: int = 0) -> dict[str, str]:
    """Every key Triton passes (all strings): config, instance kind, name and device, repository, version,
    name."""
    return {
        "model_config": json.dumps(config_dict(config)),
        "model_instance_kind": "CPU",
        "model_instance_name": f"{config.name}_0_{instance}",
        "model_instance_device_id": "0",
        "model_repository": repository,
        "model_version": str(version),
        "model_name": config.name,
    }


def instance_count(config: mc.ModelConfig) -> int:
    """How many instances the ``instance_group`` entries ask for (a group without a count: one)."""
    return sum(group.count or 1 for group in config.instance_group) or 1


def is_decoupled(config: mc.ModelConfig) -> bool:
    return bool(config.model_transaction_policy.decoupled)
