"""The ``mcp`` root imports a subcommand's module only when that command runs (cli/lazy.py)."""

from __future__ import annotations

import subprocess
import sys

import typer.main
from typer import _click as click

from mcp2026ai.cli.lazy import LAZY_COMMANDS, LazyGroup
from mcp2026ai.cli.main import app


def test_starting_mcp_imports_neither_the_server_nor_a_runtime() -> None:
    probe = (
        "import sys, mcp2026ai.cli.main; "
        "print(sorted(m for m in ('mcp2026ai.app', 'mcp2026ai.registry', 'onnxruntime', 'numpy') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_every_lazy_command_loads_under_its_name_with_its_help() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, LazyGroup)
    context = click.Context(root)
    assert set(LAZY_COMMANDS) <= set(root.list_commands(context))
    for name in LAZY_COMMANDS:
        command = root.get_command(context, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(), name


def test_a_lazy_group_keeps_its_subcommands(cli) -> None:  # type: ignore[no-untyped-def]
    shown = cli("batch", "--help")
    assert shown.exit_code == 0 and "run" in shown.output
    assert cli("shadow", "--help").exit_code == 0
