"""Which event loop ``mcp serve`` runs on (app.run_loop): uvloop without a gRPC listener, asyncio's own
with one (grpc.aio degrades on uvloop), or what ``--loop`` names."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

from mcp2026ai.app import run_loop
from mcp2026ai.errors import UnavailableError
from mcp2026ai.server.config import ServerConfig


def loop_class_under(config: ServerConfig) -> str:
    async def which() -> None:
        seen.append(type(asyncio.get_running_loop()).__module__)

    seen: list[str] = []
    run_loop(config)(which())
    return seen[0]


def test_auto_is_uvloop_without_grpc_and_asyncio_with_it() -> None:
    assert loop_class_under(ServerConfig(grpc_port=None)).startswith("uvloop")
    assert loop_class_under(ServerConfig(grpc_port=8001)).startswith("asyncio")


def test_an_explicit_choice_wins() -> None:
    assert loop_class_under(ServerConfig(grpc_port=None, event_loop="asyncio")).startswith("asyncio")
    assert loop_class_under(ServerConfig(grpc_port=8001, event_loop="uvloop")).startswith("uvloop")
    assert run_loop(ServerConfig(event_loop="uvloop")) is uvloop.run


def test_uvloop_asked_for_but_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    with pytest.raises(UnavailableError, match="pip install uvloop"):
        run_loop(ServerConfig(event_loop="uvloop"))
    assert run_loop(ServerConfig(grpc_port=None)) is asyncio.run  # auto falls back quietly
