"""What of ``triton_python_backend_utils`` is provided here, and the load-time check of a model's use.

A model that names anything else (``pb_utils.MetricFamily``, ``pb_utils.load_model``, ...) is refused
when it is imported or loaded, with the file, the line and the name: never halfway through a request.
Both ``import triton_python_backend_utils as pb_utils`` and ``from triton_python_backend_utils
import X`` are checked.
"""

from __future__ import annotations

import ast
import types

from mcp2026ai.errors import ModelImportError
from mcp2026ai.runtime.python_code import check_source
from mcp2026ai.runtime.triton_python import pb_utils

MODULE_NAME = "triton_python_backend_utils"
SUPPORTED = frozenset(
    {
        "Tensor",
        "InferenceRequest",
        "InferenceResponse",
        "InferenceResponseSender",
        "TritonError",
        "TritonModelException",
        "Logger",
        "get_input_tensor_by_name",
        "get_output_tensor_by_name",
        "get_input_config_by_name",
        "get_output_config_by_name",
        "using_decoupled_model_transaction_policy",
        "triton_string_to_numpy",
        "triton_to_numpy_type",
        "numpy_to_triton_type",
        "TRITON_STRING_TO_NUMPY",
        "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
        "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
        "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
        "TRITONSERVER_REQUEST_RELEASE_ALL",
    }
)
"""Every name of the shim a model may use (Triton's names; see docs/triton-repositories.md)."""


def shim_module() -> types.ModuleType:
    """The module a model's ``import triton_python_backend_utils`` gets."""
    return pb_utils


def unsupported_uses(tree: ast.Module) -> list[tuple[str, int]]:
    """(name, line) of each ``triton_python_backend_utils`` attribute the code uses that is not provided."""
    aliases: set[str] = set()
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(alias.asname or alias.name for alias in node.names if alias.name == MODULE_NAME)
        elif isinstance(node, ast.ImportFrom) and node.module == MODULE_NAME:
            found += [(alias.name, node.lineno) for alias in node.names if alias.name not in SUPPORTED]
    for node in ast.walk(tree):
        named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
        if named and node.attr not in SUPPORTED:  # type: ignore[attr-defined]
            found.append((node.attr, node.lineno))  # type: ignore[attr-defined]
    return sorted(set(found), key=lambda item: item[1])


def check_model_source(source: bytes, *, label: str) -> ast.Module:
    """Syntax, imports (the shim provided) and the shim's names a model uses; ModelImportError naming each."""
    tree = check_source(source, label=label, provided=[MODULE_NAME])
    unsupported = unsupported_uses(tree)
    if unsupported:
        named = ", ".join(f"{MODULE_NAME}.{name} (line {line})" for name, line in unsupported)
        raise ModelImportError(f"{label}: uses what this server's Python backend does not provide: {named}")
    return tree
