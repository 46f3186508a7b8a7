"""Keep onnxruntime's threads on the CPUs this process may use.

onnxruntime pins its intra-op worker threads itself, spread over every CPU of the machine, whatever
the process's own CPU mask: a server started with ``taskset -c 0``, ``numactl`` or another
CPU-affinity mask would still run its model threads on CPUs it was kept off. When the mask holds
fewer CPUs than the machine, the session gets one worker per allowed CPU by default and every
worker's affinity is the allowed set (the operating system schedules within it).
"""

from __future__ import annotations

import os

import onnxruntime as ort

AFFINITY_ENTRY = "session.intra_op_thread_affinities"


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity masks on this platform
        return os.cpu_count() or 1


def confined_cpus() -> list[int] | None:
    """The CPUs this process may run on, when they are fewer than the machine's; None otherwise."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return allowed if allowed and len(allowed) < (os.cpu_count() or len(allowed)) else None


def affinity_setting(cpus: list[int], threads: int) -> str:
    """onnxruntime's affinity string: one group per worker thread (the caller's thread is not one),
    each the allowed CPUs, numbered from 1 as onnxruntime numbers logical processors."""
    group = ",".join(str(cpu + 1) for cpu in cpus)
    return ";".join([group] * (threads - 1))


def confine(options: ort.SessionOptions, threads: int) -> int:
    """Keep a session's intra-op threads on this process's CPUs; returns the thread count to use
    (``threads``, or one per allowed CPU for 0 = onnxruntime's choice)."""
    cpus = confined_cpus()
    if cpus is None:
        return threads
    count = threads or len(cpus)
    if count > 1:
        options.add_session_config_entry(AFFINITY_ENTRY, affinity_setting(cpus, count))
    return count
