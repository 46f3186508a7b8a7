"""Keep onnxruntime's threads on the CPUs this process may use, and let them move between them.

Left to choose its thread count (``intra_op_num_threads = 0``), onnxruntime pins each intra-op worker
to one physical core, spread over every CPU of the machine, whatever the process's own CPU mask:

- a server started with ``taskset -c 0``, ``numactl`` or another CPU-affinity mask would still run
  its model threads on CPUs it was kept off. When the mask holds fewer CPUs than the machine, the
  session gets one worker per allowed CPU and every worker's affinity is the allowed set;
- on a machine it shares with other processes (its clients, a sidecar), a pinned worker waits for
  its one core while another is free, and the run's other threads spin at the next barrier until
  it gets it. So the default count is given explicitly (one thread per physical core, onnxruntime's
  own choice), and onnxruntime then leaves the workers' affinity alone: the operating system
  schedules them over the allowed CPUs. Measured with the co-located overload
  (``benchmarks/overload/overload.py --connections 8000``, docs/notebook/benchmarks.md "Unpinned workers"): in
  a quiet spell the model's wall time per batch under the 4x overload fell from 16.6 to 14.5 ms and
  the answers per second rose 18 % (medians of 8 pairs); in a slower spell, within the noise.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnxruntime as ort

AFFINITY_ENTRY = "session.intra_op_thread_affinities"


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (every CPU where the platform has no affinity masks)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = []
    return allowed or list(range(os.cpu_count() or 1))


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's."""
    return len(allowed_cpus())


def confined_cpus() -> list[int] | None:
    """The CPUs this process may run on, when they are fewer than the machine's; None otherwise."""
    allowed = allowed_cpus()
    return allowed if len(allowed) < (os.cpu_count() or len(allowed)) else None


def physical_cores(cpus: list[int]) -> int:
    """How many physical cores the logical CPUs ``cpus`` belong to (SMT siblings count once)."""
    cores: set[tuple[str, str] | int] = set()
    for cpu in cpus:
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text(), (topology / "core_id").read_text()))
        except OSError:  # no sysfs topology: count the logical CPU
            cores.add(cpu)
    return max(1, len(cores))


def usable_physical_cores() -> int:
    """Physical cores among the CPUs this process may run on: onnxruntime's own default thread count."""
    return physical_cores(allowed_cpus())


def affinity_setting(cpus: list[int], threads: int) -> str:
    """onnxruntime's affinity string: one group per worker thread (the caller's thread is not one),
    each the allowed CPUs, numbered from 1 as onnxruntime numbers logical processors."""
    group = ",".join(str(cpu + 1) for cpu in cpus)
    return ";".join([group] * (threads - 1))


def confine(options: ort.SessionOptions, threads: int) -> int:
    """Keep a session's intra-op threads on this process's CPUs, unpinned; returns the thread count to
    use: ``threads``, or for 0 (onnxruntime's choice) one per allowed CPU when the process is confined
    and one per physical core otherwise (onnxruntime's own count, without its pinning)."""
    cpus = confined_cpus()
    if cpus is None:
        return threads or usable_physical_cores()
    count = threads or len(cpus)
    if count > 1:
        options.add_session_config_entry(AFFINITY_ENTRY, affinity_setting(cpus, count))
    return count
