"""``mcp audit``: check the audit log's hash chain and show recent entries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.errors import IntegrityError, InvalidArgumentError
from mcp2026ai.registry import audit_trail
from mcp2026ai.registry.stores import catalog_url
from mcp2026ai.security import AuditLog
from mcp2026ai.security.audit import AuditChain

app = typer.Typer(help="The append-only audit log of management actions.", no_args_is_help=True)

PathOption = Annotated[
    Path | None,
    typer.Option(
        "--path", help="Audit log file; the registry's (MCP_HOME/audit.jsonl, or its PostgreSQL catalog's) if omitted."
    ),
]


def _log(path: Path | None) -> AuditChain:
    return AuditLog(path) if path is not None else context.audit_log()


_SHOWN = 10


@app.command()
def verify(
    path: PathOption = None,
    repair: Annotated[
        bool, typer.Option(help="Record the missing model.register entries (marked recovered) instead of failing.")
    ] = False,
) -> None:
    """Check the hash chain, and that every registered model version has its model.register entry;
    exits 2 naming the first broken line or the versions without an entry."""
    log = _log(path)
    report = log.verify()
    if not report.ok:
        raise InvalidArgumentError(f"{log.location}: audit chain broken at {report.reason}")
    if _is_registry_log(path):
        registry = context.registry()
        if repair:
            for entry in audit_trail.repair(registry.catalog, log):
                console.print(f"recorded the missing model.register entry of {entry['target']}", highlight=False)
            report = log.verify()
        _check_registrations(log, audit_trail.unaudited_versions(registry.catalog, log))
    console.print(f"{log.location}: ok, {report.entries} entries, head {report.head_hash}", highlight=False)


def _is_registry_log(path: Path | None) -> bool:
    """Registrations are cross-checked against the registry's own audit log only."""
    return path is None or (
        catalog_url(context.settings()) is None and path.resolve() == context.security_paths().audit_log.resolve()
    )


def _check_registrations(log: AuditChain, missing: list[audit_trail.Unaudited]) -> None:
    if not missing:
        return
    named = ", ".join(item.describe() for item in missing[:_SHOWN])
    more = f" and {len(missing) - _SHOWN} more" if len(missing) > _SHOWN else ""
    raise IntegrityError(
        f"{log.location}: chain ok, but {len(missing)} registered model version(s) have no model.register entry: "
        f"{named}{more}; `mcp audit verify --repair` records them as recovered"
    )


@app.command()
def show(
    path: PathOption = None,
    last: Annotated[int, typer.Option(help="Show the last N entries (0: all).", min=0)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the most recent entries."""
    if path is None:  # the registry's log, or the server's under --server
        entries = context.management().audit_entries(last)
    else:
        entries = _log(path).entries()
        entries = entries[-last:] if last else entries
    if as_json:
        print_json(entries)
        return
    rows = [_row(entry) for entry in entries]
    print_table("audit", rows, ["seq", "time", "actor", "action", "target", "details", "hash"])


def _row(entry: dict[str, Any]) -> dict[str, Any]:
    details = entry.get("details") or {}
    return {
        **entry,
        "time": str(entry.get("time", ""))[:19].replace("T", " "),
        "details": " ".join(f"{key}={str(value)[:16]}" for key, value in sorted(details.items())),
        "hash": str(entry.get("hash", ""))[:12],
    }
