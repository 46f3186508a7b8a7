"""A bounded folder of fetched objects on one node: least recently used files go first."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from mcp2026ai.security.files import private_dir

INCOMING_PREFIX = ".incoming-"


class BlobCache:
    """``root/ab/<name>``; :meth:`admit` moves a fully written, checked file in and trims the folder to
    ``max_bytes``. A hit sets the file's access time (not its modification time, by which a process
    knows it has already hashed the file), and the least recently accessed files are evicted first."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        private_dir(root)

    def path(self, name: str) -> Path:
        return self.root / name[:2] / name

    def hit(self, name: str) -> Path | None:
        path = self.path(name)
        try:
            os.utime(path, ns=(time.time_ns(), path.stat().st_mtime_ns))
        except FileNotFoundError:
            return None
        return path

    def incoming(self, name: str) -> Path:
        """A fresh temporary file beside where ``name`` will live (invisible to :meth:`hit`)."""
        folder = self.path(name).parent
        private_dir(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=INCOMING_PREFIX)
        os.close(fd)
        return Path(tmp)

    def admit(self, tmp: Path, name: str) -> Path:
        target = self.path(name)
        os.chmod(tmp, 0o400)  # owner only, as the local store's objects
        os.replace(tmp, target)
        os.utime(target, ns=(time.time_ns(), target.stat().st_mtime_ns))
        self.trim(keep=target)
        return target

    def discard(self, name: str) -> None:
        self.path(name).unlink(missing_ok=True)

    def trim(self, keep: Path | None = None) -> None:
        files = [path for path in self.root.glob("*/*") if not path.name.startswith(".")]
        stats = []
        for path in files:
            with contextlib.suppress(FileNotFoundError):
                info = path.stat()
                stats.append((info.st_atime_ns, info.st_size, path))
        total = sum(size for _, size, _ in stats)
        for _, size, path in sorted(stats):
            if total <= self.max_bytes:
                break
            if path != keep:
                path.unlink(missing_ok=True)
                total -= size
