"""Hardware probe: what this machine offers a plan (CPU, NUMA, memory, onnxruntime providers, GPUs).

Everything is read from ``/proc`` and ``/sys`` (paths injectable for tests), ``os.sched_getaffinity``
and ``nvidia-smi`` when it is on ``PATH``. Nothing here fails: a missing source yields an empty field.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import onnxruntime as ort
from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.runtime.catalog import installed_runtimes
from mcp2026ai.runtime.cpu_affinity import usable_cores
from mcp2026ai.runtime.plan import DEFAULT_RUNTIME, ORT_PROVIDER_NAMES, Provider

# CPU features that change which kernels onnxruntime (MLAS) can use.
INTERESTING_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "asimddp",
    "sve",
    "i8mm",
    "bf16",
)

_NVIDIA_QUERY = "--query-gpu=index,name,memory.total,driver_version"

Runner = Callable[[Sequence[str]], str]


class GpuInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    memory_mb: float
    driver: str = ""


class HardwareProfile(BaseModel):
    """A snapshot of the machine; ``fingerprint`` keys caches that are only valid on this hardware."""

    model_config = ConfigDict(frozen=True)

    cpu_model: str = Field(description="CPU model name from /proc/cpuinfo.")
    logical_cores: int = Field(ge=1, description="CPUs this process may run on (sched_getaffinity).")
    online_cpus: int = Field(ge=1, description="CPUs the machine has online (os.cpu_count).")
    cpu_flags: list[str] = Field(default_factory=list, description="The ISA extensions of INTERESTING_FLAGS present.")
    numa_nodes: int = Field(1, ge=1)
    memory_total_mb: float = 0.0
    memory_available_mb: float = 0.0
    ort_version: str = ""
    ort_providers: list[str] = Field(default_factory=list, description="onnxruntime.get_available_providers().")
    gpus: list[GpuInfo] = Field(default_factory=list)
    runtimes: list[str] = Field(
        default_factory=lambda: [DEFAULT_RUNTIME], description="Runtimes installed here (runtime/catalog.py)."
    )

    @property
    def providers(self) -> list[Provider]:
        """The plan providers onnxruntime can use here, CPU first."""
        return [provider for provider, ort_name in ORT_PROVIDER_NAMES.items() if ort_name in self.ort_providers]

    def has(self, flag: str) -> bool:
        return flag in self.cpu_flags

    @property
    def reduced_precisions(self) -> list[str]:
        """Inference precisions below f32 OpenVINO's CPU plugin runs natively here (bf16 with AVX-512 BF16 or AMX)."""
        return ["bf16"] if self.has("avx512_bf16") or self.has("amx_bf16") else []

    @property
    def amx(self) -> bool:
        return any(flag.startswith("amx") for flag in self.cpu_flags)

    def fingerprint(self) -> str:
        """Short hash of what an optimized graph depends on: CPU, ISA, onnxruntime, providers, GPUs."""
        parts = [self.cpu_model, ",".join(self.cpu_flags), self.ort_version, ",".join(self.ort_providers)]
        parts += [gpu.name for gpu in self.gpus]
        parts += [runtime for runtime in self.runtimes if runtime != DEFAULT_RUNTIME]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]

    def summary(self) -> str:
        gpus = ", ".join(gpu.name for gpu in self.gpus) or "no GPU"
        return (
            f"{self.cpu_model} ({self.logical_cores} cores, {self.numa_nodes} NUMA node(s), "
            f"{self.memory_total_mb / 1024:.1f} GiB; {gpus})"
        )


def parse_cpuinfo(text: str) -> tuple[str, list[str]]:
    """``(model name, interesting flags)`` from /proc/cpuinfo text (x86 ``flags`` or Arm ``Features``)."""
    model = ""
    flags: set[str] = set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "features"):
            flags.update(value.split())
    return model or "unknown CPU", [flag for flag in INTERESTING_FLAGS if flag in flags]


def parse_meminfo(text: str) -> tuple[float, float]:
    """``(MemTotal, MemAvailable)`` in MiB from /proc/meminfo text."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        fields = value.split()
        if sep and fields and fields[0].isdigit():
            values[key.strip()] = int(fields[0]) / 1024  # kB -> MiB
    total = values.get("MemTotal", 0.0)
    return total, values.get("MemAvailable", values.get("MemFree", total))


def count_numa_nodes(sys_root: Path) -> int:
    node_dir = sys_root / "devices" / "system" / "node"
    if not node_dir.is_dir():
        return 1
    nodes = [p for p in node_dir.iterdir() if p.name.startswith("node") and p.name[4:].isdigit()]
    return max(1, len(nodes))


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Rows of ``nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits``."""
    gpus = []
    for line in text.strip().splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) < 3 or not fields[0].isdigit():
            continue
        try:
            memory = float(fields[2])
        except ValueError:
            memory = 0.0
        gpus.append(
            GpuInfo(index=int(fields[0]), name=fields[1], memory_mb=memory, driver=fields[3] if len(fields) > 3 else "")
        )
    return gpus


def _run_command(argv: Sequence[str]) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10, check=False)
    return done.stdout if done.returncode == 0 else ""


def query_gpus(runner: Runner = _run_command, which: Callable[[str], str | None] = shutil.which) -> list[GpuInfo]:
    """GPUs reported by nvidia-smi; none when it is absent or fails."""
    binary = which("nvidia-smi")
    if binary is None:
        return []
    try:
        return parse_nvidia_smi(runner([binary, _NVIDIA_QUERY, "--format=csv,noheader,nounits"]))
    except (OSError, subprocess.SubprocessError):
        return []


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def probe_hardware(
    proc_root: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    gpus: Callable[[], list[GpuInfo]] = query_gpus,
) -> HardwareProfile:
    """Probe this machine."""
    model, flags = parse_cpuinfo(_read(proc_root / "cpuinfo"))
    total, available = parse_meminfo(_read(proc_root / "meminfo"))
    cores = usable_cores()
    return HardwareProfile(
        cpu_model=model,
        logical_cores=cores,
        online_cpus=max(cores, os.cpu_count() or 1),
        cpu_flags=flags,
        numa_nodes=count_numa_nodes(sys_root),
        memory_total_mb=round(total, 1),
        memory_available_mb=round(available, 1),
        ort_version=ort.__version__,
        ort_providers=list(ort.get_available_providers()),
        gpus=gpus(),
        runtimes=installed_runtimes(),
    )
