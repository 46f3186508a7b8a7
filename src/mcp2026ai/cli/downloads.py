"""``mcp model register --path URL``: download with a progress bar on stderr, register, clean up."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable

from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from mcp2026ai.cli.output import error_console
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.redaction import redacted_url
from mcp2026ai.registry.remote_sources import download


def register_remote(registry: ModelRegistry, source: str, register: Callable[..., ModelVersion]) -> ModelVersion:
    """Download ``source`` under the registry's scratch folder and ``register(local_path, audit_details=...)``
    it; the audit entry records the location without credentials."""
    shown = redacted_url(source)
    folder = registry.home / "tmp" / f"download-{uuid.uuid4().hex}"
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    try:
        with Progress(
            *columns, console=error_console, transient=True, disable=not error_console.is_terminal
        ) as progress:
            task = progress.add_task(f"downloading {shown}", total=None)
            local = download(source, folder, lambda done, total: progress.update(task, completed=done, total=total))
        return register(local, audit_details={"source": shown})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
