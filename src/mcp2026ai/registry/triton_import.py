"""Registering a Triton model repository: each model's selected versions, its config as a contract.

Every model is checked whole before anything of it is stored (config, dims against each version's
ONNX, labels), so a refused model leaves the registry as it was. A version directory ``N`` becomes
the semantic version :func:`~mcp2026ai.registry.versioning.version_of_triton` gives, with integer
alias ``N`` (what Triton's clients ask for), and the config text is kept with it (annotation
:data:`CONFIG_ANNOTATION`) for serving and export. Importing the same repository again reuses
identical versions; a version whose model or contract changed is refused (remove it first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, MCPError, NotFoundError
from mcp2026ai.ir import import_model
from mcp2026ai.ir.reshape import wrap_reshapes
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.store import sha256_of
from mcp2026ai.registry.triton_config import (
    check_config,
    check_reshapes,
    check_signature,
    contract_from_config,
    preprocessing_from_config,
    reshapes,
    unapplied_notes,
)
from mcp2026ai.registry.triton_ensemble import check_ensemble_steps, is_ensemble, register_ensemble
from mcp2026ai.registry.triton_python import (
    PYTHON_FORMAT,
    SourceCheck,
    check_python_config,
    check_python_version,
    python_signature,
)
from mcp2026ai.registry.triton_repository import (
    RepositoryFailure,
    RepositoryModel,
    TritonConfigError,
    is_python_model,
    scan_repository,
)
from mcp2026ai.registry.versioning import version_of_triton

CONFIG_ANNOTATION = "triton.config"


@dataclass(frozen=True)
class PreparedVersion:
    number: int
    version: str
    onnx: Path
    """The file to register: the version's model, wrapped when the config reshapes a tensor (a python
    model's ``model.py``, stored as it is)."""
    source_format: str | None = None
    """Set for a file registered as it is (not imported): its format (``triton_python``)."""
    signature: Signature | None = None
    """The signature of a file registered as it is (its config's tensors)."""


@dataclass(frozen=True)
class PreparedModel:
    """A repository model checked whole and ready to register."""

    model: RepositoryModel
    contract: InferenceContract
    preprocessing: Preprocessing | None
    versions: list[PreparedVersion]
    notes: list[str]


@dataclass
class RepositoryImport:
    records: dict[str, list[ModelVersion]] = field(default_factory=dict)
    failures: list[RepositoryFailure] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)


def prepare(model: RepositoryModel, workdir: Path, python_check: SourceCheck | None = None) -> PreparedModel:
    """Check a model's config and every selected version against it; stores nothing. ``python_check``
    checks a python model's source (registry/triton_python.py)."""
    config, source = model.config, model.config_path
    check_config(config, source)
    contract = contract_from_config(config, source)
    if is_python_model(config):
        return _prepare_python(model, contract, python_check)
    preprocessing = preprocessing_from_config(config, model.directory)
    inputs, outputs = reshapes(config)
    versions = []
    for number, path in model.versions.items():
        onnx = path
        if inputs or outputs:
            check_reshapes(config, import_model(path, workdir).signature, source)
            workdir.mkdir(parents=True, exist_ok=True)
            try:
                onnx = wrap_reshapes(path, workdir / f"{model.name}-{number}.onnx", inputs, outputs)
            except Exception as exc:  # onnx raises DecodeError, ValueError, ...  # noqa: BLE001
                raise TritonConfigError(f"{path}: cannot apply the config's reshape ({exc})") from None
        signature = import_model(onnx, workdir).signature
        check_signature(config, signature, source)
        versions.append(PreparedVersion(number, _semantic(number, path), onnx))
    return PreparedModel(model, contract, preprocessing, versions, unapplied_notes(config))


def _prepare_python(model: RepositoryModel, contract: InferenceContract, check: SourceCheck | None) -> PreparedModel:
    config, source = model.config, model.config_path
    check_python_config(config, source)
    signature = python_signature(config, source)
    versions = []
    for number, path in model.versions.items():
        check_python_version(path, check)
        versions.append(PreparedVersion(number, _semantic(number, path), path, PYTHON_FORMAT, signature))
    return PreparedModel(model, contract, None, versions, unapplied_notes(config))


def _semantic(number: int, path: Path) -> str:
    try:
        return version_of_triton(number)
    except InvalidArgumentError as exc:
        raise TritonConfigError(f"{path.parent}: {exc}") from None


