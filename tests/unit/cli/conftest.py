"""CLI fixtures: a CliRunner bound to the real typer app."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from mcp2026ai.cli.main import app
from tests.support.cli import Invoke


@pytest.fixture
def cli() -> Invoke:
    """``cli("model", "list")``: the typer app in-process; domain errors land in ``result.exception``."""
    runner = CliRunner()

    def invoke(*args: str | Path) -> Result:
        return runner.invoke(app, [str(arg) for arg in args], env={"COLUMNS": "200"})

    return invoke
