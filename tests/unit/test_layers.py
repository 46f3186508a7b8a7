"""The house's floors: a module may import only from floors below its own (or its own package).

This list is the one place the layer order is written (README "Layout" shows it). A new package
goes on the lowest floor above everything it imports; an import that runs back up fails here with
the file, the line and both floors named, before it becomes a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp2026ai

FLOORS: list[set[str]] = [
    {"errors", "clock", "settings"},
    {"messages", "extras", "security", "pipelines_data"},  # pipelines_data: spec and step files (errors only)
    {"contract", "ir", "bundled", "shared_memory"},
    {"__init__", "inference", "registry", "runtime", "bundled_pipelines"},  # __init__: the package's face (__version__)
    {"protocol", "observability", "imaging", "classification"},
    {"client"},
    {"quantization", "routing", "scheduling", "bench"},
    {"generation"},  # the engine alone: its plans are policy/generation.py, its served table serving/llms.py
    {"policy"},
    {"serving"},
    {"dataplane"},
    {"server"},
    {"app"},
    {"deploy", "testing", "edge"},
    {"cli"},
]
SOURCE = Path(mcp2026ai.__file__).parent
FLOOR_OF = {component: floor for floor, components in enumerate(FLOORS) for component in components}


def component_of(path: Path) -> str:
    """The top-level package or module a source file belongs to (``serving`` for serving/models.py)."""
    return path.relative_to(SOURCE).with_suffix("").parts[0]


def imported_components(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, component) for every mcp2026ai import in a module, TYPE_CHECKING ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
            if node.module == "mcp2026ai":  # `from mcp2026ai import x`: x is a module or the face's name
                modules = [f"mcp2026ai.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "mcp2026ai" and len(parts) > 1:
                target = parts[1]
                yield node.lineno, target if target in FLOOR_OF else "__init__"


def sources() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_every_package_has_a_floor() -> None:
    unplaced = sorted({component_of(path) for path in sources()} - set(FLOOR_OF))
    assert not unplaced, f"give these a floor in FLOORS: {unplaced}"


@pytest.mark.parametrize("path", sources(), ids=lambda path: str(path.relative_to(SOURCE)))
def test_imports_only_run_down(path: Path) -> None:
    own = component_of(path)
    upward = [
        f"{path.relative_to(SOURCE)}:{line} imports {target} (floor {FLOOR_OF[target]}) from floor {FLOOR_OF[own]}"
        for line, target in imported_components(ast.parse(path.read_text()))
        if target != own and FLOOR_OF[target] >= FLOOR_OF[own]
    ]
    assert not upward, "\n".join(upward)


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, dotted module) for every absolute import in a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_the_servers_reach_text_generation_only_through_the_data_plane() -> None:
    """server/ decodes and encodes; the engine is reached through dataplane/generation.py."""
    engine_users = [
        f"{path.relative_to(SOURCE)}:{line}"
        for path in sources()
        if path.relative_to(SOURCE).parts[0] == "server"
        for line, module in imported_modules(ast.parse(path.read_text()))
        if module == "mcp2026ai.generation.engine"
    ]
    assert not engine_users, engine_users
