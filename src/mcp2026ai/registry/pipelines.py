"""Registering a pipeline: its spec checked whole, then its steps and itself stored.

Everything is checked before anything is stored, so a refused pipeline leaves the registry as it
was: the graph (ir/pipeline_spec.py), then its steps and the tensors between them
(registry/pipeline_checks.py).

Then each model file is registered as ``<pipeline>.<step>`` (an identical version reused), each
Python step's source stored by its sha256 (suffix ``.py``), and the pipeline itself catalogued with
format ``pipeline``: its digest is its stored spec's (:class:`StoredPipeline`, which names every
step's digest or model version), so signing the pipeline version signs its steps' code too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from mcp2026ai.contract import InferenceContract, parse_contract
from mcp2026ai.ir.pipeline_spec import (
    EXAMPLE_SUFFIX,
    PIPELINE_FORMAT,
    PIPELINE_SPEC_SUFFIX,
    ModelRef,
    PipelineSpec,
    PipelineSpecError,
    StoredPipeline,
    load_spec,
)
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.pipeline_checks import CheckedSpec, SourceCheck, check_spec
from mcp2026ai.registry.records import ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.store import sha256_of

SPEC_SUFFIX = PIPELINE_SPEC_SUFFIX
PYTHON_SUFFIX = ".py"


def register_pipeline(
    registry: ModelRegistry,
    spec_path: Path,
    check_source: SourceCheck,
    *,
    name: str | None = None,
    version: str | None = None,
    stage: Stage = Stage.DEV,
    actor: str | None = None,
) -> ModelVersion:
    """Check and register the pipeline spec at ``spec_path`` (its steps included) under ``name``
    (default: the spec's own ``name``)."""
    spec = load_spec(spec_path)
    chosen = name or spec.name
    if not chosen:
        raise PipelineSpecError(f"{spec_path}: name: give the pipeline a name (in the spec or --name)")
    return register_spec(
        registry,
        spec,
        chosen,
        str(spec_path),
        spec_path.parent,
        check_source,
        version=version,
        stage=stage,
        actor=actor,
    )


def register_spec(
    registry: ModelRegistry,
    spec: PipelineSpec,
    name: str,
    source: str,
    folder: Path | None,
    check_source: SourceCheck,
    *,
    version: str | None = None,
    stage: Stage = Stage.DEV,
    actor: str | None = None,
    number: int | None = None,
    preprocessing: Preprocessing | None = None,
) -> ModelVersion:
    """Register an already parsed spec (a Triton ensemble's has no folder: its steps name models;
    ``preprocessing``: its outputs' labels, from the ensemble's ``label_filename``)."""
    contract = parse_contract(spec.contract, f"{source}: contract") if spec.contract is not None else None
    checked = check_spec(registry, spec, name, source, folder, check_source)
    stored = _store_steps(registry, spec, name, checked, source, contract)
    digest = _store_spec(registry, stored)
    return registry.register_stored(
        name,
        digest,
        PIPELINE_FORMAT,
        spec.signature,
        contract=contract,
        version=version,
        stage=stage,
        actor=actor,
        audit_details={"source": source, "steps": [step.name for step in spec.steps]},
        number=number,
        preprocessing=preprocessing,
    )


def _store_steps(
    registry: ModelRegistry,
    spec: PipelineSpec,
    name: str,
    checked: CheckedSpec,
    source: str,
    contract: InferenceContract | None,
) -> StoredPipeline:
    """Store each step; a model file is registered with the pipeline's contract (its SLA class and
    batching: the queue the step's requests wait in), an identical version reused."""
    steps = []
    for step in spec.steps:
        if step.name in checked.python:
            digest = _store_bytes(registry, checked.python[step.name], PYTHON_SUFFIX)
            steps.append(step.model_copy(update={"python": digest}))
        elif step.name in checked.model_files:
            record = _register_step_model(registry, f"{name}.{step.name}", checked.model_files[step.name], contract)
            steps.append(step.model_copy(update={"model": ModelRef(name=record.name, version=record.version)}))
        else:
            steps.append(step)
    document = spec.model_dump(by_alias=True, exclude_none=True) | {"name": name, "spec_source": source}
    document["steps"] = [step.model_dump(by_alias=True, exclude_none=True) for step in steps]
    if checked.examples:
        document["examples"] = {
            tensor: _store_bytes(registry, data, EXAMPLE_SUFFIX) for tensor, data in checked.examples.items()
        }
    return StoredPipeline.model_validate(document)


def _register_step_model(
    registry: ModelRegistry, name: str, path: Path, contract: InferenceContract | None
) -> ModelVersion:
    digest = sha256_of(path)
    for record in registry.catalog.versions(name):
        if record.digest == digest and record.contract == contract:
            return record
    return registry.register(name, path, contract=contract, audit_details={"pipeline": name.rsplit(".", 1)[0]})


def _store_bytes(registry: ModelRegistry, data: bytes, suffix: str) -> str:
    (registry.home / "tmp").mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=registry.home / "tmp", suffix=suffix, delete=False) as handle:
        handle.write(data)
        written = Path(handle.name)
    try:
        return registry.store.put(written, suffix)
    finally:
        written.unlink(missing_ok=True)


def _store_spec(registry: ModelRegistry, stored: StoredPipeline) -> str:
    text = stored.model_dump_json(by_alias=True, exclude_none=True)
    return _store_bytes(registry, text.encode(), SPEC_SUFFIX)


def read_pipeline(registry: ModelRegistry, record: ModelVersion, data: bytes | None = None) -> StoredPipeline:
    """A pipeline version's stored spec, checked against its digest as it is read (or ``data``: its
    bytes already read and verified, under ``--require-signed``)."""
    return StoredPipeline.model_validate_json(data if data is not None else registry.artifact_bytes(record))


def python_step_source(registry: ModelRegistry, digest: str) -> bytes:
    """A Python step's source, read and checked against its digest (the only way it is opened)."""
    return registry.store.read(digest, PYTHON_SUFFIX)


def pipeline_examples(registry: ModelRegistry, record: ModelVersion) -> dict[str, bytes]:
    """The example files the spec named (input -> bytes, each checked against its digest as it is read)."""
    examples = read_pipeline(registry, record).examples or {}
    return {name: registry.store.read(digest, EXAMPLE_SUFFIX) for name, digest in examples.items()}


def pipeline_model_steps(registry: ModelRegistry, record: ModelVersion) -> list[tuple[str, ModelVersion]]:
    """(step, the version it runs) for each model step of a pipeline version (a step naming no version:
    its model's default now)."""
    stored = read_pipeline(registry, record)
    return [
        (step.name, registry.resolve(step.model.name, step.model.version))
        for step in stored.steps
        if isinstance(step.model, ModelRef)
    ]


def is_pipeline(record: ModelVersion) -> bool:
    return record.format == PIPELINE_FORMAT
