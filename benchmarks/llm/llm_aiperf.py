"""NVIDIA aiperf 0.13 for the text-generation benchmark: the command line and its JSON export.

One aiperf run = one (server, concurrency) cell: synthetic ~128-token prompts, exactly 128 output
tokens (``ignore_eos``), streamed chat completions, a bounded request count. ``--request-rate``
goes with ``--concurrency`` so aiperf's workers sleep between sends instead of spinning a core on
this 2-core machine. aiperf issues its send credits on the rate's grid (constant arrivals), so a
stream whose request ends waits for the next grid point before sending again: at 2 requests/s per
stream llama-server sat idle ~250 ms between 1.3 s requests at c=1; at 20 per stream the gap is
~30 ms (2 %), far above what any server here sustains, so concurrency stays the bound and
aiperf's processes use ~3 % of a core during a run. A new connection per request
(``--connection-reuse-strategy never``; on loopback it costs well under a millisecond): with
pooled connections, llama-server closed ones left idle past its keep-alive during 9 s waves of
c=8 requests and aiperf counted the next request sent on them as failed
(ServerDisconnectedError). Each run gets its own ``--random-seed``: the
same seed means the same prompts, which a
server with a prompt cache (llama-server keeps each slot's last prompt) answers without prefill,
faking the TTFT.
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXPORT_FILE = "profile_export_aiperf.json"
RATE_PER_STREAM = 20.0


class AiperfError(RuntimeError):
    """An aiperf run gave no usable figures; the message says why."""


@dataclass(frozen=True)
class Workload:
    """What one aiperf run sends."""

    concurrency: int
    requests: int
    seed: int
    input_tokens: int = 128
    output_tokens: int = 128

    @property
    def request_rate(self) -> float:
        """Requests/s for ``--request-rate``: 20 per concurrent stream (see the module docstring)."""
        return RATE_PER_STREAM * self.concurrency


def workloads(levels: list[int], requests_per_stream: int, min_requests: int) -> list[Workload]:
    """One workload per concurrency level: max(min_requests, requests_per_stream x c) requests, each
    with a fresh seed from the system's entropy (distinct within the list, and across runs)."""
    rng = random.SystemRandom()
    seeds: set[int] = set()
    while len(seeds) < len(levels):
        seeds.add(rng.randrange(1, 2**31))
    return [
        Workload(concurrency=c, requests=max(min_requests, requests_per_stream * c), seed=seed)
        for c, seed in zip(levels, sorted(seeds, key=lambda _: rng.random()), strict=True)
    ]


@dataclass(frozen=True)
class AiperfResult:
    """The figures one aiperf run reports (latencies in ms; percentiles over requests)."""

    requests: int
    errors: int
    duration_s: float
    output_tokens_per_s: float
    output_tokens_mean: float
    ttft_p50_ms: float
    ttft_p99_ms: float
    itl_p50_ms: float
    itl_p99_ms: float


def aiperf_command(
    aiperf: Path, url: str, model: str, tokenizer: Path, workload: Workload, artifacts: Path
) -> list[str]:
    """The ``aiperf profile`` command line for one cell (tokenizer: an absolute local folder)."""
    return [
        str(aiperf),
        "profile",
        "--model",
        model,
        "--url",
        url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        str(tokenizer.resolve()),
        "--prompt-input-tokens-mean",
        str(workload.input_tokens),
        "--prompt-input-tokens-stddev",
        "0",
        "--prompt-output-tokens-mean",
        str(workload.output_tokens),
        "--prompt-output-tokens-stddev",
        "0",
        "--extra-inputs",
        "ignore_eos:true",
        "--concurrency",
        str(workload.concurrency),
        "--request-rate",
        f"{workload.request_rate:g}",
        "--arrival-pattern",
        "constant",
        "--request-count",
        str(workload.requests),
        "--random-seed",
        str(workload.seed),
        "--output-artifact-dir",
        str(artifacts),
        "--ui-type",
        "none",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--connection-reuse-strategy",
        "never",
        "--workers-max",
        "1",
        "--record-processors",
        "1",
    ]


def run_aiperf(command: list[str], artifacts: Path, timeout_s: float) -> AiperfResult:
    """Run one aiperf command (output to ``artifacts/aiperf.out``) and parse its export."""
    artifacts.mkdir(parents=True, exist_ok=True)
    log = artifacts / "aiperf.out"
    try:
        with log.open("w") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as error:
        raise AiperfError(f"aiperf did not finish within {timeout_s:.0f} s (log: {log})") from error
    export = artifacts / EXPORT_FILE
    if done.returncode != 0 or not export.exists():
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])[-400:]
        raise AiperfError(f"aiperf exited with {done.returncode}: {tail}")
    return parse_export(json.loads(export.read_text()))


def _stat(document: dict[str, Any], metric: str, stat: str) -> float:
    try:
        return float(document[metric][stat])
    except (KeyError, TypeError, ValueError) as error:
        raise AiperfError(f"aiperf export has no {metric}.{stat}") from error


def parse_export(document: dict[str, Any]) -> AiperfResult:
    """The figures of one ``profile_export_aiperf.json``; AiperfError if the run is not usable.

    A run is usable when it completed (not cancelled) and at least one request succeeded: aiperf
    computes latency percentiles over successful requests only, so errors are reported alongside.
    """
    if document.get("was_cancelled") or document.get("is_complete") is False:
        raise AiperfError("aiperf run was cancelled before it completed")
    errors = sum(int(entry.get("count", 1)) for entry in document.get("error_summary") or [])
    requests = int(_stat(document, "request_count", "avg")) if "request_count" in document else 0
    if requests == 0:
        reasons = "; ".join(str(e.get("error_details", e))[:200] for e in document.get("error_summary") or [])
        raise AiperfError(f"no request succeeded ({errors} errors{': ' + reasons if reasons else ''})")
    return AiperfResult(
        requests=requests,
        errors=errors,
        duration_s=_stat(document, "benchmark_duration", "avg"),
        output_tokens_per_s=_stat(document, "output_token_throughput", "avg"),
        output_tokens_mean=_stat(document, "output_sequence_length", "avg"),
        ttft_p50_ms=_stat(document, "time_to_first_token", "p50"),
        ttft_p99_ms=_stat(document, "time_to_first_token", "p99"),
        itl_p50_ms=_stat(document, "inter_token_latency", "p50"),
        itl_p99_ms=_stat(document, "inter_token_latency", "p99"),
    )
