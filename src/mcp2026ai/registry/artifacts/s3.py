"""Artifacts in S3-compatible object storage (``MCP_ARTIFACT_URL=s3://bucket/prefix``), through boto3.

Credentials and endpoint come from boto3's usual sources (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, profiles). Uploads go through boto3's transfer
manager: multipart above ``multipart_bytes``, and S3 makes an object visible only once its PUT or its
multipart upload completes, so a reader never sees half an object. Fetched objects land in a bounded
per-node :class:`BlobCache`, checked against their sha256 on the way in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp2026ai.errors import IntegrityError, NotFoundError
from mcp2026ai.registry.artifacts.cache import BlobCache
from mcp2026ai.registry.artifacts.s3_client import S3Location, s3_call, s3_client

DEFAULT_MULTIPART_BYTES = 64 << 20
_CHUNK = 1 << 20


class S3Blobs:
    """Objects under ``s3://bucket/prefix/objects/ab/<name>``."""

    def __init__(
        self, where: S3Location, cache: BlobCache, client: Any = None, multipart_bytes: int = DEFAULT_MULTIPART_BYTES
    ) -> None:
        self.where = where
        self.location = where.url
        self.cache = cache
        self.client = client if client is not None else s3_client()
        self.multipart_bytes = multipart_bytes

    @classmethod
    def from_url(cls, url: str, cache_root: Path, cache_bytes: int, multipart_bytes: int) -> S3Blobs:
        return cls(S3Location.parse(url), BlobCache(cache_root, cache_bytes), multipart_bytes=multipart_bytes)

    def key(self, name: str) -> str:
        return self.where.key(f"objects/{name[:2]}/{name}")

    def local_path(self, name: str) -> Path:
        return self.cache.path(name)

    def exists(self, name: str) -> bool:
        with s3_call(self.where, name) as missing:
            self.client.head_object(Bucket=self.where.bucket, Key=self.key(name))
        return not missing

    def put_file(self, name: str, source: Path) -> None:
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(multipart_threshold=self.multipart_bytes, multipart_chunksize=self.multipart_bytes)
        with s3_call(self.where, name, missing_is_error=True):
            self.client.upload_file(str(source), self.where.bucket, self.key(name), Config=config)

    def put_bytes(self, name: str, data: bytes) -> None:
        with s3_call(self.where, name, missing_is_error=True):
            self.client.put_object(Bucket=self.where.bucket, Key=self.key(name), Body=data)

    def fetch(self, name: str, sha256: str | None) -> Path:
        cached = self.cache.hit(name)
        if cached is not None:
            return cached
        tmp = self.cache.incoming(name)
        try:
            self._download(name, tmp)
            if sha256 is not None and _sha256_of(tmp) != sha256:
                raise IntegrityError(
                    f"artifact {self.location}/{self.key(name).removeprefix(self.where.prefix)} does not match its "
                    f"sha256 {sha256[:12]} (corrupted or altered in the bucket); it will not be loaded"
                )
            return self.cache.admit(tmp, name)
        finally:
            tmp.unlink(missing_ok=True)

    def _download(self, name: str, target: Path) -> None:
        with s3_call(self.where, name) as missing:
            self.client.download_file(self.where.bucket, self.key(name), str(target))
        if missing:
            raise NotFoundError(f"artifact {name[:12]} is missing from {self.location}")

    def forget_local(self, name: str) -> bool:
        self.cache.discard(name)
        return True

    def delete(self, name: str) -> None:
        with s3_call(self.where, name, missing_is_error=True):
            self.client.delete_object(Bucket=self.where.bucket, Key=self.key(name))
        self.cache.discard(name)

    def names(self) -> Iterator[str]:
        prefix = self.where.key("objects/")
        with s3_call(self.where, "objects/", missing_is_error=True):
            pages = list(self.client.get_paginator("list_objects_v2").paginate(Bucket=self.where.bucket, Prefix=prefix))
        for page in pages:
            for item in page.get("Contents", []):
                yield str(item["Key"]).rsplit("/", 1)[-1]


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
