"""The default blob store: ``root/objects/ab/abcdef....onnx``, written atomically; files readable by
their owner only (0400) in 0700 folders."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from mcp2026ai.errors import NotFoundError
from mcp2026ai.security.files import private_dir

INCOMING_PREFIX = ".incoming-"
ARTIFACT_MODE = 0o400


class LocalBlobs:
    """Objects in a local folder (the registry's ``MCP_HOME/artifacts``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)
        private_dir(root / "objects")

    def local_path(self, name: str) -> Path:
        return self.root / "objects" / name[:2] / name

    def exists(self, name: str) -> bool:
        return self.local_path(name).exists()

    def put_file(self, name: str, source: Path) -> None:
        self._write(self.local_path(name), source)

    def put_bytes(self, name: str, data: bytes) -> None:
        self._write(self.local_path(name), data)

    def fetch(self, name: str, sha256: str | None) -> Path:
        path = self.local_path(name)
        if not path.exists():
            raise NotFoundError(f"artifact {name[:12]} is missing from {self.root} ({path})")
        return path

    def forget_local(self, name: str) -> bool:
        return False

    def delete(self, name: str) -> None:
        self.local_path(name).unlink(missing_ok=True)

    def names(self) -> Iterator[str]:
        objects = self.root / "objects"
        return (path.name for path in objects.glob("*/*") if not path.name.startswith("."))

    @staticmethod
    def _write(target: Path, source: Path | bytes) -> None:
        private_dir(target.parent)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=INCOMING_PREFIX)
        os.close(fd)
        try:
            if isinstance(source, bytes):
                Path(tmp_name).write_bytes(source)
            else:
                shutil.copyfile(source, tmp_name)
            os.chmod(tmp_name, ARTIFACT_MODE)
            os.replace(tmp_name, target)
        finally:
            if os.path.exists(tmp_name):
                os.unlink(tmp_name)
