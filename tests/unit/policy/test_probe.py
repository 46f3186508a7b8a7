from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from mcp2026ai.policy.probe import (
    GpuInfo,
    HardwareProfile,
    count_numa_nodes,
    parse_cpuinfo,
    parse_meminfo,
    parse_nvidia_smi,
    probe_hardware,
    query_gpus,
)
from mcp2026ai.runtime.plan import Provider

XEON_CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16
"""

ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp sve i8mm bf16
CPU part\t: 0xd4f
"""


def test_parse_cpuinfo_reads_model_and_isa_flags() -> None:
    model, flags = parse_cpuinfo(XEON_CPUINFO)
    assert model == "Intel(R) Xeon(R) Platinum 8480+"
    assert {"avx2", "avx512f", "avx512_vnni", "amx_tile", "amx_int8"} <= set(flags)
    assert "fpu" not in flags


def test_parse_cpuinfo_on_arm_reads_features() -> None:
    model, flags = parse_cpuinfo(ARM_CPUINFO)
    assert model == "unknown CPU"
    assert {"asimd", "asimddp", "sve", "i8mm", "bf16"} <= set(flags)


def test_parse_meminfo_in_mib() -> None:
    total, available = parse_meminfo("MemTotal:       2048000 kB\nMemFree:  100 kB\nMemAvailable:   1024000 kB\n")
    assert (total, available) == (2000.0, 1000.0)


def test_numa_nodes_counted_from_sysfs(tmp_path: Path) -> None:
    node_dir = tmp_path / "devices" / "system" / "node"
    for name in ("node0", "node1", "possible", "online"):
        (node_dir / name).mkdir(parents=True)
    assert count_numa_nodes(tmp_path) == 2
    assert count_numa_nodes(tmp_path / "absent") == 1


def test_nvidia_smi_rows_parsed() -> None:
    gpus = parse_nvidia_smi("0, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n1, NVIDIA L4, 23034, 550.54.15\n")
    assert gpus == [
        GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", memory_mb=81559, driver="550.54.15"),
        GpuInfo(index=1, name="NVIDIA L4", memory_mb=23034, driver="550.54.15"),
    ]


def test_query_gpus_runs_nvidia_smi_only_when_on_path() -> None:
    calls: list[Sequence[str]] = []

    def runner(argv: Sequence[str]) -> str:
        calls.append(argv)
        return "0, NVIDIA A10, 22731, 535.0\n"

    assert query_gpus(runner, which=lambda _: None) == []
    assert calls == []
    gpus = query_gpus(runner, which=lambda _: "/usr/bin/nvidia-smi")
    assert [gpu.name for gpu in gpus] == ["NVIDIA A10"]
    assert calls[0][0] == "/usr/bin/nvidia-smi" and "--format=csv,noheader,nounits" in calls[0]


def test_probe_this_machine() -> None:
    profile = probe_hardware()
    assert profile.logical_cores == len(os.sched_getaffinity(0))
    assert profile.memory_total_mb > 0
    assert "CPUExecutionProvider" in profile.ort_providers
    assert profile.providers[0] is Provider.CPU
    assert len(profile.fingerprint()) == 16


def test_probe_with_fake_proc_and_gpu(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text(XEON_CPUINFO)
    (tmp_path / "meminfo").write_text("MemTotal: 1048576 kB\nMemAvailable: 524288 kB\n")
    profile = probe_hardware(
        proc_root=tmp_path, sys_root=tmp_path, gpus=lambda: [GpuInfo(index=0, name="X", memory_mb=1)]
    )
    assert profile.amx and profile.has("avx512_vnni")
    assert profile.memory_total_mb == 1024.0
    assert profile.gpus[0].name == "X"
    assert "1 NUMA node" in profile.summary() and "X" in profile.summary()


def test_providers_map_onnxruntime_names_to_plan_providers() -> None:
    profile = HardwareProfile(
        cpu_model="c",
        logical_cores=4,
        online_cpus=4,
        ort_providers=[
            "TensorrtExecutionProvider",
            "CUDAExecutionProvider",
            "AzureExecutionProvider",
            "CPUExecutionProvider",
        ],
    )
    assert profile.providers == [Provider.CPU, Provider.CUDA, Provider.TENSORRT]
