"""Text-generation benchmark: aiperf against OpenAI-compatible servers on the same GGUF.

    python benchmarks/llm/llm.py                                  # all servers, c=1 and c=8 (~6-8 min on 2 cores)
    python benchmarks/llm/llm.py --servers llama-server --concurrency 1
    python benchmarks/llm/llm.py --url http://127.0.0.1:8000 --label mine   # any running OpenAI server

Servers (benchmarks/llm/llm_servers.py): llama.cpp's llama-server (-t 2 -np 8 -cb), naive transformers
(peers/transformers_server.py) and ``mcp serve`` of this project when it has OpenAI routes. One
server runs at a time (2 cores): start, one warm-up request, one aiperf run per concurrency level,
stop. Requests per run: max(--min-requests, --requests-per-stream x c). Every run gets a fresh
random seed (see llm_aiperf.py). Needs benchmarks/peers/setup_llm_peers.sh first (or `make bench-llm`).
The table is printed and written with the raw rows to benchmarks/results/llm-<time>/ (table.md,
results.json; each run's aiperf artifacts under <server>-c<c>/).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.compare.servers import BENCH_DIR, VENVS, Unavailable
from benchmarks.llm.llm_aiperf import AiperfError, aiperf_command, run_aiperf, workloads
from benchmarks.llm.llm_report import render
from benchmarks.llm.llm_servers import LLM_SERVERS, LlmServer, gguf_path, served_model_id, warm_up

AIPERF = VENVS / "aiperf" / "bin" / "aiperf"
TOKENIZER = VENVS / "smollm2-tokenizer"


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--servers",
        default=",".join(name for name in LLM_SERVERS if name != "mcp2026ai-baseline"),
        help="comma-separated, from: " + ", ".join(LLM_SERVERS) + " (the baseline needs MCP_BASELINE_SRC)",
    )
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--requests-per-stream", type=int, default=4, help="requests per concurrent stream")
    parser.add_argument("--min-requests", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one aiperf run may take")
    parser.add_argument("--url", help="measure this already-running OpenAI-compatible server instead")
    parser.add_argument("--label", default="external", help="its name in the table (with --url)")
    parser.add_argument("--out", type=Path, help="results folder (default: benchmarks/results/llm-<time>)")
    return parser.parse_args()


def _check_tools() -> None:
    for path in (AIPERF, TOKENIZER / "tokenizer_config.json"):
        if not path.exists():
            raise SystemExit(f"{path} missing: run benchmarks/peers/setup_llm_peers.sh (or make bench-llm)")


def _measure(
    label: str,
    base_url: str,
    model: str,
    levels: list[int],
    args: argparse.Namespace,
    out: Path,
    cpu_seconds: Callable[[], float] | None = None,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for workload in workloads(levels, args.requests_per_stream, args.min_requests):
        concurrency = workload.concurrency
        artifacts = out / f"{label}-c{concurrency}"
        command = aiperf_command(AIPERF, base_url, model, TOKENIZER, workload, artifacts)
        row: dict[str, Any] = {"server": label, "concurrency": concurrency, "seed": workload.seed, "command": command}
        cpu_before = cpu_seconds() if cpu_seconds else 0.0
        try:
            row |= asdict(run_aiperf(command, artifacts, args.timeout))
        except AiperfError as error:
            row["error"] = str(error)
        if cpu_seconds and "duration_s" in row:
            # The server's CPU time per second of the run (aiperf's start-up, before and after, finds
            # it idle): well under 2 cores for a saturated server means others took the CPU.
            row["server_cores"] = (cpu_seconds() - cpu_before) / row["duration_s"]
        print(
            f"  {label} c={concurrency}: "
            + (
                row.get("error")
                or f"{row['output_tokens_per_s']:.1f} tok/s, TTFT p50 {row['ttft_p50_ms']:.0f} ms, "
                f"ITL p50 {row['itl_p50_ms']:.1f} ms, server cores {row.get('server_cores', 0):.2f}"
            ),
            flush=True,
        )
        rows.append(row)
    return rows


def _run_server(name: str, gguf: Path, levels: list[int], args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    server: LlmServer = LLM_SERVERS[name](out / "servers" / name)
    server.start(gguf)
    try:
        warm_up(server.base_url, server.model)
        return _measure(name, server.base_url, server.model, levels, args, out, server.cpu_seconds)
    finally:
        server.stop()


def main() -> None:
    args = _arguments()
    _check_tools()
    levels = [int(c) for c in args.concurrency.split(",")]
    out = args.out or BENCH_DIR / "results" / time.strftime("llm-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    if args.url:
        model = served_model_id(args.url.rstrip("/"))
        if model is None:
            raise SystemExit(f"{args.url}: GET /v1/models lists no model; is it an OpenAI-compatible server?")
        rows += _measure(args.label, args.url.rstrip("/"), model, levels, args, out)
    else:
        gguf = gguf_path()
        for name in args.servers.split(","):
            if name not in LLM_SERVERS:
                raise SystemExit(f"--servers: unknown server {name!r}; known: {', '.join(LLM_SERVERS)}")
            print(f"{name}:", flush=True)
            try:
                rows += _run_server(name, gguf, levels, args, out)
            except Unavailable as error:
                skipped[name] = str(error)
                print(f"  {name}: not measured: {error}", flush=True)
    table = render(rows, time.monotonic() - started, skipped)
    (out / "results.json").write_text(json.dumps({"rows": rows, "skipped": skipped}, indent=2))
    (out / "table.md").write_text(table)
    print("\n" + table + f"\nresults: {out}")


if __name__ == "__main__":
    main()
