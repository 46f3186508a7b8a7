"""Content-addressed artifact store."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from mcp2026ai.registry.store import ArtifactStore, sha256_of


def test_put_stores_under_sha256(tmp_path: Path) -> None:
    source = tmp_path / "a.onnx"
    source.write_bytes(b"model bytes")
    store = ArtifactStore(tmp_path / "store")
    digest = store.put(source)
    assert digest == hashlib.sha256(b"model bytes").hexdigest() == sha256_of(source)
    target = store.path_for(digest)
    assert target == tmp_path / "store" / "objects" / digest[:2] / f"{digest}.onnx"
    assert target.read_bytes() == b"model bytes"
    assert not stat.S_IMODE(target.stat().st_mode) & 0o222, "artifacts are read-only"
    assert store.exists(digest)


def test_same_content_is_stored_once(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "store")
    first, second = tmp_path / "1.onnx", tmp_path / "2.onnx"
    first.write_bytes(b"same")
    second.write_bytes(b"same")
    assert store.put(first) == store.put(second)
    assert len(list((tmp_path / "store" / "objects").rglob("*.onnx"))) == 1
    assert not list((tmp_path / "store").rglob(".incoming-*"))


def test_large_file_digest_spans_chunks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # > 1 MiB read chunk
    source = tmp_path / "big.onnx"
    source.write_bytes(data)
    assert sha256_of(source) == hashlib.sha256(data).hexdigest()


def test_delete_is_idempotent(tmp_path: Path) -> None:
    source = tmp_path / "a.onnx"
    source.write_bytes(b"x")
    store = ArtifactStore(tmp_path / "store")
    digest = store.put(source)
    store.delete(digest)
    assert not store.exists(digest)
    store.delete(digest)
    assert store.put(source) == digest and store.exists(digest)
