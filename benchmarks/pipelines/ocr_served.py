"""The bundled OCR pipeline served (``mcp serve``, tritonclient over HTTP, 4 requests in flight)
against the same ONNX sessions and Python steps called directly in a Python loop on one thread.

    .venv/bin/python benchmarks/pipelines/ocr_served.py                       # ~2-3 minutes
    .venv/bin/python benchmarks/pipelines/ocr_served.py --rounds 3 --images 8 --json out.json

The pipeline is registered from ``mcp bundled ocr`` and planned first, as ``mcp policy plan --model ocr
--input image=PAGE`` plans it (each model step's threads and batch limit on its share of the cores,
measured on the shapes a page gives it; ``--plan-seconds`` bounds the candidates' measuring, the
steps' calibration comes on top), then served. The direct
loop is tests/support/pipeline_direct.py: the spec's Python steps and its three models as plain
InferenceSessions (``--direct-threads``, 1 by default: the issue's "direct loop on one thread"),
one image after another. Both answer the same page images of tests/support/ocr_pages.py (736 pixels
square, one to nine lines: their detector inputs have one shape, so the served steps can batch them),
in rounds that alternate which side goes first; each side's figure is images over the wall-clock time
it took to answer them all.

Here a request is about a second of onnxruntime work (the detector most of it), so neither HTTP nor
the server's per-request overhead (a millisecond or two) matters: the figure is what the steps'
threads and batching give over the one-thread loop. Figures from a shared machine are labelled so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))  # benchmarks.* and tests.support.* imports

from tests.support.ocr_pages import TEXT_IMAGES  # noqa: E402
from tests.support.pipeline_direct import image_request, load_pipeline  # noqa: E402

from benchmarks.pipelines.served import (  # noqa: E402
    CONTENTION,
    direct_rps,
    load_average,
    mcp,
    served_rps,
    serving,
    spread,
)
from mcp2026ai.dataplane.pipeline_local import model_step_shapes  # noqa: E402
from mcp2026ai.policy.pipelines import plan_pipeline, store_pipeline_plan  # noqa: E402
from mcp2026ai.policy.profiler import ProfileBudget  # noqa: E402
from mcp2026ai.registry import ModelRegistry  # noqa: E402


def prepare(home: Path, plan_seconds: float, example: bytes) -> tuple[Path, dict[str, Any]]:
    """Register the bundled pipeline in ``home`` and plan it as ``mcp policy plan --model ocr --input
    image=PAGE`` does, less its end-to-end measure (each step measured on the shapes ``example``, an
    encoded page, gives it); the spec and the plan chosen per step."""
    spec = Path(mcp(home, "bundled", "ocr").strip())
    mcp(home, "model", "register", "--name", "ocr", "--path", str(spec))
    if plan_seconds <= 0:
        return spec, {}
    registry = ModelRegistry(home)
    record = registry.resolve("ocr", None)
    step_shapes, _ = asyncio.run(model_step_shapes(registry, record, image_request(example)))
    budget = ProfileBudget(seconds_per_plan=min(1.0, plan_seconds / 20), total_seconds=plan_seconds)
    planned = plan_pipeline(registry, record, budget, step_shapes=step_shapes)
    store_pipeline_plan(registry, record, planned)
    return spec, {
        step.step: f"{step.plan} on {step.cores} core(s), cost {step.cost_ms} ms, p99 budget {step.p99_budget_ms} ms"
        for step in planned.steps
    }


def measure(
    rounds: int, images: int, plan_seconds: float, direct_threads: int, concurrency: int, det_instances: int
) -> dict[str, Any]:
    pages = [case.encoded() for case in TEXT_IMAGES if case.page][:images]
    example = next(case.encoded() for case in TEXT_IMAGES if case.name == "three-lines")
    requests = [image_request(image) for image in pages]
    with tempfile.TemporaryDirectory(prefix="ocr-served-") as folder:
        home = Path(folder)
        planning_started = time.perf_counter()
        spec, plans = prepare(home, plan_seconds, example)
        planning_s = time.perf_counter() - planning_started
        direct = load_pipeline(spec, intra_op_threads=direct_threads)
        per_round = []
        with serving(home, "ocr") as url, ExitStack() as more:
            urls = {"served_http_rps": url}
            if det_instances > 1:  # the same plans, the detector's batches run `det_instances` at once
                urls["served_det_instances_rps"] = more.enter_context(serving(home, "ocr"))
                load_override(urls["served_det_instances_rps"], "ocr.det", det_instances)
            for each in urls.values():
                served_rps(each, "ocr", requests[:2], 2)  # warm-up: sessions' first runs, connections
            direct(requests[0])
            sides = ["direct_loop_rps", *urls]
            for index in range(rounds):
                figures: dict[str, float] = {}
                for side in sides[index % len(sides) :] + sides[: index % len(sides)]:  # rotated per round
                    if side == "direct_loop_rps":
                        figures[side] = round(direct_rps(direct, requests), 3)
                    else:
                        figures[side] = round(served_rps(urls[side], "ocr", requests, concurrency), 3)
                for side in urls:
                    figures[side.replace("_rps", "_over_direct")] = round(figures[side] / figures["direct_loop_rps"], 3)
                figures["load_average"] = load_average()[0]
                per_round.append(figures)
        direct.close()
    keys = [key for key in per_round[0] if key != "load_average"]
    return {
        "images_per_round": len(requests),
        "det_instances_variant": det_instances if det_instances > 1 else None,
        "concurrency": concurrency,
        "direct_threads": direct_threads,
        "plans": plans,
        "planning_s": round(planning_s, 1),
        "rounds": per_round,
        **{key: spread([r[key] for r in per_round]) for key in keys},
    }


def load_override(url: str, model: str, instances: int) -> None:
    """Reload ``model`` on the server at ``url`` with ``instances`` batches at once (model control, as
    Triton's ``instance_group``)."""
    config = json.dumps({"instance_group": [{"count": instances}]})
    answer = httpx.post(f"http://{url}/v2/repository/models/{model}/load", json={"parameters": {"config": config}},
                        timeout=120)  # fmt: skip
    answer.raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=8, help="page images per side per round (at most 18)")
    parser.add_argument("--plan-seconds", type=float, default=10.0, help="the plan's measuring budget (0: no plan)")
    parser.add_argument("--direct-threads", type=int, default=1, help="the direct loop's intra-op threads (0: all)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--det-instances", type=int, default=0, help="also serve with the detector's batches this many at once (0: not)"
    )
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    report = {
        "note": CONTENTION,
        "load_average_before": load_average(),
        "ocr": measure(
            args.rounds, args.images, args.plan_seconds, args.direct_threads, args.concurrency, args.det_instances
        ),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
