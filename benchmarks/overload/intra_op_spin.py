"""What onnxruntime's spinning workers cost when other processes want the cores: wall and CPU time per
batch of the overload benchmark's model, for each way the intra-op pool can wait for work.

onnxruntime's intra-op workers spin between parallel sections instead of sleeping. Alone on the
machine that hands them the next section soonest; with other runnable threads (the server's own
event loop, clients on the same cores, other tenants) a spinning worker holds a core that the
thread it waits for needs, and burns it. This runs the chained-matmul model (tests/support/models.py,
depth 200, batches of 4 rows: the model ``overload.py`` serves) back to back in one process, each
setting in turn, first alone, then beside ``--competitors`` processes that each alternate 0.3 ms of
work and 0.3 ms of sleep (like event loops under load), and prints wall and CPU per batch. The last
line is the serving default's way (``serving/artifacts.serving_default_plan``): ``--threads``
single-threaded instances, one batch each at once, with no barrier between them (wall per batch is
the run's wall over all their batches):

    .venv/bin/python benchmarks/overload/intra_op_spin.py [--rounds 3] [--competitors 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from support.models import chained_matmul_model

SETTINGS: dict[str, dict[str, str] | None] = {
    "onnxruntime's default spin": {},
    "no spinning": {"session.intra_op.allow_spinning": "0"},
    "spin 10 us": {"session.intra_op.spin_duration_us": "10"},
    "spin 50 us": {"session.intra_op.spin_duration_us": "50"},
    "the server's own (runtime/onnx.py)": None,
}
COMPETITOR = """
import time
while True:
    started = time.perf_counter()
    while time.perf_counter() - started < 3e-4:
        pass
    time.sleep(3e-4)
"""
BATCHES = 60


def session(model: Path, threads: int, entries: dict[str, str] | None) -> ort.InferenceSession:
    """A session with these config entries only, or (None) with the server's own options."""
    if entries is None:
        from mcp2026ai.runtime.onnx import session_options
        from mcp2026ai.runtime.plan import Plan

        options = session_options(Plan(intra_op_threads=threads))
    else:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        for key, value in entries.items():
            options.add_session_config_entry(key, value)
    return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def per_batch(runner: ort.InferenceSession, rows: np.ndarray) -> tuple[float, float]:
    """(wall, process CPU) milliseconds per batch, with a 2 ms pause between batches (as a server has)."""
    for _ in range(3):
        runner.run(None, {"x": rows})
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(BATCHES):
        runner.run(None, {"x": rows})
        time.sleep(0.002)
    return (time.perf_counter() - wall) * 1e3 / BATCHES - 2.0, (time.process_time() - cpu) * 1e3 / BATCHES


def per_batch_on_instances(runner: ort.InferenceSession, rows: np.ndarray, instances: int) -> tuple[float, float]:
    """(wall, process CPU) milliseconds per batch with ``instances`` threads running the single-threaded
    session at once, each its share of the batches (2 ms pause after each, as :func:`per_batch`)."""
    share = BATCHES // instances

    def run_share() -> None:
        for _ in range(share):
            runner.run(None, {"x": rows})
            time.sleep(0.002)

    with ThreadPoolExecutor(instances) as pool:
        list(pool.map(lambda _: runner.run(None, {"x": rows}), range(instances)))
        wall, cpu = time.perf_counter(), time.process_time()
        list(pool.map(lambda _: run_share(), range(instances)))
    batches = share * instances
    return (time.perf_counter() - wall) * 1e3 / batches - 2.0 / instances, (time.process_time() - cpu) * 1e3 / batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--competitors", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2, help="Intra-op threads of each session.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        model = chained_matmul_model(Path(folder) / "heavy.onnx", depth=200)
        sessions = {name: session(model, args.threads, entries) for name, entries in SETTINGS.items()}
        instances = session(model, 1, None)
    instances_name = f"{args.threads} single-threaded instances (the serving default)"
    rows = np.random.default_rng(0).random((4, 1024), dtype=np.float32)
    for competitors in (0, args.competitors):
        others = [subprocess.Popen([sys.executable, "-c", COMPETITOR]) for _ in range(competitors)]
        try:
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in [*sessions, instances_name]}
            for _ in range(args.rounds):  # settings interleaved, so the machine's drift falls on all of them
                for name, runner in sessions.items():
                    results[name].append(per_batch(runner, rows))
                results[instances_name].append(per_batch_on_instances(instances, rows, args.threads))
        finally:
            for other in others:
                other.kill()
                other.wait()
        print(f"\n{competitors} competing processes, load average {os.getloadavg()[0]:.1f}:")
        print("| setting | wall ms per batch | CPU ms per batch |\n|---|---|---|")
        for name, values in results.items():
            walls = " / ".join(f"{wall:.1f}" for wall, _ in values)
            cpus = " / ".join(f"{cpu:.1f}" for _, cpu in values)
            print(f"| {name} | {walls} | {cpus} |")


if __name__ == "__main__":
    main()
