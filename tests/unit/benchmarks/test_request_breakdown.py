"""benchmarks/overload/request_breakdown: the hook records where a real batcher's requests spent their time, in a
fresh interpreter, and the parts add up to each request's total."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from benchmarks.overload.request_breakdown import HOOK, loop_stalls, parts, render

ROOT = Path(__file__).resolve().parents[3]

PROGRAM = """
import asyncio, gc, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, {tests!r})
from support.models import mlp_model
from mcp2026ai.contract import SLAClass
from mcp2026ai.ir import import_model
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingConfig, BatchingExecutor

class Slow(OnnxRuntimeBackend):
    def infer(self, inputs, outputs=None):
        until = time.thread_time() + 0.002
        while time.thread_time() < until:
            pass
        return super().infer(inputs, outputs)

async def main():
    imported = import_model(mlp_model(Path({folder!r}) / "mlp.onnx"), Path({folder!r}))
    backend = Slow(imported.onnx_path, imported.signature)
    backend.load()
    executor = BatchingExecutor(backend, BatchingConfig(max_concurrent_batches=2, max_queue_delay_ms=0))
    await executor.start()
    x = {{"x": np.ones((1, 16), np.float32)}}
    classes = [SLAClass.LATENCY_CRITICAL, SLAClass.BEST_EFFORT] * 10
    await asyncio.gather(*(executor.submit(x, None, sla_class=c, deadline=None) for c in classes))
    await asyncio.sleep(0.01)
    time.sleep(0.03)  # the event loop held up: a stall
    gc.collect(1)
    await asyncio.sleep(0.01)
    await executor.stop(drain_timeout_s=5)

asyncio.run(main())
"""


def _record(tmp_path: Path, *argv: str) -> Path:
    record = tmp_path / "requests.jsonl"
    paths = [str(HOOK), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths)), "MCP_REQUEST_BREAKDOWN": str(record)}
    program = PROGRAM.format(tests=str(ROOT / "tests"), folder=str(tmp_path))
    subprocess.run([sys.executable, "-", *argv], input=program, text=True, env=env, check=True, timeout=120)
    return record


def test_the_hook_records_each_request_of_a_serve_process(tmp_path: Path) -> None:
    record = _record(tmp_path, "serve")
    columns = parts(record, "latency-critical")
    assert len(columns["total"]) == 10 and len(parts(record, "best-effort")["total"]) == 10
    assert (columns["cpu"] >= 0.0015).all(), "each run burns 2 ms of the worker thread's CPU"
    assert (columns["run"] >= columns["cpu"] * 0.9).all()
    summed = columns["wait"] + columns["hop in"] + columns["run"] + columns["hop back"]
    np.testing.assert_allclose(summed, columns["total"], atol=1e-6)
    text = render(columns, "latency-critical")
    assert text.startswith("latency-critical in the batcher, 10 requests") and "hop back" in text


def test_the_hook_records_the_event_loops_stalls_and_collections(tmp_path: Path) -> None:
    record = _record(tmp_path, "serve")
    events = json.loads(record.with_name(record.name + ".loop.json").read_text())
    assert any(late >= 0.025 for _, late in events["stalls"]), events["stalls"]
    assert any(generation == 1 for generation, _, _ in events["gc"])
    text = loop_stalls(record)
    assert "over 10 ms" in text and "generation 1 collections:" in text and "best-effort sheds: 0" in text
    assert loop_stalls(tmp_path / "elsewhere.jsonl") == "no event-loop record"


def test_other_processes_are_left_alone(tmp_path: Path) -> None:
    assert not _record(tmp_path).exists()


def test_nothing_recorded_reads_as_such(tmp_path: Path) -> None:
    empty = tmp_path / "requests.jsonl"
    empty.write_text("")
    assert (
        render(parts(empty, "latency-critical"), "latency-critical")
        == "no latency-critical request ran on a worker thread"
    )
