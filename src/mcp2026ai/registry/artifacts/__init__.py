"""Where artifact bytes live: the local content-addressed folder (default) or S3-compatible storage.

:class:`mcp2026ai.registry.store.ArtifactStore` hashes, verifies and encrypts; the blob stores here
only keep named immutable objects (``<sha256><suffix>``). :func:`blob_store_for` picks one from
``MCP_ARTIFACT_URL``.
"""

from __future__ import annotations

from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.artifacts.base import BlobStore
from mcp2026ai.registry.artifacts.local import LocalBlobs

DEFAULT_CACHE_BYTES = 10 << 30
DEFAULT_MULTIPART_BYTES = 64 << 20


def blob_store_for(
    url: str | None,
    root: Path,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    multipart_bytes: int = DEFAULT_MULTIPART_BYTES,
) -> BlobStore:
    """The local folder ``root`` when ``url`` is unset (or ``file://``), an S3 bucket for ``s3://bucket/prefix``
    (with a bounded cache of fetched objects under ``root``)."""
    if not url:
        return LocalBlobs(root)
    if url.startswith("file://"):
        return LocalBlobs(Path(url.removeprefix("file://")))
    if url.startswith("s3://"):
        from mcp2026ai.registry.artifacts.s3 import S3Blobs

        return S3Blobs.from_url(url, root / "s3-cache", cache_bytes, multipart_bytes)
    raise InvalidArgumentError(
        f"MCP_ARTIFACT_URL {url.split('?')[0]!r}: unsupported scheme; use s3://bucket/prefix (or leave it unset)"
    )


__all__ = ["DEFAULT_CACHE_BYTES", "DEFAULT_MULTIPART_BYTES", "BlobStore", "LocalBlobs", "blob_store_for"]
