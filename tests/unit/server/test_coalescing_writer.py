"""A response's head and body leave in one send; a lone write leaves at the end of the loop step;
large bodies are not copied together; close sends what is held first. Over a real socket pair."""

from __future__ import annotations

import asyncio
import socket

from mcp2026ai.server.http.connection.protocol import COALESCE_BYTES, CoalescingWriter


async def _scenario() -> tuple[list[bytes], bytes]:
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, _ = await loop.create_connection(asyncio.Protocol, sock=ours)
    sent: list[bytes] = []
    send = transport.write
    transport.write = lambda data: (sent.append(bytes(data)), send(data))[1]  # type: ignore[method-assign]
    writer = CoalescingWriter(transport)  # type: ignore[arg-type]

    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
    writer.write(b"{}")
    writer.write(b"lone")
    assert sent == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]  # the lone write is held ...
    await asyncio.sleep(0)
    assert sent[-1] == b"lone"  # ... until the end of the step
    big = b"x" * COALESCE_BYTES
    writer.write(b"head")
    writer.write(big)
    assert sent[-2:] == [b"head", big]
    writer.write(b"last")
    writer.close()
    assert sent[-1] == b"last" and writer.is_closing()
    theirs.setblocking(False)
    received = b""
    while not received.endswith(b"last"):
        await asyncio.sleep(0.01)
        try:
            received += theirs.recv(1 << 20)
        except BlockingIOError:
            continue
    theirs.close()
    return sent, received


def test_writes_are_coalesced_in_order() -> None:
    sent, received = asyncio.run(_scenario())
    assert received == b"".join(sent)
    assert received.startswith(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}lonehead")
