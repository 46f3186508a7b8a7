"""Cleaning up after a crash: what a killed registration or optimization left behind.

A ``mcp model register`` killed midway can leave a half-copied ``.incoming-*`` file in the store, a
converted model under ``tmp/``, or a whole artifact that no catalog row names; a killed optimization
leaves ``.optimizing-*`` in the policy cache. None of these is ever read, so they only take disk.
:func:`remove_leftovers` deletes them once they are older than ``min_age_s``: a registration that is
still running in another process is never that old.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.store import ENCRYPTED_SUFFIX
from mcp2026ai.registry.text_encoder import tokenizer_digests

log = logging.getLogger(__name__)

DEFAULT_MIN_AGE_S = 3600.0
_TEMP_PREFIXES = (".incoming-", ".optimizing-")


@dataclass(frozen=True)
class Leftovers:
    files: tuple[Path, ...]
    bytes: int


def remove_leftovers(registry: ModelRegistry, min_age_s: float = DEFAULT_MIN_AGE_S) -> Leftovers:
    """Delete temp files, unreferenced artifacts and stale conversions older than ``min_age_s``."""
    cutoff = time.time() - min_age_s
    removed: list[Path] = []
    size = 0
    for path in _candidates(registry):
        try:
            stat = path.stat()
            if stat.st_mtime > cutoff:
                continue
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
        size += stat.st_size
    if removed:
        log.warning("removed %d leftover files (%d bytes) of interrupted registrations", len(removed), size)
    return Leftovers(tuple(removed), size)


def _candidates(registry: ModelRegistry) -> Iterator[Path]:
    home = registry.home
    for folder in (home / "artifacts" / "objects", home / "cache"):
        if folder.is_dir():
            yield from (path for path in folder.rglob(".*") if path.name.startswith(_TEMP_PREFIXES))
    if (home / "tmp").is_dir():
        yield from (path for path in (home / "tmp").rglob("*") if path.is_file())
    in_use = registry.catalog.digests() | tokenizer_digests(registry.catalog.versions())
    objects = home / "artifacts" / "objects"
    if objects.is_dir():
        for path in objects.glob("*/*"):
            digest = path.name.removesuffix(ENCRYPTED_SUFFIX).split(".")[0]
            if not path.name.startswith(".") and digest not in in_use:
                yield path
