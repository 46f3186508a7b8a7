"""Per-second event-loop CPU by callback over a time window, from the snapshots that
``loop_accounting/sitecustomize.py`` writes (see there).

    .venv/bin/python benchmarks/overload/loop_accounting.py FILE [--from MONOTONIC] [--to MONOTONIC]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "loop_accounting"
"""Put this folder on the server's PYTHONPATH (with MCP_LOOP_ACCOUNTING=<file>) to record."""


@dataclass(frozen=True)
class Row:
    name: str
    calls_per_s: float
    cpu_ms_per_s: float

    @property
    def us_per_call(self) -> float:
        return self.cpu_ms_per_s * 1000 / self.calls_per_s if self.calls_per_s else 0.0


def window(path: Path, start: float = float("-inf"), end: float = float("inf")) -> tuple[float, list[Row]]:
    """Seconds between the first and last snapshot inside [start, end], and each name's rates over them,
    most CPU first."""
    snapshots = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    inside = [snapshot for snapshot in snapshots if start <= snapshot["at"] <= end]
    if len(inside) < 2:
        return 0.0, []
    first, last = inside[0], inside[-1]
    seconds = last["at"] - first["at"]
    rows = []
    for name, (nanoseconds, calls) in last["totals"].items():
        before_ns, before_calls = first["totals"].get(name, (0, 0))
        if calls > before_calls:
            rows.append(Row(name, (calls - before_calls) / seconds, (nanoseconds - before_ns) / 1e6 / seconds))
    return seconds, sorted(rows, key=lambda row: -row.cpu_ms_per_s)


def render(seconds: float, rows: list[Row], top: int = 12) -> str:
    lines = [f"event-loop CPU by callback over {seconds:.1f} s (per second; thread CPU time):"]
    lines += ["| callback | calls/s | CPU ms/s | us per call |", "|---|---:|---:|---:|"]
    lines += [f"| {r.name} | {r.calls_per_s:.0f} | {r.cpu_ms_per_s:.1f} | {r.us_per_call:.1f} |" for r in rows[:top]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--from", dest="start", type=float, default=float("-inf"))
    parser.add_argument("--to", dest="end", type=float, default=float("inf"))
    args = parser.parse_args()
    print(render(*window(args.file, args.start, args.end)))


if __name__ == "__main__":
    main()
