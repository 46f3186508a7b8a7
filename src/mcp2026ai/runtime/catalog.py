"""The backend catalog: a runtime name -> its backend class, imported only when a plan asks for it.

Each runtime is an optional dependency but onnxruntime; asking for one that is not installed raises
an error with the one-line install hint (``pip install 'mcp2026ai[openvino]'``), so that runtimes
can sit side by side without the base install carrying them all.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.extras import require
from mcp2026ai.ir.signature import Signature
from mcp2026ai.runtime.base import Backend, BackendClass
from mcp2026ai.runtime.plan import Plan


@dataclass(frozen=True)
class RuntimeEntry:
    """Where a runtime's backend lives and which package it needs."""

    name: str
    module: str
    """The mcp2026ai module that defines the backend class."""
    attribute: str
    requires: str
    """The third-party module whose absence means the runtime's extra is not installed."""


RUNTIMES: dict[str, RuntimeEntry] = {
    "onnxruntime": RuntimeEntry("onnxruntime", "mcp2026ai.runtime.onnx", "OnnxRuntimeBackend", "onnxruntime"),
    "openvino": RuntimeEntry("openvino", "mcp2026ai.runtime.openvino", "OpenVinoBackend", "openvino"),
}


def runtime_entry(name: str) -> RuntimeEntry:
    entry = RUNTIMES.get(name)
    if entry is None:
        raise InvalidArgumentError(f"unknown runtime {name!r} (known: {', '.join(sorted(RUNTIMES))})")
    return entry


def backend_class(name: str) -> BackendClass:
    """The backend class of runtime ``name``, importing it (and its library) now."""
    entry = runtime_entry(name)
    require(entry.requires, f"the {name} runtime")
    cls: BackendClass = getattr(importlib.import_module(entry.module), entry.attribute)
    return cls


def installed_runtimes() -> list[str]:
    """Runtimes whose library imports here (what `mcp probe` lists)."""
    return [name for name, entry in RUNTIMES.items() if importlib.util.find_spec(entry.requires) is not None]


def create_backend(
    model: Path | bytes,
    signature: Signature,
    plan: Plan,
    optimized_model_path: Path | None = None,
    label: str | None = None,
) -> Backend:
    """An unloaded backend of the plan's runtime."""
    return backend_class(plan.runtime)(model, signature, plan, optimized_model_path, label)
