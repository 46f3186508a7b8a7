"""The HTTP listener is closed at shutdown only once the kernel's accept queue is empty: a client whose
handshake the kernel completed is accepted (and refused by the closed gate), never reset."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from mcp2026ai.server.http.connection.accept_queue import accept_queue_length, accept_window_s, until_accepted

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="TCP_INFO is Linux's")


def listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def test_the_queue_length_counts_connections_nobody_accepted_yet() -> None:
    with listener() as sock:
        assert accept_queue_length(sock) == 0
        clients = [socket.create_connection(sock.getsockname()) for _ in range(3)]
        assert accept_queue_length(sock) == 3
        accepted, _ = sock.accept()
        assert accept_queue_length(sock) == 2
        for client in [*clients, accepted]:
            client.close()


def test_shutdown_waits_for_the_loop_to_accept_what_is_queued() -> None:
    async def scenario() -> tuple[float, int | None]:
        sock = listener()
        sock.setblocking(False)
        clients = [socket.create_connection(sock.getsockname()) for _ in range(4)]
        server = await asyncio.start_server(lambda reader, writer: writer.close(), sock=sock)
        started = time.monotonic()
        await until_accepted([sock], window_s=5)
        waited, left = time.monotonic() - started, accept_queue_length(sock)
        server.close()
        for client in clients:
            client.close()
        return waited, left

    waited, left = asyncio.run(scenario())
    assert left == 0 and waited < 5


def test_a_queue_nobody_accepts_is_waited_for_the_window_only() -> None:
    with listener() as sock:
        client = socket.create_connection(sock.getsockname())
        started = time.monotonic()
        asyncio.run(until_accepted([sock], window_s=0.2))
        assert 0.2 <= time.monotonic() - started < 2 and accept_queue_length(sock) == 1
        client.close()


def test_the_window_is_a_tenth_of_a_short_drain() -> None:
    assert accept_window_s(30) == 0.5 and accept_window_s(1) == pytest.approx(0.1)
