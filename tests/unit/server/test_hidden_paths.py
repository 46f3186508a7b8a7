"""Issue 50, finding 12: the server's home never reaches a client (errors.bounded_message, every edge)."""

from __future__ import annotations

from mcp2026ai.errors import ModelImportError, bounded_message, hide_in_messages


def test_the_home_and_paths_under_it_are_shown_as_mcp_home_and_nothing_else_changes() -> None:
    hide_in_messages("/srv/secret-account/mcp-home/", "$MCP_HOME")
    error = ModelImportError(
        "/srv/secret-account/mcp-home/tmp/.load-x.onnx: not a valid ONNX model (should be file inside "
        "'/srv/secret-account/mcp-home/tmp'); /srv/secret-account/mcp-home2/other and /v2/models/m stay"
    )
    assert bounded_message(error) == (
        "$MCP_HOME/tmp/.load-x.onnx: not a valid ONNX model (should be file inside '$MCP_HOME/tmp'); "
        "/srv/secret-account/mcp-home2/other and /v2/models/m stay"
    )
