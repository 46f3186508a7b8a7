"""The one interface every artifact backend implements: named immutable objects.

A name is ``<sha256 hex><suffix>`` (``.onnx``, an LLM bundle's member or manifest suffix, plus
``.enc`` when encrypted at rest). Objects are written whole or not at all, never changed, and read
back through a local file: the caller (:class:`mcp2026ai.registry.store.ArtifactStore`) hashes what
it gets against the digest in the name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol


class BlobStore(Protocol):
    """put / get / exists by content name."""

    location: str
    """Where the objects live, for messages (a folder, or ``s3://bucket/prefix``); never a credential."""

    def exists(self, name: str) -> bool: ...

    def put_file(self, name: str, source: Path) -> None:
        """Store ``source``'s bytes under ``name``; readers see all of it or nothing."""
        ...

    def put_bytes(self, name: str, data: bytes) -> None: ...

    def local_path(self, name: str) -> Path:
        """Where the object's local copy is or would be (unchecked)."""
        ...

    def fetch(self, name: str, sha256: str | None) -> Path:
        """A local file with the object's bytes; with ``sha256``, a remote copy is checked against it
        as it arrives (IntegrityError, nothing kept). NotFoundError when there is no such object."""
        ...

    def forget_local(self, name: str) -> bool:
        """Drop the object's local copy when it is only a cache of a remote object (so the next
        :meth:`fetch` downloads and checks it again); False when the local file is the object."""
        ...

    def delete(self, name: str) -> None:
        """Remove the object (and any local copy); no error when absent."""
        ...

    def names(self) -> Iterator[str]:
        """Every stored object's name."""
        ...
