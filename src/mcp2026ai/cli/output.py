"""Console output shared by CLI commands: rich tables, JSON, and one-line errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console()
error_console = Console(stderr=True)

EXIT_USAGE = 2


def print_error(error: Exception) -> None:
    """One line on stderr; the message is text, not markup (an install hint's ``[ray]`` stays)."""
    error_console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def print_table(title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row.get(column, "")) for column in columns))
    console.print(table)
