"""Dispatch a model file to the importer for its format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.onnx_import import load_onnx, onnx_signature
from mcp2026ai.ir.signature import Signature


@dataclass(frozen=True)
class ImportedModel:
    """An importable model: the ONNX file to serve, its source format and its signature."""

    onnx_path: Path
    source_format: str
    signature: Signature


def _import_onnx(path: Path, workdir: Path) -> ImportedModel:
    model = load_onnx(path)
    return ImportedModel(onnx_path=path, source_format="onnx", signature=onnx_signature(model, path))


Importer = Callable[[Path, Path], ImportedModel]

_IMPORTERS: dict[str, Importer] = {".onnx": _import_onnx}


def register_importer(suffix: str, importer: Importer) -> None:
    """Let another format (TorchScript, TFLite) plug in by file suffix."""
    _IMPORTERS[suffix.lower()] = importer


def supported_suffixes() -> list[str]:
    return sorted(_IMPORTERS)


def import_model(path: Path | str, workdir: Path) -> ImportedModel:
    """Import ``path``; converted files are written under ``workdir``."""
    path = Path(path)
    if not path.exists():
        raise ModelImportError(f"{path}: no such file")
    if not path.is_file():
        raise ModelImportError(f"{path}: not a regular file")
    importer = _IMPORTERS.get(path.suffix.lower())
    if importer is None:
        raise ModelImportError(
            f"{path}: unsupported model format {path.suffix or '(no suffix)'!r} "
            f"(supported: {', '.join(supported_suffixes())})"
        )
    return importer(path, workdir)
