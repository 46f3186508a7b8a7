"""Pipelines shipped with the package, written out as ready spec folders (``mcp bundled ocr``).

A bundled pipeline is a spec and its Python step file kept in the package (``pipelines_data/NAME/``)
plus the ONNX models it names, which come from another installed package (see :mod:`mcp2026ai.bundled`).
:func:`materialize_pipeline` copies all of them into ``MCP_HOME/bundled/NAME/`` and returns the spec's
path, which ``mcp model register --path`` takes.

Writes only under ``MCP_HOME/bundled/NAME/``: each file is written to a fresh temporary file beside it
and renamed over the old one, so a reader never sees half a file; a file whose bytes already match is
left alone (running it again changes nothing). It never follows a symlink below ``MCP_HOME/bundled``
(it makes none): one there is refused with its path named.
"""

from __future__ import annotations

import os
import tempfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import NotFoundError, PermissionDeniedError

SPEC_FILE = "pipeline.yaml"

_PIPELINES: dict[str, dict[str, str]] = {
    "ocr": {
        "models/ch_PP-OCRv4_det_infer.onnx": "ocr-det",
        "models/ch_ppocr_mobile_v2.0_cls_infer.onnx": "ocr-cls",
        "models/ch_PP-OCRv4_rec_infer.onnx": "ocr-rec",
    },
}
"""Pipeline name -> {path in its folder: bundled model name}; the spec and step files come from pipelines_data/NAME."""


PACKAGE_SUFFIXES = (".yaml", ".py", ".png")
"""The spec, its Python steps and its example images."""


def bundled_pipeline_names() -> list[str]:
    return list(_PIPELINES)


def materialize_pipeline(name: str, home: Path) -> Path:
    """Write pipeline ``name``'s spec folder under ``home/bundled/`` (idempotent) and return the spec's path."""
    if name not in _PIPELINES:
        raise NotFoundError(f"no bundled pipeline {name!r} (known: {', '.join(_PIPELINES)})")
    sources: dict[str, Path | Traversable] = dict(_package_files(name))
    sources.update({relative: bundled_model_path(model) for relative, model in _PIPELINES[name].items()})
    folder = _own_directory(home, Path("bundled") / name)
    for relative, source in sources.items():
        _place(source, folder, Path(relative), home)
    return folder / SPEC_FILE


def _package_files(name: str) -> dict[str, Traversable]:
    """The spec, step and example files kept in the package for pipeline ``name``, by their name in its folder."""
    data = files("mcp2026ai").joinpath("pipelines_data", name)
    found = {entry.name: entry for entry in data.iterdir() if entry.is_file() and entry.name.endswith(PACKAGE_SUFFIXES)}
    if SPEC_FILE not in found:
        raise NotFoundError(f"the package's pipelines_data/{name}/ has no {SPEC_FILE} (a broken install?)")
    return found


def _own_directory(home: Path, relative: Path) -> Path:
    """``home / relative``, each level created as a real directory; a symlink on the way is refused."""
    current = home
    home.mkdir(parents=True, exist_ok=True)
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            raise PermissionDeniedError(f"{current} is a symlink that mcp did not make; remove it and run again")
        if current.exists() and not current.is_dir():
            raise PermissionDeniedError(f"{current} exists and is not a directory; remove it and run again")
        current.mkdir(exist_ok=True)
    return current


def _place(source: Path | Traversable, folder: Path, relative: Path, home: Path) -> None:
    """Copy ``source`` to ``folder / relative`` unless the same bytes are already there."""
    parent = _own_directory(home, folder.relative_to(home) / relative.parent)
    target = parent / relative.name
    if target.is_symlink():
        raise PermissionDeniedError(f"{target} is a symlink that mcp did not make; remove it and run again")
    content = source.read_bytes()
    if target.is_file() and target.stat().st_size == len(content) and target.read_bytes() == content:
        return
    handle, temporary = tempfile.mkstemp(dir=parent, prefix=f".{relative.name}.")
    try:
        with os.fdopen(handle, "wb") as written:
            written.write(content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
