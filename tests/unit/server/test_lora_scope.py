"""vLLM's run-time adapter routes are management: scope ``manage``, in the ``repository`` API group."""

from __future__ import annotations

import pytest

from mcp2026ai.security import Scope
from mcp2026ai.server.api_groups import REPOSITORY, http_group
from mcp2026ai.server.http.auth import required_scope


@pytest.mark.parametrize("path", ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"])
def test_adapter_routes_need_manage_and_belong_to_the_repository_group(path: str) -> None:
    assert required_scope(path, "POST") == Scope.MANAGE
    assert http_group(path, "POST") == REPOSITORY
    assert required_scope("/v1/chat/completions", "POST") == Scope.INFER
