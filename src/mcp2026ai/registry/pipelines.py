"""Registering a pipeline: its spec checked whole, then its steps and itself stored.

Everything is checked before anything is stored, so a refused pipeline leaves the registry as it
was: the graph (ir/pipeline_spec.py), every Python step (read once from the user's file; syntax,
imports, declared ``requires`` and the class, by the checker the caller passes: the runtime's),
every model step (a file beside the spec imported, a registered model resolved), and the tensors
between steps (each model step's input and output names against its model, and the datatype a
producer gives against the one a model step or the pipeline's outputs declare).

Then each model file is registered as ``<pipeline>.<step>`` (an identical version reused), each
Python step's source stored by its sha256 (suffix ``.py``), and the pipeline itself catalogued with
format ``pipeline``: its digest is its stored spec's (:class:`StoredPipeline`, which names every
step's digest or model version), so signing the pipeline version signs its steps' code too.
"""

from __future__ import annotations

import ast
import importlib.util
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcp2026ai.contract import InferenceContract, parse_contract
from mcp2026ai.errors import MCPError, NotFoundError
from mcp2026ai.ir import import_model
from mcp2026ai.ir.pipeline_spec import (
    PIPELINE_FORMAT,
    PIPELINE_SPEC_SUFFIX,
    ModelRef,
    PipelineSpec,
    PipelineSpecError,
    PipelineStep,
    StoredPipeline,
    load_spec,
    producers,
)
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion, Stage
from mcp2026ai.registry.store import sha256_of
from mcp2026ai.security.paths import confined_path

SPEC_SUFFIX = PIPELINE_SPEC_SUFFIX
PYTHON_SUFFIX = ".py"
MAX_PYTHON_STEP_BYTES = 4 * 1024 * 1024

SourceCheck = Callable[[bytes, str], None]
"""Checks a Python step's source (syntax, importable modules), raising ModelImportError naming file and
line: :func:`mcp2026ai.runtime.python_code.check_source` (the registry cannot import the runtime)."""


@dataclass
class _Checked:
    """What the checks found, ready to store."""

    model_files: dict[str, Path] = field(default_factory=dict)
    """step -> model file beside the spec."""
    models: dict[str, ModelRef] = field(default_factory=dict)
    """step -> an already registered model."""
    signatures: dict[str, Signature] = field(default_factory=dict)
    python: dict[str, bytes] = field(default_factory=dict)
    """step -> its checked source bytes (stored as they are: never re-read)."""


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
) -> ModelVersion:
    """Register an already parsed spec (a Triton ensemble's has no folder: its steps name models)."""
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
    )


def check_spec(
    registry: ModelRegistry, spec: PipelineSpec, name: str, source: str, folder: Path | None, check: SourceCheck
) -> _Checked:
    checked = _Checked()
    for step in spec.steps:
        where = f"{source}: step {step.name!r}"
        if step.python is not None:
            checked.python[step.name] = _check_python(
                step, _file(folder, step.python, f"{where}: python"), where, check
            )
        else:
            _check_model(registry, step, folder, where, checked)
    _check_tensors(spec, source, checked.signatures)
    return checked


def _file(folder: Path | None, relative: str, where: str) -> Path:
    if folder is None:
        raise PipelineSpecError(f"{where}: {relative!r}: a file needs a spec folder")
    path = confined_path(folder, relative, where)
    if not path.is_file():
        raise PipelineSpecError(f"{where}: {relative!r}: no such file beside the spec")
    return path


def _check_python(step: PipelineStep, path: Path, where: str, check: SourceCheck) -> bytes:
    if path.stat().st_size > MAX_PYTHON_STEP_BYTES:
        raise PipelineSpecError(f"{where}: {path.name}: larger than {MAX_PYTHON_STEP_BYTES} bytes")
    source = path.read_bytes()
    check(source, str(path))
    missing = [module for module in step.requires if importlib.util.find_spec(module.split(".")[0]) is None]
    if missing:
        raise PipelineSpecError(f"{where}: requires modules not installed here: {', '.join(missing)}")
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    if step.class_name not in classes:
        raise PipelineSpecError(f"{where}: {path.name} defines no class {step.class_name!r} at top level")
    return source


def _check_model(registry: ModelRegistry, step: PipelineStep, folder: Path | None, where: str, out: _Checked) -> None:
    if isinstance(step.model, ModelRef):
        try:
            record = registry.resolve(step.model.name, step.model.version)
        except NotFoundError:
            shown = step.model.name + (f" version {step.model.version}" if step.model.version else "")
            raise PipelineSpecError(f"{where}: model {shown!r} is not registered") from None
        if record.format == PIPELINE_FORMAT:
            raise PipelineSpecError(f"{where}: model {record.ref!r} is a pipeline; a step runs a model")
        out.models[step.name] = step.model
        out.signatures[step.name] = record.signature
        return
    path = _file(folder, str(step.model), f"{where}: model")
    (registry.home / "tmp").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pipeline-check-", dir=registry.home / "tmp") as workdir:
        try:
            out.signatures[step.name] = import_model(path, Path(workdir)).signature
        except MCPError as exc:
            raise PipelineSpecError(f"{where}: {exc}") from None
    out.model_files[step.name] = path


def _check_tensors(spec: PipelineSpec, source: str, signatures: dict[str, Signature]) -> None:
    """Each model step's tensor names against its model, and each known producer's datatype against
    what the model step (or the pipeline's outputs) declares."""
    made_by = producers(spec, source)
    datatypes = {tensor.name: (tensor.datatype, "the pipeline's inputs") for tensor in spec.inputs}
    for step in spec.steps:
        signature = signatures.get(step.name)
        if signature is None:
            continue
        where = f"{source}: step {step.name!r}"
        _check_names(where, "input", set(step.inputs), {spec.name for spec in signature.inputs}, required=True)
        _check_names(where, "output", set(step.outputs), {spec.name for spec in signature.outputs}, required=False)
        for own, tensor in step.outputs.items():
            produced = signature.output(own)
            if produced is not None:
                datatypes[tensor] = (produced.datatype, f"step {step.name!r} output {own!r}")
    for step in spec.steps:
        signature = signatures.get(step.name)
        for own, tensor in step.inputs.items():
            wanted = signature.input(own) if signature else None
            if wanted is None or tensor not in datatypes:
                continue
            given, by = datatypes[tensor]
            if given != wanted.datatype:
                raise PipelineSpecError(
                    f"{source}: step {step.name!r}: input {own!r} (tensor {tensor!r}) takes {wanted.datatype}, "
                    f"but {by} gives {given}"
                )
    for output in spec.outputs:
        if output.name in datatypes and made_by[output.name] and datatypes[output.name][0] != output.datatype:
            given, by = datatypes[output.name]
            raise PipelineSpecError(
                f"{source}: outputs: tensor {output.name!r} is declared {output.datatype}, but {by} gives {given}"
            )


def _check_names(where: str, kind: str, given: set[str], known: set[str], *, required: bool) -> None:
    unknown = sorted(given - known)
    if unknown:
        raise PipelineSpecError(f"{where}: {kind} {unknown[0]!r} is not one of the model's {kind}s {sorted(known)}")
    absent = sorted(known - given) if required else []
    if absent:
        raise PipelineSpecError(f"{where}: the model's {kind} {absent[0]!r} is not wired (inputs: {sorted(given)})")


def _store_steps(
    registry: ModelRegistry,
    spec: PipelineSpec,
    name: str,
    checked: _Checked,
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
