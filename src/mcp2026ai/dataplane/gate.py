"""Whether the server still takes new work: closed once, when shutdown starts (drain)."""

from __future__ import annotations

from mcp2026ai.errors import UnavailableError


class AcceptGate:
    """Shared by every use case: after :meth:`close` each one refuses new work with UnavailableError (503)."""

    def __init__(self) -> None:
        self.open = True

    def close(self) -> None:
        self.open = False

    def check(self) -> None:
        if not self.open:
            raise UnavailableError("server is shutting down")
