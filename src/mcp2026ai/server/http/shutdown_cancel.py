"""A request still running when the drain timeout ends is answered 503, not with uvicorn's text 500.

uvicorn cancels the tasks of requests that outlive ``timeout_graceful_shutdown`` (the server's drain
timeout); the cancellation reaches the app as a ``CancelledError`` carrying uvicorn's message, and
uvicorn then answers ``500 Internal Server Error`` in plain text and logs the traceback. This wrapper,
outermost around the HTTP app, answers such a request (one whose response has not started) with the
protocol's error JSON instead: 503, "the server is shutting down", one log line. A stream already
sending is left to the transport (text generations end their streams before the timeout themselves:
server/lifecycle.py). Any other cancellation (a client gone) passes through untouched.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp2026ai.errors import UnavailableError
from mcp2026ai.server.http.errors import error_response

log = logging.getLogger(__name__)

UVICORN_SHUTDOWN_CANCEL = "timeout graceful shutdown exceeded"
"""The words of uvicorn's cancel message (uvicorn/server.py) that mark a drain-timeout cancellation."""


def is_shutdown_cancel(error: asyncio.CancelledError) -> bool:
    return any(isinstance(arg, str) and UVICORN_SHUTDOWN_CANCEL in arg for arg in error.args)


class AnswerShutdownCancels:
    """ASGI wrapper: see the module's docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_and_note(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        except asyncio.CancelledError as cancelled:
            if started or not is_shutdown_cancel(cancelled):
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            log.warning(
                "%s %s still running at the end of the drain timeout: answered 503", scope["method"], scope["path"]
            )
            refusal = UnavailableError(
                "the server is shutting down: this request did not finish within the drain timeout"
            )
            await error_response(refusal)(scope, receive, send)
