"""The listening socket's accept queue, emptied before the listener closes at shutdown.

A client whose TCP handshake the kernel has completed, but whose connection the event loop has not
yet accepted, is reset when the listening socket closes: it sent its request and reads "connection
closed", neither an answer nor a refusal. uvicorn closes the listener as soon as its shutdown begins,
and under load the loop can be a few milliseconds behind the kernel. So the server keeps accepting
until the queue is empty (each connection then gets the closed gate's 503) and closes the listener in
the same event-loop step as the last check; a client that connects later is refused by the kernel
(connection refused), which clients know to retry elsewhere.

The queue's length is Linux's ``TCP_INFO`` of a listening socket (``tcpi_unacked`` holds the accept
backlog there); where it cannot be read the server waits the whole window instead.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time

ACCEPT_WINDOW_S = 0.5
"""At most this long (a tenth of the drain timeout if less), accepting goes on after the gate closed."""

POLL_S = 0.005
_TCP_INFO_BYTES = 32
_UNACKED_OFFSET = 24  # struct tcp_info: eight u8 fields, then u32 rto, ato, snd_mss, rcv_mss, unacked


def accept_window_s(drain_timeout_s: float) -> float:
    return min(ACCEPT_WINDOW_S, drain_timeout_s / 10)


def accept_queue_length(listener: socket.socket) -> int | None:
    """Connections the kernel holds for ``listener`` that nobody accepted yet; None where unknown."""
    tcp_info = getattr(socket, "TCP_INFO", None)
    if tcp_info is None or listener.fileno() < 0:
        return None
    try:
        info = listener.getsockopt(socket.IPPROTO_TCP, tcp_info, _TCP_INFO_BYTES)
    except OSError:
        return None
    if len(info) < _UNACKED_OFFSET + 4:
        return None
    return int(struct.unpack_from("I", info, _UNACKED_OFFSET)[0])


async def until_accepted(listeners: list[socket.socket], window_s: float) -> None:
    """Return once no listener has a connection waiting to be accepted, or after ``window_s``. The
    caller closes the listeners right after, without awaiting in between."""
    deadline = time.monotonic() + window_s
    while time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)  # the loop accepts what is queued now
        lengths = [accept_queue_length(listener) for listener in listeners]
        if lengths and all(length == 0 for length in lengths):
            return
