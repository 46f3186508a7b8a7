"""Model control: a Triton model configuration given with ``load`` overrides how a model is served.

``POST /v2/repository/models/{m}/load`` with ``{"parameters": {"config": "<json>"}}`` (gRPC:
``RepositoryModelLoad`` with a ``config`` parameter) takes Triton's configuration fields that mean
something here: ``max_batch_size``, ``instance_group[].count`` (batches run at once) and
``dynamic_batching`` (queue delay, preferred sizes). They stay in force for the model until it is
unloaded, and ``/config`` reports them. An override that is not JSON, names another model, has an
unknown field or an out-of-range value is refused (400 / INVALID_ARGUMENT, in Triton's words:
"failed to load ...", which its model-control client checks) and nothing changes.

A version imported from a Triton repository carries its ``config.pbtxt``: :func:`override_from_triton`
reads the same fields from it, and a ``load`` override is applied on top.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import describe_validation_error
from mcp2026ai.scheduling.config import BatchingConfig

TRITON_FIELDS = {
    "name",
    "platform",
    "backend",
    "max_batch_size",
    "input",
    "output",
    "instance_group",
    "dynamic_batching",
    "version_policy",
    "parameters",
}


class ConfigOverride(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_batch_size: int | None = Field(None, ge=1, le=4096)
    batch_dim: bool | None = Field(None, description="False: Triton's max_batch_size 0, requests never merged.")
    instance_count: int | None = Field(None, ge=1, le=64)
    max_queue_delay_ms: float | None = Field(None, ge=0, le=10_000)
    preferred_batch_sizes: list[int] | None = None

    def merged(self, other: ConfigOverride) -> ConfigOverride:
        """This override with what ``other`` sets on top."""
        return ConfigOverride(**{**self.model_dump(exclude_none=True), **other.model_dump(exclude_none=True)})

    def apply(self, config: BatchingConfig) -> BatchingConfig:
        """``config`` with what this override sets (validated again as a whole)."""
        updates: dict[str, Any] = {
            "max_batch_size": self.max_batch_size,
            "max_concurrent_batches": self.instance_count,
            "max_queue_delay_ms": self.max_queue_delay_ms,
            "preferred_batch_sizes": self.preferred_batch_sizes,
        }
        merged = {**config.model_dump(), **{key: value for key, value in updates.items() if value is not None}}
        if self.max_batch_size is not None:
            merged["batch_rows"] = None  # the configured max batch replaces the plan's cap
        if self.batch_dim is False:  # the first dimension is the model's own, not a batch
            merged.update(batch_dim=False, batch_rows=None, preferred_batch_sizes=[], max_queue_delay_ms=0.0)
        if not merged["batch_dim"]:
            merged["max_batch_size"] = 1
        try:
            return BatchingConfig.model_validate(merged)
        except ValidationError as exc:
            raise InvalidArgumentError("failed to load: " + describe_validation_error(exc, "config")) from None


def parse_config_override(text: str, model: str) -> ConfigOverride:
    """A Triton configuration JSON given with ``load``, as the override it means here."""
    try:
        return _parse_config_override(text, model)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"failed to load '{model[:100]}': {exc}") from None


def override_from_triton(config: Any, model: str) -> ConfigOverride:
    """What a stored Triton ``ModelConfig`` (``model_config_pb2``) sets: max batch, instances and
    dynamic batching (none: no queue delay)."""
    document = json_format.MessageToDict(config, preserving_proto_field_name=True)
    wanted = {key: document[key] for key in ("max_batch_size", "instance_group", "dynamic_batching") if key in document}
    override = parse_config_override(json.dumps(wanted), model)
    if config.max_batch_size == 0:
        return override.model_copy(update={"batch_dim": False})
    if not config.HasField("dynamic_batching"):
        return override.model_copy(update={"max_queue_delay_ms": 0.0})
    return override


def with_stored_config(config: Any, model: str, given: ConfigOverride | None) -> ConfigOverride | None:
    """A version's stored Triton config (None: not imported from a repository), then ``given`` on top."""
    if config is None:
        return given
    stored = override_from_triton(config, model)
    return stored if given is None else stored.merged(given)


def _parse_config_override(text: str, model: str) -> ConfigOverride:
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise InvalidArgumentError(f"load config for {model!r} is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise InvalidArgumentError(f"load config for {model!r} must be a JSON object")
    unknown = sorted(set(document) - TRITON_FIELDS)
    if unknown:
        raise InvalidArgumentError(f"load config for {model!r}: unknown field {unknown[0][:100]!r}")
    if document.get("name", model) != model:
        raise InvalidArgumentError(f"load config names model {str(document['name'])[:100]!r}, not {model!r}")
    fields: dict[str, Any] = {}
    if "max_batch_size" in document:
        max_batch_size = _integer(document["max_batch_size"], "max_batch_size")
        if max_batch_size == 0:
            fields["batch_dim"] = False
        else:
            fields["max_batch_size"] = max_batch_size
    groups = document.get("instance_group")
    if groups is not None:
        if not isinstance(groups, list) or not all(isinstance(group, dict) for group in groups):
            raise InvalidArgumentError("load config: instance_group must be a list of objects")
        fields["instance_count"] = sum(_integer(group.get("count", 1), "instance_group.count") for group in groups)
    batching = document.get("dynamic_batching")
    if batching is not None:
        if not isinstance(batching, dict):
            raise InvalidArgumentError("load config: dynamic_batching must be an object")
        if "max_queue_delay_microseconds" in batching:
            micros = _integer(batching["max_queue_delay_microseconds"], "max_queue_delay_microseconds")
            fields["max_queue_delay_ms"] = micros / 1000
        if "preferred_batch_size" in batching:
            sizes = batching["preferred_batch_size"]
            if not isinstance(sizes, list):
                raise InvalidArgumentError("load config: preferred_batch_size must be a list of integers")
            fields["preferred_batch_sizes"] = [_integer(size, "preferred_batch_size") for size in sizes]
    try:
        return ConfigOverride(**fields)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_validation_error(exc, "load config")) from None


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidArgumentError(f"load config: {name} must be an integer, got {str(value)[:40]}")
    try:
        return int(value)
    except ValueError:
        raise InvalidArgumentError(f"load config: {name} must be an integer, got {str(value)[:40]!r}") from None
