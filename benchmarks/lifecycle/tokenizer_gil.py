"""How long a language model's cold load holds the GIL while it parses its tokenizer (issue 51, the
budget benchmark's pinned tail): while Hugging Face tokenizers' ``Tokenizer.from_file`` runs (Rust, the
GIL held throughout), no other Python thread of the server runs, the event loop included.

A ticker thread sleeps 1 ms at a time; its longest gap during the parse is how long every other thread
waited. Run with the converted folders in .cache/llm:

    PYTHONPATH=src .venv/bin/python benchmarks/lifecycle/tokenizer_gil.py .cache/llm/*/tokenizer.json
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import tokenizers


def longest_wait(path: Path) -> dict[str, float]:
    """Seconds the parse took and the longest gap the ticker saw (ms)."""
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    time.sleep(0.01)
    started = time.perf_counter()
    tokenizers.Tokenizer.from_file(str(path))
    seconds = time.perf_counter() - started
    time.sleep(0.01)
    stop.set()
    ticker.join()
    return {"parse_s": round(seconds, 2), "longest_other_thread_wait_ms": round(max(gaps) * 1000, 1)}


def main() -> None:
    rows = {}
    for name in sys.argv[1:]:
        path = Path(name)
        rows[str(path)] = {"mib": round(path.stat().st_size / 2**20, 1), **longest_wait(path)}
    print(json.dumps({"label": "measured under contention (other work on the 2 cores)", "files": rows}, indent=2))


if __name__ == "__main__":
    main()
