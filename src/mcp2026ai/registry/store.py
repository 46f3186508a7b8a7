"""Content-addressed artifact store: files kept under their sha256 digest."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class ArtifactStore:
    """``root/objects/ab/abcdef....onnx``: immutable, deduplicated, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "objects").mkdir(parents=True, exist_ok=True)

    def path_for(self, digest: str, suffix: str = ".onnx") -> Path:
        return self.root / "objects" / digest[:2] / f"{digest}{suffix}"

    def put(self, source: Path, suffix: str = ".onnx") -> str:
        """Copy ``source`` in (if not already there) and return its sha256 digest."""
        digest = sha256_of(source)
        target = self.path_for(digest, suffix)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        os.close(fd)
        try:
            shutil.copyfile(source, tmp_name)
            os.chmod(tmp_name, 0o444)
            os.replace(tmp_name, target)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
        return digest

    def exists(self, digest: str, suffix: str = ".onnx") -> bool:
        return self.path_for(digest, suffix).exists()

    def delete(self, digest: str, suffix: str = ".onnx") -> None:
        self.path_for(digest, suffix).unlink(missing_ok=True)
