"""The checks a pipeline spec passes before anything of it is registered (registry/pipelines.py).

- every Python step: its file beside the spec (confined to the spec's folder, at most
  :data:`MAX_PYTHON_STEP_BYTES`), read once; syntax and importable modules by the checker the caller
  passes (the runtime's: the registry cannot import it), each declared ``requires`` importable, the
  class defined at top level (nothing of the code runs);
- every model step: a file beside the spec imported (its signature), or a registered model resolved
  (not a pipeline);
- the tensors between steps: each model step's input and output names against its model (every
  model input wired), and the datatype a producer gives (the pipeline's inputs, a model step's
  output) against the one a model step's input or the pipeline's outputs declare.
"""

from __future__ import annotations

import ast
import importlib.util
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mcp2026ai.errors import MCPError, NotFoundError
from mcp2026ai.ir import import_model
from mcp2026ai.ir.pipeline_spec import (
    PIPELINE_FORMAT,
    ModelRef,
    PipelineSpec,
    PipelineSpecError,
    PipelineStep,
    producers,
)
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.security.paths import confined_path

MAX_PYTHON_STEP_BYTES = 4 * 1024 * 1024
MAX_EXAMPLE_BYTES = 16 * 1024 * 1024

SourceCheck = Callable[[bytes, str], None]
"""Checks a Python step's source (syntax, importable modules), raising ModelImportError naming file and
line: :func:`mcp2026ai.runtime.python_code.check_python_source` (the registry cannot import the runtime)."""


@dataclass
class CheckedSpec:
    """What the checks found, ready to store."""

    model_files: dict[str, Path] = field(default_factory=dict)
    """step -> model file beside the spec."""
    models: dict[str, ModelRef] = field(default_factory=dict)
    """step -> an already registered model."""
    signatures: dict[str, Signature] = field(default_factory=dict)
    python: dict[str, bytes] = field(default_factory=dict)
    """step -> its checked source bytes (stored as they are: never re-read)."""
    examples: dict[str, bytes] = field(default_factory=dict)
    """pipeline input -> its example file's bytes (stored as they are)."""


def check_spec(
    registry: ModelRegistry, spec: PipelineSpec, name: str, source: str, folder: Path | None, check: SourceCheck
) -> CheckedSpec:
    checked = CheckedSpec()
    for step in spec.steps:
        where = f"{source}: step {step.name!r}"
        if step.python is not None:
            checked.python[step.name] = _check_python(
                step, _file(folder, step.python, f"{where}: python"), where, check
            )
        else:
            _check_model(registry, step, folder, where, checked)
    _check_tensors(spec, source, checked.signatures)
    checked.examples = _read_examples(spec, source, folder)
    return checked


def _read_examples(spec: PipelineSpec, source: str, folder: Path | None) -> dict[str, bytes]:
    """Each ``examples`` file, read once: named by a pipeline input, beside the spec, of bounded size."""
    found = {}
    for name, relative in (spec.examples or {}).items():
        where = f"{source}: examples: {name}"
        if spec.signature.input(name) is None:
            known = [tensor.name for tensor in spec.inputs]
            raise PipelineSpecError(f"{where}: not one of the pipeline's inputs {known}")
        path = _file(folder, relative, where)
        if path.stat().st_size > MAX_EXAMPLE_BYTES:
            raise PipelineSpecError(f"{where}: {path.name}: larger than {MAX_EXAMPLE_BYTES} bytes")
        found[name] = path.read_bytes()
    return found


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


def _check_model(
    registry: ModelRegistry, step: PipelineStep, folder: Path | None, where: str, out: CheckedSpec
) -> None:
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
