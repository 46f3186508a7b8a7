"""Starting real services for tests: a free loopback port, waiting for it to listen, a child process."""

from __future__ import annotations

import shutil
import socket
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s:.0f} s")


def venv_executable(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def missing_service(what: str, install: str) -> None:
    """Skip on a developer's machine without ``what``; in CI (which installs it) fail instead."""
    import os

    message = f"{what} is not installed ({install})"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
