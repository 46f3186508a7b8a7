"""``mcp contract``: the contract's JSON Schema and file validation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli.output import console, print_json
from mcp2026ai.contract import contract_json_schema, load_contract

app = typer.Typer(help="Inference contracts.", no_args_is_help=True)


@app.command()
def schema() -> None:
    """Print the contract's JSON Schema."""
    print_json(contract_json_schema())


@app.command()
def validate(path: Annotated[Path, typer.Argument(help="Contract YAML file.")]) -> None:
    """Validate a contract file; exits 2 naming the field and value on error."""
    contract = load_contract(path)
    console.print(f"{path}: valid ({contract.sla_class.value}, p99 <= {contract.latency.p99_ms:g} ms)")
