"""Triton's ``file:`` load parameters: a model file sent with the load request is registered as a
version of the model (or the version with the same content is reused) and that version is loaded.

One ONNX file, keyed ``file:<version dir>/<name>.onnx`` (Triton's layout); over HTTP its content is
base64 text, over gRPC bytes. Triton requires the ``config`` parameter beside it, and so do we.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry, ModelVersion

FILE_PREFIX = "file:"


def sent_file(name: str, parameters: Mapping[str, Any]) -> tuple[str, bytes] | None:
    """The one model file among the load ``parameters`` (key, content); None when none was sent."""
    keys = [key for key in parameters if key.startswith(FILE_PREFIX)]
    if not keys:
        return None
    if len(keys) > 1:
        raise InvalidArgumentError(f"load {name!r}: one model file is accepted, got {len(keys)} file: parameters")
    key = keys[0]
    if "config" not in parameters:
        raise InvalidArgumentError(f"load {name!r}: {key[:100]} needs the 'config' parameter beside it (as Triton)")
    if not key.endswith(".onnx"):
        raise InvalidArgumentError(f"load {name!r}: {key[:100]} is not an ONNX file (*.onnx)")
    return key, _content(name, key, parameters[key])


def _content(name: str, key: str, value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError(f"load {name!r}: {key[:100]} must be base64 text or bytes")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(f"load {name!r}: {key[:100]} is not valid base64") from None


async def register_sent_file(registry: ModelRegistry, name: str, key: str, content: bytes) -> ModelVersion:
    """Register ``content`` (sent as ``key``) as a version of ``name``, reusing one with the same content;
    a file that is no valid model is an InvalidArgumentError naming the key."""

    def register() -> ModelVersion:
        with tempfile.TemporaryDirectory(prefix="mcp-load-") as folder:
            path = Path(folder) / "model.onnx"
            path.write_bytes(content)
            try:
                return registry.register_or_reuse(name, path)
            except InvalidArgumentError as exc:
                detail = str(exc).replace(str(path), "").lstrip(": ")
                raise InvalidArgumentError(f"load {name!r}: {key[:100]}: {detail}") from None

    return await asyncio.to_thread(register)
