"""A Triton ``platform: "ensemble"`` config as a pipeline spec, and its registration.

What maps to what (docs/pipelines.md, "Triton ensembles"):

- the ensemble's ``input`` / ``output`` -> the pipeline's inputs and outputs (``TYPE_STRING`` ->
  BYTES; with ``max_batch_size`` > 0 a leading -1 batch dimension, as Triton shows it);
- each ``ensemble_scheduling.step`` -> a model step naming the repository's model ``model_name``
  (``model_version`` -1: whatever version that model serves by default, else its integer alias),
  ``input_map`` (the model's input -> the ensemble tensor) and ``output_map`` (the model's output ->
  the ensemble tensor) as the step's ``inputs`` and ``outputs``, unchanged;
- ``max_batch_size`` -> the contract's batching, as for any Triton model.

Steps are named after their model (``_2``, ``_3`` ... for a model used again). An ensemble is
registered after the repository's other models, so that its steps resolve against them and get
checked as any pipeline's are (names, datatypes, cycles).
"""

from __future__ import annotations

import re
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.errors import ModelImportError, NotFoundError
from mcp2026ai.ir.pipeline_spec import PIPELINE_FORMAT, ModelRef, PipelineSpec, parse_spec
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.pipelines import register_spec
from mcp2026ai.registry.records import ModelVersion, Stage
from mcp2026ai.registry.triton_config import contract_from_config, preprocessing_from_config, v2_datatype
from mcp2026ai.registry.triton_repository import ENSEMBLE_PLATFORM, RepositoryModel, TritonConfigError
from mcp2026ai.registry.versioning import version_of_triton

_STEP_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")


def is_ensemble(config: mc.ModelConfig) -> bool:
    return bool(config.platform == ENSEMBLE_PLATFORM)


def _tensor(tensor: mc.ModelInput | mc.ModelOutput, batched: bool) -> dict[str, object]:
    dims = [int(dim) for dim in tensor.dims]
    return {"name": tensor.name, "datatype": v2_datatype(tensor.data_type), "shape": [-1, *dims] if batched else dims}


def ensemble_spec(config: mc.ModelConfig, source: Path) -> PipelineSpec:
    """The pipeline spec of an ensemble config (checked as a spec: graph, names; not yet its models)."""
    steps = list(config.ensemble_scheduling.step)
    if not steps:
        raise TritonConfigError(f"{source}: ensemble_scheduling.step: an ensemble needs at least one step")
    batched = config.max_batch_size > 0
    taken: dict[str, int] = {}
    document_steps = []
    for index, step in enumerate(steps):
        if not step.model_name:
            raise TritonConfigError(f"{source}: ensemble_scheduling.step[{index}]: model_name must be given")
        base = _STEP_CHARACTERS.sub("_", step.model_name)[:60] or "step"
        taken[base] = taken.get(base, 0) + 1
        name = base if taken[base] == 1 else f"{base}_{taken[base]}"
        version = None if step.model_version in (-1, 0) else str(step.model_version)
        document_steps.append(
            {
                "name": name,
                "model": {"name": step.model_name, "version": version},
                "inputs": dict(step.input_map),
                "outputs": dict(step.output_map),
            }
        )
    document = {
        "kind": "pipeline",
        "name": config.name,
        "inputs": [_tensor(tensor, batched) for tensor in config.input],
        "outputs": [_tensor(tensor, batched) for tensor in config.output],
        "contract": contract_from_config(config, source).model_dump(mode="json"),
        "steps": document_steps,
    }
    return parse_spec(document, str(source))


def _no_python(source: bytes, label: str) -> None:
    raise ModelImportError(f"{label}: an ensemble step runs a model, not Python code")


def check_ensemble_steps(model: RepositoryModel, known: set[str]) -> PipelineSpec:
    """The ensemble's spec, refused when a step names a model neither the repository nor the registry has."""
    spec = ensemble_spec(model.config, model.config_path)
    for step in spec.steps:
        ref = step.model
        if isinstance(ref, ModelRef) and ref.name not in known:
            raise TritonConfigError(
                f"{model.config_path}: ensemble_scheduling step {step.name!r}: model_name {ref.name!r} is not a "
                "model of this repository"
            )
    return spec


def register_ensemble(registry: ModelRegistry, model: RepositoryModel, stage: Stage = Stage.DEV) -> list[ModelVersion]:
    """Register (or reuse) an ensemble of the repository as a pipeline; its steps must be registered."""
    spec = ensemble_spec(model.config, model.config_path)
    labels = preprocessing_from_config(model.config, model.directory)  # its outputs' label_filename
    records = []
    for number in model.versions:
        version = version_of_triton(number)
        existing = _existing(registry, model.name, version)
        if existing is None:
            existing = register_spec(
                registry,
                spec,
                model.name,
                str(model.config_path),
                None,
                _no_python,
                version=version,
                stage=stage,
                number=number,
                preprocessing=labels,
            )
        records.append(existing)
    return records


def _existing(registry: ModelRegistry, name: str, version: str) -> ModelVersion | None:
    try:
        record = registry.catalog.get(name, version)
    except NotFoundError:
        return None
    if record.format != PIPELINE_FORMAT:
        raise TritonConfigError(f"model {name!r} already has version {version}, which is not an ensemble; remove it")
    return record
