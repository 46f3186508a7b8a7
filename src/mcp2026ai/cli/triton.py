"""Triton model repositories from the CLI: ``mcp model import-triton``, ``mcp model export --format
triton`` and what ``mcp serve --model-repository`` prepares (docs/triton-repositories.md)."""

from __future__ import annotations

import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.protocol.triton_export import export_repository
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import is_pipeline
from mcp2026ai.registry.triton_import import import_repository
from mcp2026ai.runtime.triton_python import check_model_source
from mcp2026ai.security import AuditLog
from mcp2026ai.security.encryption import cipher_from_settings
from mcp2026ai.serving.repository import RepositoryServing

_SERVED: list[tempfile.TemporaryDirectory[str]] = []
"""The registries ``--model-repository`` builds: removed when the process exits."""


class ExportFormat(StrEnum):
    TRITON = "triton"


def import_triton(
    repository: Annotated[Path, typer.Argument(help="Triton model repository: <name>/config.pbtxt, <name>/<N>/.")],
) -> None:
    """Register every model of a Triton repository, each config.pbtxt as its contract (all or nothing)."""
    registry = context.registry()
    imported = import_repository(registry, repository, registry.home / "tmp", python_check=_check_python)
    for name, records in imported.records.items():
        versions = ", ".join(f"{record.version} (Triton {record.number})" for record in records)
        console.print(f"imported {name}: {versions}", highlight=False, soft_wrap=True)
        _print_notes(name, imported.notes.get(name, []))


def export(
    out: Annotated[Path, typer.Option(help="Directory to write the repository into (models must not exist there).")],
    format_: Annotated[ExportFormat, typer.Option("--format", help="Repository layout.")] = ExportFormat.TRITON,
    name: Annotated[list[str] | None, typer.Option(help="Model to export; repeatable. Default: all.")] = None,
) -> None:
    """Write registered models as a model repository (Triton: config.pbtxt + numeric version directories)."""
    registry = context.registry()
    names = list(name or _exportable(registry))
    if not names:
        raise InvalidArgumentError("nothing to export: register a model first")
    for directory in export_repository(registry, names, out):
        versions = ", ".join(sorted((p.name for p in directory.iterdir() if p.is_dir()), key=int))
        console.print(f"exported {directory.name}: {directory} (versions {versions})", highlight=False, soft_wrap=True)


def _exportable(registry: ModelRegistry) -> list[str]:
    """Every model but the pipelines (not exported as ensembles yet: a note names each)."""
    names = []
    for model in registry.model_names():
        if is_pipeline(registry.resolve(model)):
            console.print(f"note: {model}: a pipeline, not exported (its step models are)", highlight=False)
        else:
            names.append(model)
    return names


def repository_registry(repository: Path) -> tuple[ModelRegistry, RepositoryServing]:
    """A registry of the repository as it stands (fresh, removed at exit), and what to serve from it:
    the selected versions, and the models refused with Triton's "failed to load" reason."""
    home = context.settings().home / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    folder = tempfile.TemporaryDirectory(prefix="triton-repository-", dir=home)
    _SERVED.append(folder)
    audit = AuditLog(context.security_paths().audit_log)
    registry = ModelRegistry(Path(folder.name), cipher_from_settings(context.settings()), audit, context.actor())
    imported = import_repository(
        registry, repository, Path(folder.name) / "tmp", all_or_nothing=False, python_check=_check_python
    )
    serving = RepositoryServing.from_import(imported)
    for name in serving.names:
        _print_notes(name, imported.notes.get(name, []))
    if not serving.names:
        raise InvalidArgumentError(f"{repository}: no model can be served")
    return registry, serving


def _check_python(source: bytes, label: str) -> None:
    """A python model's source, checked before it is registered (runtime/triton_python/support.py)."""
    check_model_source(source, label=label)


def _print_notes(name: str, notes: list[str]) -> None:
    for note in notes:
        console.print(f"note: {name}: {note}", highlight=False, soft_wrap=True)
