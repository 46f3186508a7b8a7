"""Content-addressed artifact store: blobs kept under their sha256 digest, checked on read, optionally encrypted."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from mcp2026ai.errors import IntegrityError, NotFoundError, SignatureError
from mcp2026ai.registry.artifacts.base import BlobStore
from mcp2026ai.registry.artifacts.local import LocalBlobs

if TYPE_CHECKING:
    from mcp2026ai.security.encryption import ArtifactCipher

_CHUNK = 1 << 20
ENCRYPTED_SUFFIX = ".enc"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def integrity_error(path: Path, digest: str) -> IntegrityError:
    return IntegrityError(
        f"artifact {path} no longer matches its sha256 {digest[:12]} (corrupted or altered on disk since it "
        "was stored); it will not be loaded: register the model file again"
    )


class VerifiedFiles:
    """Files whose content was hashed and matched, remembered by size and modification time, so a file
    is re-hashed only when it may have changed (every load in a new process hashes once)."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[str, int, int]] = {}

    def check(self, path: Path, digest: str) -> Path:
        """``path`` if its content hashes to ``digest``; IntegrityError otherwise, NotFoundError if missing."""
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise NotFoundError(f"artifact {digest[:12]} is missing ({path})") from None
        if self._seen.get(path) == (digest, stat.st_size, stat.st_mtime_ns):
            return path
        if sha256_of(path) != digest:
            self._seen.pop(path, None)
            raise integrity_error(path, digest)
        self._seen[path] = (digest, stat.st_size, stat.st_mtime_ns)
        return path


class ArtifactStore:
    """Immutable, deduplicated artifacts named by their sha256 digest, on a :class:`BlobStore`
    (the local folder ``root/objects/ab/abcdef....onnx`` unless one is given).

    Every read is checked against the digest. With a ``cipher``, new artifacts are written encrypted
    as ``....onnx.enc`` (the digest stays that of the plaintext) and must be read with :meth:`read`;
    plaintext artifacts stored earlier stay readable. ``root`` is always a local folder: the objects
    themselves by default, a node's scratch space next to a remote store.
    """

    def __init__(self, root: Path, cipher: ArtifactCipher | None = None, blobs: BlobStore | None = None) -> None:
        self.root = root
        self.cipher = cipher
        self.blobs: BlobStore = blobs if blobs is not None else LocalBlobs(root)
        self._verified = VerifiedFiles()
        root.mkdir(parents=True, exist_ok=True)

    @property
    def location(self) -> str:
        return self.blobs.location

    def path_for(self, digest: str, suffix: str = ".onnx") -> Path:
        """Where the artifact's local copy lives (unchecked: to load it, use :meth:`verified_path` or :meth:`read`)."""
        return self.blobs.local_path(f"{digest}{suffix}")

    def verified_path(self, digest: str, suffix: str = ".onnx") -> Path:
        """The artifact's local file after checking that its content still hashes to ``digest`` (a
        damaged cached copy of a remote object is dropped and fetched again, once)."""
        name = f"{digest}{suffix}"
        try:
            return self._verified.check(self.blobs.fetch(name, digest), digest)
        except IntegrityError:
            if not self.blobs.forget_local(name):
                raise
        return self._verified.check(self.blobs.fetch(name, digest), digest)

    def encrypted_path_for(self, digest: str, suffix: str = ".onnx") -> Path:
        return self.path_for(digest, suffix + ENCRYPTED_SUFFIX)

    def put(self, source: Path, suffix: str = ".onnx") -> str:
        """Copy ``source`` in (if not already there) and return its sha256 digest."""
        digest = sha256_of(source)
        if self.exists(digest, suffix):
            return digest
        if self.cipher is not None:
            sealed = self.cipher.encrypt(source.read_bytes(), digest)
            self.blobs.put_bytes(f"{digest}{suffix}{ENCRYPTED_SUFFIX}", sealed)
        else:
            self.blobs.put_file(f"{digest}{suffix}", source)
        return digest

    def read(self, digest: str, suffix: str = ".onnx") -> bytes:
        """The artifact's plaintext bytes, decrypting when it is stored encrypted."""
        if self.is_encrypted(digest, suffix):
            if self.cipher is None:
                where = self.encrypted_path_for(digest, suffix)
                raise SignatureError(f"{where}: artifact is encrypted at rest; set MCP_ARTIFACT_KEY_FILE")
            sealed = self.blobs.fetch(f"{digest}{suffix}{ENCRYPTED_SUFFIX}", None).read_bytes()
            return self.cipher.decrypt(sealed, digest)
        path = self.verified_path(digest, suffix)
        data = path.read_bytes()  # checked again: the file may have changed since it was checked
        if hashlib.sha256(data).hexdigest() != digest:
            raise integrity_error(path, digest)
        return data

    def is_encrypted(self, digest: str, suffix: str = ".onnx") -> bool:
        return self.blobs.exists(f"{digest}{suffix}{ENCRYPTED_SUFFIX}")

    def exists(self, digest: str, suffix: str = ".onnx") -> bool:
        return self.blobs.exists(f"{digest}{suffix}") or self.is_encrypted(digest, suffix)

    def delete(self, digest: str, suffix: str = ".onnx") -> None:
        self.blobs.delete(f"{digest}{suffix}")
        self.blobs.delete(f"{digest}{suffix}{ENCRYPTED_SUFFIX}")
