"""``python -m mcp2026ai.cli`` runs the ``mcp`` command."""

from mcp2026ai.cli.main import main

main()
