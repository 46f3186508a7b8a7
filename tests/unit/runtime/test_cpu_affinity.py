"""onnxruntime's worker threads stay on the CPUs the process may use (taskset, numactl, cpusets)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp2026ai.runtime.cpu_affinity import affinity_setting
from tests.support.models import mlp_model

CHILD = """
import glob, os, sys
os.sched_setaffinity(0, {int(sys.argv[2])})  # as taskset would, before anything starts a thread
import onnxruntime as ort
from mcp2026ai.runtime.onnx import session_options
from mcp2026ai.runtime.plan import Plan
options = session_options(Plan(intra_op_threads=int(sys.argv[3])))
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
cpus = set()
for task in glob.glob(f"/proc/{os.getpid()}/task/*"):
    cpus |= os.sched_getaffinity(int(task.rsplit("/", 1)[1]))
print(options.intra_op_num_threads, sorted(cpus))
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
    count, cpus = done.stdout.split(" ", 1)
    assert cpus.strip() == f"[{cpu}]"  # every thread of the process, onnxruntime's workers included
    assert int(count) == (threads or 1)  # onnxruntime's own choice becomes one thread per allowed CPU
