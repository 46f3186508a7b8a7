"""onnxruntime's worker threads stay on the CPUs the process may use (taskset, numactl, cpusets)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp2026ai.runtime.cpu_affinity import affinity_setting, allowed_cpus, confined_cpus, physical_cores
from tests.support.models import mlp_model

CHILD = """
import glob, os, sys
if sys.argv[2] != "all":
    os.sched_setaffinity(0, {int(sys.argv[2])})  # as taskset would, before anything starts a thread
import numpy as np
import onnxruntime as ort
from mcp2026ai.runtime.onnx import session_options
from mcp2026ai.runtime.plan import Plan
options = session_options(Plan(intra_op_threads=int(sys.argv[3])))
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
session.run(None, {"x": np.zeros((1, 16), np.float32)})
masks = [os.sched_getaffinity(int(task.rsplit("/", 1)[1])) for task in glob.glob(f"/proc/{os.getpid()}/task/*")]
print(options.intra_op_num_threads, sorted(set().union(*masks)), min(len(mask) for mask in masks), sep="|")
"""


def test_the_affinity_string_numbers_processors_from_one() -> None:
    assert affinity_setting([0, 3], 3) == "1,4;1,4"  # two workers besides the caller's thread
    assert affinity_setting([5], 1) == ""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to keep a session off one")
@pytest.mark.parametrize("threads", [0, 2])
def test_a_session_of_a_confined_process_keeps_its_threads_on_its_cpus(tmp_path: Path, threads: int) -> None:
    cpu = max(os.sched_getaffinity(0))
    model = mlp_model(tmp_path / "mlp.onnx")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), str(cpu), str(threads)], capture_output=True, text=True, check=True
    )
    count, cpus, _ = done.stdout.strip().split("|")
    assert cpus.strip() == f"[{cpu}]"  # every thread of the process, onnxruntime's workers included
    assert int(count) == (threads or 1)  # onnxruntime's own choice becomes one thread per allowed CPU


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to tell pinned from free")
def test_onnxruntimes_default_thread_count_comes_without_its_pinning(tmp_path: Path) -> None:
    """Left to itself onnxruntime pins each worker to one core; on a machine shared with other
    processes a pinned worker then waits for its core while another is free (docs/notebook/benchmarks.md,
    "Unpinned workers"). The default plan gets onnxruntime's count, one per physical core, unpinned."""
    model = mlp_model(tmp_path / "mlp.onnx")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(model), "all", "0"], capture_output=True, text=True, check=True
    )
    count, cpus, narrowest = done.stdout.strip().split("|")
    confined = confined_cpus()  # a CI container's cpuset: one worker per allowed CPU, as above
    assert int(count) == (len(confined) if confined else physical_cores(allowed_cpus()))
    assert cpus == str(allowed_cpus())
    assert int(narrowest) == len(allowed_cpus())  # no thread of the process is held to fewer CPUs


def test_physical_cores_count_smt_siblings_once() -> None:
    assert 1 <= physical_cores(allowed_cpus()) <= len(allowed_cpus())
    assert physical_cores([10**6]) == 1  # no such CPU in sysfs: counted as one
