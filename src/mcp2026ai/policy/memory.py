"""Peak resident-memory growth of this process while a plan is measured (Linux ``/proc``, no psutil).

``start()`` records the current RSS and resets the kernel's high-water mark (``VmHWM``) by writing
``5`` to ``/proc/self/clear_refs``; ``peak_mb()`` is then ``VmHWM - baseline``. Where the reset is not
permitted, RSS sampled after each run stands in for the high-water mark. Sessions measured one after
another in one process share the heap, so :func:`release_freed_memory` runs between them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
import time
import weakref
from pathlib import Path
from typing import Any

_SELF = Path("/proc/self")


def release_freed_memory() -> None:
    """Return freed heap pages to the OS (glibc ``malloc_trim``) so the next baseline is honest."""
    gc.collect()
    _trim_heap()


def _trim_heap() -> None:
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


def footprint_baseline(collect: bool) -> int | None:
    """The RSS to measure a load's footprint from (blocking: run it off the event loop). Freed heap
    pages of earlier work are returned first, and with ``collect`` its garbage too: a collection or a
    trim during the load (a best-effort build trims its arena) would otherwise give back pages
    resident before it, and the load's growth would read as less than it holds (a suite's garbage
    made ResNet-50 read as ~0). A full collection holds the GIL (~130 ms in a process with torch
    imported), so callers ask for it only where the footprint decides something (a memory budget)."""
    if collect:
        gc.collect()
    _trim_heap()
    return resident_bytes()


LATE_TRIMS_S = (1.0, 3.0, 10.0)
"""Seconds after a release when the heap is trimmed again: what a part of an engine still held for a
moment (a session in a worker thread's locals, a request's last frame) frees late, and glibc keeps
freed pages until the next ``malloc_trim``. Where one of the released objects is still alive then,
garbage is collected first: an engine in a reference cycle, last held by a stream's frame, is not
freed when that frame lets go, and an idle server may not run a full collection for minutes (the
unload test's HTTP half freed 100 of 537 MiB in 20 s under the full suite)."""


def release_when_freed(objects: list[Any]) -> None:
    """Free what ``objects`` held now, again when the last of them still referenced elsewhere (a
    stream's frame, a worker thread's locals) is finally collected, and at :data:`LATE_TRIMS_S` for
    parts of them freed later still: glibc keeps freed pages until ``malloc_trim``, so memory freed
    after one trim would otherwise stay resident. The caller must hold no other reference:
    ``objects`` is emptied."""
    survivors = [weakref.ref(item) for item in objects]
    objects.clear()
    release_freed_memory()
    for survivor in survivors:
        alive = survivor()
        if alive is not None:
            weakref.finalize(alive, _trim_heap)
        del alive
    if LATE_TRIMS_S:
        late = threading.Thread(target=_release_late, args=(survivors,), name="mcp-late-release", daemon=True)
        late.start()


def _release_late(survivors: list[weakref.ref[Any]]) -> None:
    started = time.monotonic()
    for delay_s in LATE_TRIMS_S:
        time.sleep(max(0.0, started + delay_s - time.monotonic()))
        if any(survivor() is not None for survivor in survivors):
            gc.collect()  # a cycle its last holder let go of (its finalizer trims too)
        _trim_heap()


def _status_kb(status: Path, key: str) -> int | None:
    try:
        text = status.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(key + ":"):
            fields = line.split()
            return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return None


def resident_bytes() -> int | None:
    """This process's resident memory now (``VmRSS``), or None where /proc is not readable."""
    kb = _status_kb(_SELF / "status", "VmRSS")
    return None if kb is None else kb * 1024


class MemoryMeter:
    """Measures how much resident memory was added at peak since :meth:`start`."""

    def __init__(self, proc_self: Path = _SELF) -> None:
        self._status = proc_self / "status"
        self._clear_refs = proc_self / "clear_refs"
        self._baseline_kb: int | None = None
        self._peak_kb = 0
        self._hwm_reset = False

    def start(self) -> None:
        self._baseline_kb = _status_kb(self._status, "VmRSS")
        self._peak_kb = self._baseline_kb or 0
        try:
            self._clear_refs.write_text("5", encoding="ascii")
            self._hwm_reset = True
        except OSError:
            self._hwm_reset = False

    def sample(self) -> None:
        rss = _status_kb(self._status, "VmRSS")
        if rss is not None:
            self._peak_kb = max(self._peak_kb, rss)

    def peak_mb(self) -> float | None:
        """Peak growth in MiB since start(), or None where /proc is not readable."""
        if self._baseline_kb is None:
            return None
        self.sample()
        peak = self._peak_kb
        if self._hwm_reset:
            peak = max(peak, _status_kb(self._status, "VmHWM") or 0)
        return round(max(0, peak - self._baseline_kb) / 1024, 2)
