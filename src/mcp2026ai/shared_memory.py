"""Triton's system shared memory extension: clients register POSIX shared memory regions
(``/dev/shm/<key>``) and name them in requests, so tensors travel through memory instead of the socket.

A request input names a region, an offset and a byte size to read its data from; a requested output
names one to be written into (the response then carries only its name, datatype and shape). Every
bound is checked against the registered region, and a region's key must name a file directly under
``/dev/shm``.

A region is a regular file the server's own user owns, opened as glibc's ``shm_open`` opens it
(``O_NOFOLLOW``: a symbolic link planted in the world-writable /dev/shm is refused, not followed).
Its bytes are read and written with ``pread`` / ``pwrite`` on the open descriptor, never through a
mapping: a client that truncates its file afterwards gets an error naming the region, where a mapped
page past the end would kill the server with SIGBUS. Registering and listing regions needs the
``shm`` token scope (server/http/auth.py), and ``--disable-api shared-memory`` switches them off.

CUDA shared memory is not available here (no GPU): its status is empty, unregistering
succeeds, registering fails with a clear error, as on a GPU-less Triton.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, InvalidInputError, NotFoundError

SHM_ROOT = Path("/dev/shm")
_KEY = re.compile(r"/?[A-Za-z0-9_.\-]{1,255}")


@dataclass(frozen=True)
class RegionRef:
    """Where a tensor's bytes are: a registered region, an offset in it and a byte count."""

    region: str
    byte_size: int
    offset: int = 0


@dataclass
class Region:
    name: str
    key: str
    offset: int
    byte_size: int
    descriptor: int = field(repr=False)

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "offset": self.offset, "byte_size": self.byte_size}


class SharedMemoryRegions:
    """The system shared memory regions registered with this server process."""

    def __init__(self, root: Path = SHM_ROOT) -> None:
        self.root = root
        self._regions: dict[str, Region] = {}

    def register(self, name: str, key: str, offset: int, byte_size: int) -> None:
        if not name:
            raise InvalidArgumentError("a shared memory region needs a name")
        if name in self._regions:
            raise AlreadyExistsError(f"shared memory region '{name}' is already registered")
        if not _KEY.fullmatch(key or ""):
            raise InvalidArgumentError(f"shared memory key {key[:100]!r} must name a file directly under {self.root}")
        if offset < 0 or byte_size <= 0:
            raise InvalidArgumentError(f"shared memory region '{name}': offset {offset} / byte_size {byte_size}")
        descriptor = _open_region_file(self.root / key.lstrip("/"), name, key)
        try:
            size = os.fstat(descriptor).st_size
            if offset + byte_size > size:
                raise InvalidArgumentError(
                    f"shared memory region '{name}': offset {offset} + byte_size {byte_size} exceeds its {size} bytes"
                )
        except BaseException:
            os.close(descriptor)
            raise
        self._regions[name] = Region(name, key, offset, byte_size, descriptor)

    def status(self, name: str | None = None) -> list[dict[str, Any]]:
        if name:
            return [self._get(name).status()]
        return [region.status() for region in self._regions.values()]

    def unregister(self, name: str | None = None) -> None:
        names = [name] if name else list(self._regions)
        for each in names:
            region = self._regions.pop(each, None)
            if region is not None:
                os.close(region.descriptor)

    def read(self, ref: RegionRef, what: str) -> bytes:
        region = self._get(ref.region)
        start = self._bounds(region, ref, what)
        data = os.pread(region.descriptor, ref.byte_size, start)
        if len(data) < ref.byte_size:
            raise InvalidInputError(f"{what}: shared memory region '{region.name}' was truncated by its owner")
        return data

    def write(self, ref: RegionRef, data: bytes, what: str) -> int:
        """Write ``data`` into the region; returns the bytes written."""
        region = self._get(ref.region)
        if len(data) > ref.byte_size:
            raise InvalidInputError(
                f"{what}: {len(data)} bytes do not fit the {ref.byte_size} bytes given in region '{ref.region}'"
            )
        start = self._bounds(region, ref, what)
        if os.fstat(region.descriptor).st_size < start + len(data):  # pwrite would grow the file
            raise InvalidInputError(f"{what}: shared memory region '{region.name}' was truncated by its owner")
        return os.pwrite(region.descriptor, data, start)

    def close(self) -> None:
        self.unregister()

    def _get(self, name: str) -> Region:
        region = self._regions.get(name)
        if region is None:
            raise NotFoundError(f"Unable to find system shared memory region: '{name[:100]}'")
        return region

    @staticmethod
    def _bounds(region: Region, ref: RegionRef, what: str) -> int:
        if ref.offset < 0 or ref.byte_size < 0 or ref.offset + ref.byte_size > region.byte_size:
            raise InvalidInputError(
                f"{what}: offset {ref.offset} + byte_size {ref.byte_size} is outside shared memory region "
                f"'{region.name}' ({region.byte_size} bytes)"
            )
        return region.offset + ref.offset


def _open_region_file(path: Path, name: str, key: str) -> int:
    """An open descriptor of ``path``: a regular file (not a link) owned by this process's user."""
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidArgumentError(
            f"unable to open shared memory region '{name}' (key {key[:100]!r}): {exc.strerror} "
            "(a regular file under /dev/shm owned by the server's user; symbolic links are not followed)"
        ) from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(descriptor)
        raise InvalidArgumentError(
            f"unable to open shared memory region '{name}' (key {key[:100]!r}): not a regular file owned by the "
            "server's user"
        )
    return descriptor


def region_ref(parameters: dict[str, Any], what: str) -> RegionRef | None:
    """The shared memory reference in a tensor's parameters, if it has one (v2 parameter names)."""
    name = parameters.get("shared_memory_region")
    if name is None:
        return None
    size, offset = parameters.get("shared_memory_byte_size"), parameters.get("shared_memory_offset", 0)
    if not isinstance(name, str) or not isinstance(size, int) or not _is_count(size) or not _is_count(offset):
        raise InvalidInputError(
            f"{what}: shared_memory_region needs a name and non-negative shared_memory_byte_size / _offset"
        )
    return RegionRef(name, size, int(offset))


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
