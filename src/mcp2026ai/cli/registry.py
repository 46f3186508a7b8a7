"""``mcp registry``: the registry's stores as a whole (copying a local registry into shared ones)."""

from __future__ import annotations

from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.migrate import migrate_registry
from mcp2026ai.registry.stores import audit_chain_for, catalog_url, open_stores
from mcp2026ai.security import AuditLog

app = typer.Typer(help="The registry's stores.", no_args_is_help=True)


@app.command()
def migrate(
    catalog: Annotated[
        str | None, typer.Option(help="Target catalog, postgresql://...; MCP_CATALOG_URL if omitted.")
    ] = None,
    artifacts: Annotated[
        str | None, typer.Option(help="Target artifact store, s3://bucket/prefix; MCP_ARTIFACT_URL if omitted.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Copy the local registry under MCP_HOME (artifacts, versions, annotations, audit chain) into shared stores."""
    settings = context.settings()
    catalog = catalog or catalog_url(settings)
    artifacts = artifacts or settings.artifact_url
    if not catalog and not artifacts:
        raise InvalidArgumentError("give --catalog and/or --artifacts (or set MCP_CATALOG_URL / MCP_ARTIFACT_URL)")
    home = settings.home
    source = open_stores(home, None, None, settings)
    target = open_stores(home, catalog, artifacts, settings)
    if target.catalog.location == source.catalog.location and target.store.location == source.store.location:
        raise InvalidArgumentError("the target stores are the local ones: name a shared catalog or artifact store")
    source_audit = AuditLog(context.security_paths().audit_log)
    report = migrate_registry(
        source, source_audit, target, audit_chain_for(catalog, context.security_paths().audit_log), context.actor()
    )
    if as_json:
        print_json(report.__dict__)
        return
    console.print(
        f"migrated {len(report.copied)} version(s) ({len(report.skipped)} already there), {report.objects} object(s) "
        f"to {target.catalog.location} and {target.store.location}; "
        f"audit: {report.audit_adopted} entries carried over, {report.audit_appended} appended",
        highlight=False,
    )
