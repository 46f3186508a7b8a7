"""Streamed chat at a fixed concurrency against the served SmolLM2 (int4): who is served, refused, late.

Starts the server in a child process (``--src`` picks the source tree it runs: a before/after A/B
alternates two trees), the GGUF registered with an optional contract (``--ttft-ms``: its
``generation.ttft_p99_ms``; ``--memory-mb``: ``resources.memory_mb``, the KV budget it leaves;
``--max-num-seqs``). The child skips the generation policy's planning: the engine runs the settings
given here. Then ``--concurrency`` clients send streamed chat completions in a closed loop for
``--duration`` seconds (at most ``--requests`` in all; ~``--prompt-tokens`` distinct prompt tokens,
exactly ``--tokens`` output tokens: ``ignore_eos``). A client refused with 429 waits its Retry-After
(at most 5 s), as a well-behaved client does, then sends its next request. Every request ends as
one of: served (its time to first token and gaps between tokens are kept), refused (429; with or
without Retry-After), expired (a 200 stream that got an error event instead of tokens: it waited past
its budget), timed out (no answer within ``--timeout`` seconds), or failed (anything else).

    PYTHONPATH=src .venv/bin/python benchmarks/llm/served_load.py --concurrency 8 --requests 24
    PYTHONPATH=src .venv/bin/python benchmarks/llm/served_load.py --concurrency 32 --duration 60 \\
        --requests 1000 --max-num-seqs 32 --ttft-ms 2000 --memory-mb 1024

``--concurrency 1,8`` measures each level against the same server; ``--json FILE`` appends one line
per level (tagged ``--label``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repo root: benchmarks.* and tests.support imports

TOPICS = ["lighthouses", "volcanoes", "bees", "glaciers", "trains", "coral reefs", "comets", "bridges"]


@dataclass
class Outcomes:
    ttfts: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    tokens: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    retry_after: list[float] = field(default_factory=list)

    def count(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", default="8", help="comma-separated levels, each against the same server")
    parser.add_argument("--requests", type=int, default=24, help="most requests per level")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds per level (none start after)")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--max-num-seqs", type=int, default=8)
    parser.add_argument("--ttft-ms", type=float, help="the contract's generation.ttft_p99_ms (none: no contract)")
    parser.add_argument("--memory-mb", type=float, help="the contract's resources.memory_mb (the KV budget)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one request may take")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the source tree the server runs")
    parser.add_argument("--label", default="")
    parser.add_argument("--json", type=Path, help="append one JSON line per level to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def serve_child(args: argparse.Namespace) -> None:
    """In the child: register the GGUF (conversion cached in .cache/llm), serve until stdin closes."""
    import tempfile

    from mcp2026ai.bundled import bundled_model_path
    from mcp2026ai.contract import GenerationSpec, InferenceContract, ResourceSpec
    from mcp2026ai.generation.config import EngineConfig
    from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
    from mcp2026ai.registry import ModelRegistry
    from mcp2026ai.server.config import ServerConfig
    from mcp2026ai.testing import BackgroundServer

    os.environ[CACHE_VARIABLE] = str(ROOT / ".cache" / "llm")
    contract = None
    if args.ttft_ms is not None or args.memory_mb is not None:
        spec = GenerationSpec(ttft_p99_ms=args.ttft_ms, max_num_seqs=args.max_num_seqs)
        contract = InferenceContract(generation=spec, resources=ResourceSpec(memory_mb=args.memory_mb))
    with tempfile.TemporaryDirectory() as home:
        registry = ModelRegistry(Path(home))
        registry.register("smollm2", bundled_model_path("smollm2"), contract=contract)
        engine = EngineConfig(max_num_seqs=args.max_num_seqs, max_model_len=1024)
        config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, generation=engine)
        with BackgroundServer(registry, ["smollm2"], config) as server:
            served = server.plane.llms.get("smollm2").engine
            kv_mb = served.blocks.num_blocks * served.blocks.block_size * served.decoder.bytes_per_token / (1 << 20)
            print(f"listening {server.http_url} slots {served.slots.num_slots} kv_mb {kv_mb:.0f}", flush=True)
            sys.stdin.read()


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str, str]:
    env = {**os.environ, "PYTHONPATH": f"{args.src.resolve()}{os.pathsep}{ROOT}"}
    command = [sys.executable, __file__, "--child", "--max-num-seqs", str(args.max_num_seqs)]
    command += ["--ttft-ms", str(args.ttft_ms)] if args.ttft_ms is not None else []
    command += ["--memory-mb", str(args.memory_mb)] if args.memory_mb is not None else []
    child = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith("listening"):
            _, url, *rest = line.split()
            return child, url, " ".join(rest)
    raise SystemExit(f"the server did not start (exit {child.wait()})")


def prompt(index: int, words: int) -> str:
    topic = TOPICS[index % len(TOPICS)]
    return f"Request {index}. " + " ".join(f"Tell me about {topic}, fact {n}." for n in range(words // 6))


async def one(client: httpx.AsyncClient, url: str, index: int, args: argparse.Namespace, out: Outcomes) -> float:
    """Send one request; the seconds to wait before the next (Retry-After after a 429)."""
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": prompt(index, args.prompt_tokens)}],
        "max_tokens": args.tokens,
        "ignore_eos": True,
        "stream": True,
    }
    started = time.monotonic()
    try:
        async with client.stream("POST", f"http://{url}/v1/chat/completions", json=body) as answer:
            if answer.status_code == 429:
                await answer.aread()
                retry = answer.headers.get("retry-after")
                out.count("refused, Retry-After" if retry else "refused, no Retry-After")
                out.retry_after.append(float(retry or 0))
                return min(float(retry or 0), 5.0)
            if answer.status_code != 200:
                await answer.aread()
                out.count(f"failed {answer.status_code}")
                return 0.0
            times, error = [], False
            async for line in answer.aiter_lines():
                if line.startswith("data: {"):
                    event = json.loads(line[6:])
                    if "error" in event:
                        error = True
                    elif any(choice.get("delta", {}).get("content") for choice in event.get("choices", [])):
                        times.append(time.monotonic())
    except httpx.TimeoutException:
        out.count("timed out")
        return 0.0
    if error or not times:
        out.count("expired" if error else "failed, no tokens")
        return 0.0
    out.count("served")
    out.ttfts.append(times[0] - started)
    out.gaps += [b - a for a, b in itertools.pairwise(times)]
    out.tokens += len(times)
    return 0.0


async def level(url: str, concurrency: int, args: argparse.Namespace) -> tuple[Outcomes, float]:
    out = Outcomes()
    sent = iter(range(args.requests))
    ends = time.monotonic() + args.duration

    async def worker(client: httpx.AsyncClient) -> None:
        for index in sent:
            pause = await one(client, url, index, args, out)
            if time.monotonic() + pause >= ends:
                return
            if pause:
                await asyncio.sleep(pause)

    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=args.timeout, limits=limits) as client:
        started = time.monotonic()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        return out, time.monotonic() - started


def warm_up(url: str) -> None:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
    httpx.post(f"http://{url}/v1/chat/completions", json=body, timeout=120).raise_for_status()


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else sum(values)


def report(args: argparse.Namespace, concurrency: int, out: Outcomes, seconds: float, server: str) -> dict[str, object]:
    load = float(Path("/proc/loadavg").read_text().split()[0])
    row: dict[str, object] = {
        "label": args.label,
        "concurrency": concurrency,
        "server": server,
        "requests": sum(out.kinds.values()),
        "tokens": args.tokens,
        "ttft_ms_budget": args.ttft_ms,
        "outcomes": out.kinds,
        "tok_s": out.tokens / seconds,
        "ttft_p50_ms": 1000 * percentile(out.ttfts, 50) if out.ttfts else None,
        "ttft_p99_ms": 1000 * percentile(out.ttfts, 99) if out.ttfts else None,
        "ttft_max_ms": 1000 * max(out.ttfts) if out.ttfts else None,
        "itl_p50_ms": 1000 * percentile(out.gaps, 50) if out.gaps else None,
        "itl_p99_ms": 1000 * percentile(out.gaps, 99) if out.gaps else None,
        "retry_after_s": sorted(set(out.retry_after)),
        "seconds": seconds,
        "load": load,
    }
    print(json.dumps(row))
    if args.json is not None:
        with args.json.open("a") as file:
            file.write(json.dumps(row) + "\n")
    return row


def main() -> None:
    args = _arguments()
    if args.child:
        serve_child(args)
        return
    child, url, server = start_server(args)
    try:
        warm_up(url)
        for concurrency in [int(c) for c in args.concurrency.split(",")]:
            out, seconds = asyncio.run(level(url, concurrency, args))
            report(args, concurrency, out, seconds, server)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(60)


if __name__ == "__main__":
    main()
