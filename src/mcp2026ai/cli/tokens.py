"""``mcp token``: create, list and revoke API tokens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.security import TokenRecord, TokenStore
from mcp2026ai.security.tokens import parse_duration, parse_scopes

app = typer.Typer(help="API tokens for the servers' --auth mode.", no_args_is_help=True)


def _store() -> TokenStore:
    return TokenStore(context.security_paths().tokens_file)


@app.command()
def create(
    name: Annotated[str, typer.Option(help="Token name (who or what uses it).")],
    scope: Annotated[
        str,
        typer.Option(
            help="infer, manage, pull (edge devices pulling models), shm (shared memory) or a comma-separated list."
        ),
    ] = "infer",
    expires: Annotated[str | None, typer.Option(help="Lifetime like 30d, 12h, 90m; never if omitted.")] = None,
) -> None:
    """Create a token and print its secret once (it is stored only as a hash)."""
    issued = _store().create(name, parse_scopes(scope), parse_duration(expires) if expires else None)
    record = issued.record
    context.audit("token.create", record.name, {"id": record.id, "scopes": [s.value for s in record.scopes]})
    console.print(f"created token [bold]{record.name}[/] (id {record.id}, scopes {_scopes(record)})", highlight=False)
    console.print("store it now, it is not shown again:", style="yellow")
    typer.echo(issued.token)


@app.command("list")
def list_tokens(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List tokens (never their secrets)."""
    records = _store().records()
    if as_json:
        print_json([record.model_dump(mode="json", exclude={"secret_sha256"}) for record in records])
        return
    now = datetime.now(UTC)
    rows = [
        {
            "name": record.name,
            "id": record.id,
            "scopes": _scopes(record),
            "created": f"{record.created_at:%Y-%m-%d %H:%M}",
            "expires": f"{record.expires_at:%Y-%m-%d %H:%M}" if record.expires_at else "never",
            "state": _state(record, now),
        }
        for record in records
    ]
    print_table("tokens", rows, ["name", "id", "scopes", "created", "expires", "state"])


@app.command()
def revoke(name: Annotated[str, typer.Argument(help="Token name or id.")]) -> None:
    """Revoke a token; running servers refuse it from their next request."""
    record = _store().revoke(name)
    context.audit("token.revoke", record.name, {"id": record.id})
    console.print(f"revoked token [bold]{record.name}[/] (id {record.id})", highlight=False)


def _scopes(record: TokenRecord) -> str:
    return ",".join(scope.value for scope in record.scopes)


def _state(record: TokenRecord, now: datetime) -> str:
    if record.revoked_at is not None:
        return "revoked"
    return "expired" if record.expired(now) else "active"
