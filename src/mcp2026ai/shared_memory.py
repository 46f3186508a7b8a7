"""Triton's system shared memory extension: clients register POSIX shared memory regions
(``/dev/shm/<key>``) and name them in requests, so tensors travel through memory instead of the socket.

A request input names a region, an offset and a byte size to read its data from; a requested output
names one to be written into (the response then carries only its name, datatype and shape). Every
bound is checked against the registered region, and a region's key must name a file directly under
``/dev/shm``. CUDA shared memory is not available here (no GPU): its status is empty, unregistering
succeeds, registering fails with a clear error, as on a GPU-less Triton.
"""

from __future__ import annotations

import mmap
import os
import re
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
    memory: mmap.mmap = field(repr=False)

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
        path = self.root / key.lstrip("/")
        try:
            descriptor = os.open(path, os.O_RDWR)
        except OSError as exc:
            raise InvalidArgumentError(
                f"unable to open shared memory region '{name}' (key {key!r}): {exc.strerror}"
            ) from None
        try:
            size = os.fstat(descriptor).st_size
            if offset + byte_size > size:
                raise InvalidArgumentError(
                    f"shared memory region '{name}': offset {offset} + byte_size {byte_size} exceeds its {size} bytes"
                )
            memory = mmap.mmap(descriptor, size)
        finally:
            os.close(descriptor)
        self._regions[name] = Region(name, key, offset, byte_size, memory)

    def status(self, name: str | None = None) -> list[dict[str, Any]]:
        if name:
            return [self._get(name).status()]
        return [region.status() for region in self._regions.values()]

    def unregister(self, name: str | None = None) -> None:
        names = [name] if name else list(self._regions)
        for each in names:
            region = self._regions.pop(each, None)
            if region is not None:
                region.memory.close()

    def read(self, ref: RegionRef, what: str) -> bytes:
        region = self._get(ref.region)
        start = self._bounds(region, ref, what)
        return bytes(region.memory[start : start + ref.byte_size])

    def write(self, ref: RegionRef, data: bytes, what: str) -> int:
        """Write ``data`` into the region; returns the bytes written."""
        region = self._get(ref.region)
        if len(data) > ref.byte_size:
            raise InvalidInputError(
                f"{what}: {len(data)} bytes do not fit the {ref.byte_size} bytes given in region '{ref.region}'"
            )
        start = self._bounds(region, ref, what)
        region.memory[start : start + len(data)] = data
        return len(data)

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
