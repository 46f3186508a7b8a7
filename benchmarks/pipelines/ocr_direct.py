"""RapidOCR() against the bundled OCR pipeline run by the direct runner, on the twenty test images.

Both answer each image of tests/support/ocr_pages.py in turn, interleaved (the order alternates per
image so neither always runs on a warmer cache), one request at a time, on the same onnxruntime
defaults (all cores). The direct runner is tests/support/pipeline_direct.py: the spec's Python steps
loaded from the file `mcp bundled ocr` writes, its models as plain InferenceSessions called in a loop,
so the difference is what the pipeline's form costs (tensors between steps, one rec call instead of
groups of 6) before any server is involved. It also reports each step's share of the direct runner's
time. Bounded: --rounds passes over the 20 images (default 1), stopped after --max-seconds (default 100).

    .venv/bin/python benchmarks/pipelines/ocr_direct.py [--rounds 1] [--max-seconds 100]

Writes benchmarks/results/ocr_direct.json. Figures taken on a shared machine are labelled with its
load average: compare them only with figures from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # benchmarks.* and tests.support.* imports

from tests.support.ocr_pages import TEXT_IMAGES  # noqa: E402
from tests.support.pipeline_direct import image_request, load_pipeline  # noqa: E402

from mcp2026ai.bundled_pipelines import materialize_pipeline  # noqa: E402


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _summary(seconds: list[float]) -> dict[str, float]:
    return {
        "images": len(seconds),
        "total_s": round(sum(seconds), 3),
        "p50_ms": round(1000 * statistics.median(seconds), 1),
        "p90_ms": round(1000 * _percentile(seconds, 0.9), 1),
    }


def run(rounds: int, max_seconds: float) -> dict[str, Any]:
    from rapidocr_onnxruntime import RapidOCR

    reference = RapidOCR()
    with tempfile.TemporaryDirectory() as home:
        direct = load_pipeline(materialize_pipeline("ocr", Path(home)))
    images = [case.encoded() for case in TEXT_IMAGES]
    reference(images[2])  # one warm-up each: sessions' first runs allocate
    direct(image_request(images[2]))
    times: dict[str, list[float]] = {"rapidocr": [], "direct": []}
    steps: dict[str, list[float]] = defaultdict(list)
    runners: dict[str, Callable[[bytes], object]] = {
        "rapidocr": reference,
        "direct": lambda image: direct(image_request(image)),
    }
    started = time.perf_counter()
    for round_index in range(rounds):
        for index, image in enumerate(images):
            if time.perf_counter() - started > max_seconds:
                break
            order = ["rapidocr", "direct"] if (index + round_index) % 2 == 0 else ["direct", "rapidocr"]
            for name in order:
                began = time.perf_counter()
                runners[name](image)
                times[name].append(time.perf_counter() - began)
            for step, seconds in direct.timings.items():
                steps[step].append(seconds)
    done = min(len(times["rapidocr"]), len(times["direct"]))
    direct_total = sum(times["direct"][:done]) or 1.0
    return {
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "rapidocr": _summary(times["rapidocr"][:done]),
        "direct": _summary(times["direct"][:done]),
        "direct_over_rapidocr": round(direct_total / (sum(times["rapidocr"][:done]) or 1.0), 3),
        "direct_steps_share": {step: round(sum(values) / direct_total, 3) for step, values in steps.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=100.0)
    args = parser.parse_args()
    result = run(args.rounds, args.max_seconds)
    out = REPO_ROOT / "benchmarks" / "results" / "ocr_direct.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    if result["load_average_1m"] > (result["cpus"] or 1):
        print(f"measured under contention (load average {result['load_average_1m']} on {result['cpus']} CPUs)")


if __name__ == "__main__":
    main()
