"""Subcommands imported when they run, not when ``mcp`` starts.

Each command module imports what it works with (the server, the policy, onnxruntime, the
registry), so importing every module made each ``mcp`` call pay for all of them: ``mcp version``
took 1.2-1.3 s, now 0.23-0.25 s, and ``mcp model list`` 1.15-1.19 s, now 0.84 s (quiet Intel Xeon,
2 cores). :class:`LazyGroup` names the subcommands up front and imports a module only when its
command is asked for, by name or to list every command's help.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import typer
from typer import _click as click  # typer 0.29 carries its own click: its groups and contexts are these
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group
from typer.models import CommandInfo

LAZY_COMMANDS: dict[str, str] = {
    "model": "mcp2026ai.cli.model:app",
    "contract": "mcp2026ai.cli.contract:app",
    "rollout": "mcp2026ai.cli.rollout:app",
    "shadow": "mcp2026ai.cli.rollout:shadow_app",
    "policy": "mcp2026ai.cli.policy:app",
    "probe": "mcp2026ai.cli.policy:probe",
    "keys": "mcp2026ai.cli.keys:app",
    "token": "mcp2026ai.cli.tokens:app",
    "audit": "mcp2026ai.cli.audit:app",
    "deploy": "mcp2026ai.cli.deploy:app",
    "registry": "mcp2026ai.cli.registry:app",
    "batch": "mcp2026ai.cli.batch:app",
    "predict": "mcp2026ai.cli.predict:predict",
    "serve": "mcp2026ai.cli.serve:serve",
    "quantize": "mcp2026ai.cli.quantize:quantize",
    "verify": "mcp2026ai.cli.quantize:verify",
    "convert": "mcp2026ai.cli.convert:convert",
    "bench": "mcp2026ai.cli.bench:bench",
    "generate": "mcp2026ai.cli.generate:generate",
}
"""Subcommand name -> ``module:attribute``: a Typer app (a group of commands) or a command function."""


def load_command(name: str, target: str) -> click.Command:
    """Import ``target`` and make it the click command ``name``."""
    module_name, attribute = target.split(":")
    found: Any = getattr(import_module(module_name), attribute)
    if isinstance(found, typer.Typer):
        command: click.Command = get_group(found)
    else:
        command = get_command_from_info(
            CommandInfo(name=name, callback=found), pretty_exceptions_short=True, rich_markup_mode="rich"
        )
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """The root group: the eagerly defined commands plus :data:`LAZY_COMMANDS`, loaded on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name, LAZY_COMMANDS[cmd_name])
        return super().get_command(ctx, cmd_name)
