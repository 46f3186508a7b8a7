"""Where one class's requests spent their time inside the batcher, from the records that
``request_breakdown/sitecustomize.py`` writes (see there): quantiles of each part.

    .venv/bin/python benchmarks/overload/request_breakdown.py FILE [--class latency-critical] [--from MONOTONIC]

The parts, per request: ``wait`` (queued -> its batch started on the event loop), ``hop in`` (-> the worker
thread began the run), ``run`` (the run's wall time on that thread) and ``cpu`` (that thread's CPU time
for it: the rest of ``run`` is the thread waiting for a core or for the interpreter lock), ``hop back``
(-> the batch's task saw the end), ``total`` (queued -> answered in the scheduler).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

HOOK = Path(__file__).resolve().parent / "request_breakdown"
"""Put this folder on the server's PYTHONPATH (with MCP_REQUEST_BREAKDOWN=<file>) to record."""

QUANTILES = (50, 90, 99)


def parts(path: Path, sla_class: str, since: float = float("-inf")) -> dict[str, np.ndarray]:
    """Each part's seconds for the requests of ``sla_class`` queued at or after ``since`` whose batch ran
    on a worker thread."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    chosen = [r for r in records if r["class"] == sla_class and r["queued"] >= since and r["run"]]
    columns: dict[str, list[float]] = {name: [] for name in ("wait", "hop in", "run", "cpu", "hop back", "total")}
    for record in chosen:
        began, ended, cpu = record["run"]
        columns["wait"].append(record["started"] - record["queued"])
        columns["hop in"].append(began - record["started"])
        columns["run"].append(ended - began)
        columns["cpu"].append(cpu)
        columns["hop back"].append(record["ended"] - ended)
        columns["total"].append(record["ended"] - record["queued"])
    return {name: np.array(values) for name, values in columns.items()}


def render(columns: dict[str, np.ndarray], sla_class: str) -> str:
    count = len(columns["total"])
    if not count:
        return f"no {sla_class} request ran on a worker thread"
    header = " / ".join(f"p{q}" for q in QUANTILES)
    lines = [f"{sla_class} in the batcher, {count} requests, ms ({header}):"]
    for name, values in columns.items():
        figures = " / ".join(f"{value * 1000:.1f}" for value in np.percentile(values, QUANTILES))
        lines.append(f"  {name:9s} {figures}")
    return "\n".join(lines)


LONG_STALL_S = 0.010


def loop_stalls(path: Path, since: float = float("-inf"), until: float = float("inf")) -> str:
    """What held the event loop up between ``since`` and ``until``, from ``<path>.loop.json`` (written
    beside the requests' record): its stalls, the garbage collections and the best-effort sheds."""
    loop_file = path.with_name(path.name + ".loop.json")
    if not loop_file.exists():
        return "no event-loop record"
    events = json.loads(loop_file.read_text())
    stalls = [(at, late) for at, late in events["stalls"] if since <= at <= until]
    collections = [(gen, began, ended) for gen, began, ended in events["gc"] if since <= began <= until]
    long_stalls = [(at, late) for at, late in stalls if late > LONG_STALL_S]
    in_gc = sum(any(began <= at + late and at <= ended for _, began, ended in collections) for at, late in long_stalls)
    lines = [
        f"event loop: {len(stalls)} wake-ups over 2 ms late, {len(long_stalls)} over 10 ms "
        f"(largest {max((late for _, late in stalls), default=0.0) * 1000:.1f} ms), {in_gc} of those during a "
        "garbage collection"
    ]
    for generation in (0, 1, 2):
        took = np.array([ended - began for gen, began, ended in collections if gen == generation]) * 1000
        if len(took):
            lines.append(
                f"  generation {generation} collections: {len(took)}, ms p50 / p90 / max "
                f"{np.percentile(took, 50):.1f} / {np.percentile(took, 90):.1f} / {took.max():.1f}"
            )
    sheds = [count for at, count in events["sheds"] if since <= at <= until]
    lines.append(f"  best-effort sheds: {len(sheds)}, {sum(sheds)} requests, largest {max(sheds, default=0)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--class", dest="sla_class", default="latency-critical")
    parser.add_argument("--from", dest="since", type=float, default=float("-inf"), help="time.monotonic() stamp")
    args = parser.parse_args()
    print(render(parts(args.file, args.sla_class, args.since), args.sla_class))
    print(loop_stalls(args.file, args.since))


if __name__ == "__main__":
    main()
