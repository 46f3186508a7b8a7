"""Content-addressed artifact store: files kept under their sha256 digest, optionally encrypted."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mcp2026ai.errors import IntegrityError, NotFoundError, SignatureError

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
    """``root/objects/ab/abcdef....onnx``: immutable, deduplicated, written atomically.

    With a ``cipher``, new artifacts are written encrypted as ``....onnx.enc`` (the digest stays
    that of the plaintext) and must be read with :meth:`read`; plaintext artifacts stored earlier
    stay readable.
    """

    def __init__(self, root: Path, cipher: ArtifactCipher | None = None) -> None:
        self.root = root
        self.cipher = cipher
        self._verified = VerifiedFiles()
        (root / "objects").mkdir(parents=True, exist_ok=True)

    def path_for(self, digest: str, suffix: str = ".onnx") -> Path:
        """Where the artifact lives (unchecked: to load it, use :meth:`verified_path` or :meth:`read`)."""
        return self.root / "objects" / digest[:2] / f"{digest}{suffix}"

    def verified_path(self, digest: str, suffix: str = ".onnx") -> Path:
        """The artifact's file after checking that its content still hashes to ``digest``."""
        return self._verified.check(self.path_for(digest, suffix), digest)

    def encrypted_path_for(self, digest: str, suffix: str = ".onnx") -> Path:
        return self.path_for(digest, suffix + ENCRYPTED_SUFFIX)

    def put(self, source: Path, suffix: str = ".onnx") -> str:
        """Copy ``source`` in (if not already there) and return its sha256 digest."""
        digest = sha256_of(source)
        if self.exists(digest, suffix):
            return digest
        if self.cipher is not None:
            self._write(self.encrypted_path_for(digest, suffix), self.cipher.encrypt(source.read_bytes(), digest))
        else:
            self._write(self.path_for(digest, suffix), source)
        return digest

    def read(self, digest: str, suffix: str = ".onnx") -> bytes:
        """The artifact's plaintext bytes, decrypting when it is stored encrypted."""
        encrypted = self.encrypted_path_for(digest, suffix)
        if encrypted.exists():
            if self.cipher is None:
                raise SignatureError(f"{encrypted}: artifact is encrypted at rest; set MCP_ARTIFACT_KEY_FILE")
            return self.cipher.decrypt(encrypted.read_bytes(), digest)
        path = self.path_for(digest, suffix)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"artifact {digest[:12]} is missing from {self.root}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise integrity_error(path, digest)
        return data

    def is_encrypted(self, digest: str, suffix: str = ".onnx") -> bool:
        return self.encrypted_path_for(digest, suffix).exists()

    def exists(self, digest: str, suffix: str = ".onnx") -> bool:
        return self.path_for(digest, suffix).exists() or self.is_encrypted(digest, suffix)

    def delete(self, digest: str, suffix: str = ".onnx") -> None:
        self.path_for(digest, suffix).unlink(missing_ok=True)
        self.encrypted_path_for(digest, suffix).unlink(missing_ok=True)

    @staticmethod
    def _write(target: Path, source: Path | bytes) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        os.close(fd)
        try:
            if isinstance(source, bytes):
                Path(tmp_name).write_bytes(source)
            else:
                shutil.copyfile(source, tmp_name)
            os.chmod(tmp_name, 0o444)
            os.replace(tmp_name, target)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