def register_prepared(registry: ModelRegistry, prepared: PreparedModel, stage: Stage = Stage.DEV) -> list[ModelVersion]:
    """Register (or reuse) every version of a prepared model, with its config kept beside it."""
    text = text_format.MessageToString(prepared.model.config)
    records = []
    for version in prepared.versions:
        record = _existing(registry, prepared, version)
        if record is None:
            record = registry.register(
                prepared.model.name,
                version.onnx,
                contract=prepared.contract,
                version=version.version,
                number=version.number,
                stage=stage,
                preprocessing=prepared.preprocessing,
                audit_details={"triton_repository": str(prepared.model.directory)},
                signature=version.signature,
                source_format=version.source_format,
            )
        if stored_config_text(registry, record) != text:
            now = datetime.now(UTC)
            registry.catalog.annotate(record.name, record.version, CONFIG_ANNOTATION, {"pbtxt": text}, now)
        records.append(record)
    return records


def _existing(registry: ModelRegistry, prepared: PreparedModel, version: PreparedVersion) -> ModelVersion | None:
    """The registered version this one already is, None when there is none; refused when it differs."""
    name = prepared.model.name
    try:
        record = registry.catalog.get(name, version.version)
    except NotFoundError:
        taken = _by_number(registry, name, version.number)
        if taken is not None:
            raise AlreadyExistsError(
                f"{prepared.model.directory / str(version.number)}: model {name!r} already has integer alias "
                f"{version.number} (version {taken.version}); remove it first (mcp model rm)"
            ) from None
        return None
    same_contract = record.contract is not None and record.contract.model_dump() == prepared.contract.model_dump()
    if record.digest == sha256_of(version.onnx) and record.number == version.number and same_contract:
        return record
    raise AlreadyExistsError(
        f"{prepared.model.directory / str(version.number)}: model {name!r} already has version {record.version} "
        "with another model file or config; remove it first (mcp model rm)"
    )


def _by_number(registry: ModelRegistry, name: str, number: int) -> ModelVersion | None:
    try:
        return registry.catalog.get_by_number(name, number)
    except NotFoundError:
        return None


def stored_config_text(registry: ModelRegistry, record: ModelVersion) -> str | None:
    rows = registry.catalog.annotations(record.name, CONFIG_ANNOTATION, record.version)
    return str(rows[-1][2]["pbtxt"]) if rows else None


def stored_config(registry: ModelRegistry, record: ModelVersion) -> mc.ModelConfig | None:
    """The Triton config a version was imported with (None when it was not imported from one)."""
    text = stored_config_text(registry, record)
    return text_format.Parse(text, mc.ModelConfig()) if text is not None else None


def import_repository(
    registry: ModelRegistry,
    root: Path,
    workdir: Path,
    *,
    all_or_nothing: bool = True,
    python_check: SourceCheck | None = None,
) -> RepositoryImport:
    """Register every model of the repository at ``root``. ``all_or_nothing``: the first refused model
    is raised before anything is registered; otherwise refused models are listed in ``failures``
    and the others registered. ``python_check`` checks each python model's source first."""
    models, failures = scan_repository(root)
    if failures and all_or_nothing:
        raise TritonConfigError(failures[0].reason)
    outcome = RepositoryImport(failures=list(failures))
    ensembles = [model for model in models if is_ensemble(model.config)]
    models = [model for model in models if not is_ensemble(model.config)]
    known = {model.name for model in models} | set(registry.model_names())
    ensembles = _checked_ensembles(ensembles, known, outcome, all_or_nothing)
    prepared = []
    for model in models:
        try:
            prepared.append(prepare(model, workdir, python_check))
        except MCPError as exc:
            if all_or_nothing:
                raise
            outcome.failures.append(RepositoryFailure(model.name, str(exc)))
    if all_or_nothing:  # a version registered differently refuses the whole import before any change
        for ready in prepared:
            for version in ready.versions:
                _existing(registry, ready, version)
    for ready in prepared:
        try:
            outcome.records[ready.model.name] = register_prepared(registry, ready)
            outcome.notes[ready.model.name] = ready.notes
        except MCPError as exc:
            if all_or_nothing:
                raise
            outcome.failures.append(RepositoryFailure(ready.model.name, str(exc)))
    for ensemble in ensembles:  # after the models their steps name
        try:
            outcome.records[ensemble.name] = register_ensemble(registry, ensemble)
        except MCPError as exc:
            if all_or_nothing:
                raise
            outcome.failures.append(RepositoryFailure(ensemble.name, str(exc)))
    return outcome


def _checked_ensembles(
    ensembles: list[RepositoryModel], known: set[str], outcome: RepositoryImport, all_or_nothing: bool
) -> list[RepositoryModel]:
    """The ensembles whose config reads as a pipeline over known models (refused ones are failures)."""
    checked = []
    for ensemble in ensembles:
        try:
            check_ensemble_steps(ensemble, known)
            checked.append(ensemble)
        except MCPError as exc:
            if all_or_nothing:
                raise
            outcome.failures.append(RepositoryFailure(ensemble.name, str(exc)))
    return checked
