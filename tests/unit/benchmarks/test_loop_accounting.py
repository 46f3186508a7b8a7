"""benchmarks/overload/loop_accounting: the hook times a real event loop's callbacks in a fresh interpreter, and
the window turns its running totals into per-second rates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.overload.loop_accounting import HOOK, Row, window

PROGRAM = """
import asyncio, time

def busy():
    until = time.thread_time() + 0.002
    while time.thread_time() < until:
        pass

async def main():
    loop = asyncio.get_running_loop()
    for _ in range(300):
        loop.call_soon(busy)
        await asyncio.sleep(0.004)

asyncio.run(main())
"""


def test_the_hook_times_each_callback_of_a_serve_process(tmp_path: Path) -> None:
    record = tmp_path / "loop.jsonl"
    env = {**os.environ, "PYTHONPATH": str(HOOK), "MCP_LOOP_ACCOUNTING": str(record)}
    # "serve" among the arguments, as in `mcp serve`: only such processes are timed
    subprocess.run([sys.executable, "-", "serve"], input=PROGRAM, text=True, env=env, check=True, timeout=60)
    seconds, rows = window(record)
    busy = next(row for row in rows if row.name == "busy")
    assert seconds > 0.5 and busy.calls_per_s > 50
    assert 1500 < busy.us_per_call < 20_000  # each call burns 2 ms of thread CPU
    loop = next(row for row in rows if row.name == "(loop in all)")
    assert loop.cpu_ms_per_s >= busy.cpu_ms_per_s


def test_other_processes_are_left_alone(tmp_path: Path) -> None:
    record = tmp_path / "loop.jsonl"
    env = {**os.environ, "PYTHONPATH": str(HOOK), "MCP_LOOP_ACCOUNTING": str(record)}
    subprocess.run([sys.executable, "-"], input=PROGRAM, text=True, env=env, check=True, timeout=60)
    assert not record.exists()


def test_the_window_takes_the_difference_between_its_first_and_last_snapshot(tmp_path: Path) -> None:
    snapshots = [
        {"at": 10.0, "totals": {"read": [1_000_000, 10]}},
        {"at": 11.0, "totals": {"read": [3_000_000, 30], "task": [500_000, 1]}},
        {"at": 12.0, "totals": {"read": [9_000_000, 90], "task": [4_500_000, 5]}},
        {"at": 13.0, "totals": {"read": [99_000_000, 99], "task": [4_500_000, 5]}},
    ]
    record = tmp_path / "loop.jsonl"
    record.write_text("".join(json.dumps(snapshot) + "\n" for snapshot in snapshots))
    seconds, rows = window(record, 10.5, 12.5)  # the snapshots at 11 and 12
    assert seconds == 1.0
    assert rows == [Row("read", 60.0, 6.0), Row("task", 4.0, 4.0)]
    assert rows[0].us_per_call == pytest.approx(100.0)
    assert window(record, 11.5, 12.5) == (0.0, [])
