"""S3 artifacts on moto's real server: multipart uploads for large files, the bounded node cache."""

from __future__ import annotations

import os
from pathlib import Path

from mcp2026ai.registry.artifacts.cache import BlobCache
from mcp2026ai.registry.artifacts.s3 import S3Blobs
from mcp2026ai.registry.artifacts.s3_client import S3Location
from mcp2026ai.registry.store import ArtifactStore
from tests.support.stores import Backend

PART = 5 << 20  # S3's smallest multipart part


def s3_store(backend: Backend, root: Path, cache_bytes: int = 1 << 30) -> ArtifactStore:
    blobs = S3Blobs(S3Location.parse(f"s3://{backend.bucket}/p"), BlobCache(root / "cache", cache_bytes), None, PART)
    return ArtifactStore(root, blobs=blobs)


def test_a_large_file_goes_up_in_parts_and_comes_back_checked(shared_stores: Backend, tmp_path: Path) -> None:
    source = tmp_path / "big.onnx"
    source.write_bytes(os.urandom(PART + 4096))
    store = s3_store(shared_stores, tmp_path / "node")
    digest = store.put(source)
    assert shared_stores.s3 is not None
    head = shared_stores.s3.client().head_object(
        Bucket=shared_stores.bucket, Key=f"p/objects/{digest[:2]}/{digest}.onnx"
    )
    assert head["ETag"].strip('"').endswith("-2"), "uploaded as a two-part multipart upload"
    fetched = s3_store(shared_stores, tmp_path / "other-node").verified_path(digest)
    assert fetched.read_bytes() == source.read_bytes()


def test_the_node_cache_keeps_the_recent_objects_within_its_bound(shared_stores: Backend, tmp_path: Path) -> None:
    writer = s3_store(shared_stores, tmp_path / "writer")
    digests = []
    for index in range(3):
        source = tmp_path / f"{index}.onnx"
        source.write_bytes(bytes([index]) * 1000)
        digests.append(writer.put(source))
    reader = s3_store(shared_stores, tmp_path / "reader", cache_bytes=2500)
    for digest in digests:
        assert reader.read(digest)[:1] == bytes([digests.index(digest)])
    cached = sorted(path.name for path in (tmp_path / "reader" / "cache").glob("*/*"))
    assert cached == sorted(f"{digest}.onnx" for digest in digests[1:]), "the least recently used went first"
    assert reader.exists(digests[0]), "evicted from the cache, still in the bucket"


def test_cache_admits_only_whole_files(tmp_path: Path) -> None:
    cache = BlobCache(tmp_path, max_bytes=10)
    incoming = cache.incoming("ab-one")
    incoming.write_bytes(b"12345")
    assert cache.hit("ab-one") is None, "not visible before it is admitted"
    admitted = cache.admit(incoming, "ab-one")
    assert admitted.read_bytes() == b"12345"
    modified = admitted.stat().st_mtime_ns
    assert cache.hit("ab-one") == admitted
    assert admitted.stat().st_mtime_ns == modified, "a hit leaves the time a process's hash check is keyed on"


def test_a_damaged_cached_copy_is_fetched_again(shared_stores: Backend, tmp_path: Path) -> None:
    source = tmp_path / "m.onnx"
    source.write_bytes(b"model bytes")
    store = s3_store(shared_stores, tmp_path / "node")
    digest = store.put(source)
    cached = store.verified_path(digest)
    os.chmod(cached, 0o644)
    cached.write_bytes(b"bit rot")
    again = s3_store(shared_stores, tmp_path / "node")  # a new process on the same node
    assert again.verified_path(digest).read_bytes() == b"model bytes"
