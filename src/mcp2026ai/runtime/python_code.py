"""User Python code served as a model or a pipeline step: checked and loaded from verified bytes.

One function opens user code, for every kind that runs it (a pipeline's Python step, a Triton
``backend: "python"`` model): the caller passes the bytes it read and verified from the artifact
store (never a path the code is re-read from), and gets the class back or a
:class:`~mcp2026ai.errors.ModelImportError` that names the file, the line and what is wrong.

Checks made before anything runs, so that a bad file fails at register or load, never mid-request:

- the source compiles (a syntax error names its line);
- every module it imports at top level is importable here (a missing one is named, with the
  file's line), except those listed in ``provided`` (modules the loader injects, such as
  ``triton_python_backend_utils``);
- the named class exists after the module body ran.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mcp2026ai.errors import ModelImportError


@dataclass(frozen=True)
class MissingImport:
    """A module the code imports that this interpreter cannot find."""

    module: str
    line: int


def parse_source(source: bytes, *, label: str) -> ast.Module:
    """The module's syntax tree, or a ModelImportError naming the file and line of the syntax error."""
    try:
        return ast.parse(source, filename=label)
    except SyntaxError as error:
        raise ModelImportError(f"{label}:{error.lineno}: syntax error: {error.msg}") from None
    except ValueError as error:  # null bytes in the source
        raise ModelImportError(f"{label}: not Python source: {error}") from None


def imported_modules(tree: ast.Module) -> list[tuple[str, int]]:
    """(top-level module, line) for each absolute import in the module body, in order."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name.split(".")[0], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
    return found


def missing_imports(tree: ast.Module, *, provided: Iterable[str] = ()) -> list[MissingImport]:
    """The imported modules that are neither provided by the loader nor importable here."""
    skip = set(provided)
    missing: dict[str, MissingImport] = {}
    for module, line in imported_modules(tree):
        if module in skip or module in missing or module in sys.builtin_module_names:
            continue
        if importlib.util.find_spec(module) is None:
            missing[module] = MissingImport(module, line)
    return list(missing.values())


def check_source(source: bytes, *, label: str, provided: Iterable[str] = ()) -> ast.Module:
    """Compile-time checks: syntax and imports. Raises ModelImportError naming each problem."""
    tree = parse_source(source, label=label)
    absent = missing_imports(tree, provided=provided)
    if absent:
        named = ", ".join(f"{item.module} (line {item.line})" for item in absent)
        raise ModelImportError(f"{label}: imports modules not installed here: {named}")
    return tree


def check_python_source(source: bytes, label: str) -> None:
    """:func:`check_source` as the registry's ``SourceCheck`` (a pipeline's Python step at register)."""
    check_source(source, label=label)


def load_class(
    source: bytes,
    *,
    label: str,
    class_name: str,
    module_name: str,
    provided: Mapping[str, types.ModuleType] | None = None,
) -> type:
    """Run the checked module body in a fresh module and return its ``class_name``.

    ``provided`` modules are visible to the code's imports while its body runs (and stay registered
    under their names, as Triton's ``triton_python_backend_utils`` does). The module is not added to
    ``sys.modules`` under ``module_name``, so two versions of one file never see each other.
    """
    injected = dict(provided or {})
    tree = check_source(source, label=label, provided=injected)
    module = types.ModuleType(module_name)
    module.__file__ = label
    for name, provided_module in injected.items():
        sys.modules.setdefault(name, provided_module)
    try:
        exec(compile(tree, label, "exec"), module.__dict__)  # the user's own verified code
    except ModelImportError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure of user code at import is the file's fault
        raise ModelImportError(f"{label}: running the module failed: {type(error).__name__}: {error}") from None
    found = getattr(module, class_name, None)
    if not isinstance(found, type):
        raise ModelImportError(f"{label}: defines no class {class_name!r}")
    return found
