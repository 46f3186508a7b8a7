"""``mcp keys``: create signing keys and manage the trusted public keys."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.model import key_passphrase
from mcp2026ai.cli.output import console, print_table
from mcp2026ai.errors import AlreadyExistsError
from mcp2026ai.security import KeyRing, TrustedKeys, load_public_key, trust_key_file
from mcp2026ai.security.encryption import write_new_key

app = typer.Typer(help="Ed25519 signing keys and trusted public keys.", no_args_is_help=True)


@app.command()
def init(
    name: Annotated[str, typer.Option(help="Key name.")] = "default",
    force: Annotated[bool, typer.Option(help="Replace an existing key of that name.")] = False,
    trust: Annotated[bool, typer.Option(help="Also trust the new public key on this machine.")] = True,
) -> None:
    """Create a key pair under MCP_HOME/keys (private key 0600; encrypted if MCP_KEY_PASSPHRASE is set)."""
    paths = context.security_paths()
    ring = KeyRing(paths.keys_dir)
    trusted_copy = paths.trusted_dir / f"{name}.pub"
    if trust and trusted_copy.exists() and not force and not ring.private_path(name).exists():
        raise AlreadyExistsError(f"{trusted_copy}: a key named {name!r} is already trusted (choose another --name)")
    key = ring.create(name, passphrase=key_passphrase(), overwrite=force)
    if trust:
        trust_key_file(ring.public_path(name), paths.trusted_dir, replace=True)
    context.audit("keys.init", name, {"key_id": key.key_id, "trusted": trust})
    console.print(f"created key [bold]{name}[/] ({key.key_id})", highlight=False)
    console.print(f"private {ring.private_path(name)}", highlight=False)
    console.print(f"public  {ring.public_path(name)}", highlight=False)


@app.command()
def trust(
    path: Annotated[Path, typer.Argument(help="PEM Ed25519 public key file.")],
    name: Annotated[str | None, typer.Option(help="Name to trust it under; the file stem if omitted.")] = None,
) -> None:
    """Trust a public key: signatures by it pass `mcp model verify` and `--require-signed`."""
    key = trust_key_file(path, context.security_paths().trusted_dir, name)
    context.audit("keys.trust", key.name, {"key_id": key.key_id, "source": str(path)})
    console.print(f"trusted key [bold]{key.name}[/] ({key.key_id})", highlight=False)


@app.command("data-key")
def data_key(
    out: Annotated[Path, typer.Option(help="Where to write the key (keep it off the artifacts' disk).")],
    force: Annotated[bool, typer.Option(help="Replace an existing key file.")] = False,
) -> None:
    """Create a random AES-256 key for encrypting artifacts at rest (enable with MCP_ARTIFACT_KEY_FILE)."""
    write_new_key(out, overwrite=force)
    context.audit("keys.data-key", str(out), {})
    console.print(f"wrote artifact key {out} (mode 0600)", highlight=False)
    console.print(f"enable with: export MCP_ARTIFACT_KEY_FILE={out}", highlight=False)


@app.command("list")
def list_keys() -> None:
    """List signing keys and trusted public keys with their key ids."""
    paths = context.security_paths()
    ring = KeyRing(paths.keys_dir)
    trusted = TrustedKeys.from_config(paths.trust_config())
    rows = [
        {"kind": "signing", "name": name, "key_id": load_public_key(ring.public_path(name)).key_id}
        for name in ring.names()
        if ring.public_path(name).exists()
    ]
    rows += [{"kind": "trusted", "name": key.name, "key_id": key.key_id} for key in trusted]
    print_table("keys", rows, ["kind", "name", "key_id"])
