"""Registered models written out as a Triton model repository (``mcp model export --format triton``).

Each model gets ``<out>/<name>/config.pbtxt`` and one directory per non-archived version, numbered by
:func:`~mcp2026ai.registry.versioning.triton_number` (``2.1.0-rc1`` -> 20010001, ``2.1.0`` ->
20010099), holding ``model.onnx`` (a Triton python model: ``model.py``, its config keeping ``backend: "python"``).
The config is the default version's: the one it was imported
with when it came from a Triton repository (its ``reshape`` dropped, since the stored ONNX already
has the clients' shapes), else the configuration ``/config`` reports, from the contract and the
signature. ``version_policy`` serves the registry's default version: ``latest`` when it is the
highest, else ``specific``. Every config is parsed back with Triton's ``model_config.proto``
before the command succeeds; nothing is written when a model cannot be exported.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError
from mcp2026ai.inference import DynamicBatching, ModelDescription
from mcp2026ai.protocol.triton import model_config
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.pipelines import is_pipeline
from mcp2026ai.registry.triton_import import stored_config
from mcp2026ai.registry.triton_python import PYTHON_FORMAT
from mcp2026ai.registry.triton_repository import (
    CONFIG_FILE,
    DEFAULT_MODEL_FILE,
    PYTHON_BACKEND,
    PYTHON_MODEL_FILE,
    read_config,
    write_config,
)
from mcp2026ai.registry.versioning import triton_number
from mcp2026ai.security.paths import confined_path

ONNX_PLATFORM = "onnxruntime_onnx"


@dataclass(frozen=True)
class ExportedModel:
    name: str
    versions: dict[int, ModelVersion]
    config: mc.ModelConfig


def plan_export(registry: ModelRegistry, name: str, out: Path) -> ExportedModel:
    """What exporting ``name`` writes; refused (nothing written) when it cannot be exported."""
    default = registry.resolve(name)
    if is_llm_format(default.format):
        raise InvalidArgumentError(f"{name}: a language model has no Triton ONNX layout; export tensor models")
    if is_pipeline(default):
        raise InvalidArgumentError(
            f"{name}: a pipeline is not exported as a Triton ensemble yet; export its step models by name"
        )
    if (out / name).exists():
        raise AlreadyExistsError(f"{out / name}: already exists; export into an empty directory")
    records = [record for record in registry.versions(name) if record.stage != Stage.ARCHIVED]
    if len({record.format == PYTHON_FORMAT for record in records}) > 1:
        raise InvalidArgumentError(f"{name}: its versions mix python and ONNX models; one config cannot serve both")
    versions = {triton_number(record.version): record for record in records}
    config = _config(registry, default)
    highest = max(versions)
    if triton_number(default.version) == highest:
        config.version_policy.latest.num_versions = 1
    else:
        config.version_policy.specific.versions[:] = [triton_number(default.version)]
    return ExportedModel(name, dict(sorted(versions.items())), config)


def write_export(registry: ModelRegistry, exported: ExportedModel, out: Path) -> Path:
    """Write one model's directory; the config is read back with Triton's message to prove it parses."""
    directory = out / exported.name
    directory.mkdir(parents=True)
    for number, record in exported.versions.items():
        (directory / str(number)).mkdir()
        filename = PYTHON_MODEL_FILE if record.format == PYTHON_FORMAT else DEFAULT_MODEL_FILE
        (directory / str(number) / filename).write_bytes(registry.artifact_bytes(record))
    labelled = next((output for output in exported.config.output if output.label_filename), None)
    default = registry.resolve(exported.name)
    if labelled is not None and default.preprocessing is not None:
        target = confined_path(directory, labelled.label_filename, f"{exported.name}: stored config: label_filename")
        target.write_text("\n".join(default.preprocessing.labels) + "\n")
    read_config(write_config(directory / CONFIG_FILE, exported.config))
    return directory


def _config(registry: ModelRegistry, record: ModelVersion) -> mc.ModelConfig:
    stored = stored_config(registry, record)
    if stored is not None:
        for tensor in [*stored.input, *stored.output]:
            tensor.ClearField("reshape")
        stored.ClearField("version_policy")
        stored.ClearField("default_model_filename")
        python = record.format == PYTHON_FORMAT  # a Triton python model stays one (its model.py as it is)
        stored.platform, stored.backend = ("", PYTHON_BACKEND) if python else (ONNX_PLATFORM, "")
        return stored
    document = model_config(_description(record))
    document.pop("parameters", None)  # the plan of a running server; nothing to export
    document.pop("backend", None)
    return json_format.ParseDict(document, mc.ModelConfig())


def _description(record: ModelVersion) -> ModelDescription:
    contract, signature, prep = record.contract, record.signature, record.preprocessing
    batched = signature.batchable
    max_batch = (contract.batching.max_batch_size if contract is not None else 32) if batched else 0
    dynamic = None
    if batched and contract is not None:
        dynamic = DynamicBatching(contract.batching.max_queue_delay_ms, tuple(contract.batching.preferred_batch_sizes))
    return ModelDescription(
        name=record.name,
        versions=(record.version,),
        platform=ONNX_PLATFORM,
        signature=signature,
        max_batch_size=max_batch,
        plan="",
        dynamic_batching=dynamic,
        sequence=contract.sequence if contract is not None else None,
        image_layout=prep.layout if prep is not None else None,
        labels=tuple(prep.labels) if prep is not None else (),
    )


def export_repository(registry: ModelRegistry, names: list[str], out: Path) -> list[Path]:
    """Export ``names`` under ``out`` (every model checked before anything is written)."""
    planned = [plan_export(registry, name, out) for name in names]
    out.mkdir(parents=True, exist_ok=True)
    return [write_export(registry, exported, out) for exported in planned]
