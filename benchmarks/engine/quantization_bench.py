"""fp32 vs int8 (static, dynamic) vs fp16: throughput and drift, side by side, in one run.

Models: the ONNX light zoo's ResNet-50 (the real architecture, fixed batch 1; its weights are
synthetic constants, so its outputs are nearly input-independent and its drift figures say little)
and PaddleOCR's text-direction classifier ocr-cls (real trained weights, batch 8 of rendered text
lines, so its drift figures are meaningful). Each variant is timed in interleaved rounds (other
processes share this machine); the median round counts.

    python benchmarks/engine/quantization_bench.py [--seconds 3] [--rounds 3] [--threads 0]

Prints a table and writes benchmarks/results/quantization.json, with this CPU's flags: int8 gains
on x86 depend on VNNI (avx512_vnni / avx_vnni); the issue's target is >= 2x int8/fp32 on VNNI CPUs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.imaging import image_to_tensor
from mcp2026ai.quantization import QuantizeOptions, Scheme, quantize_file
from mcp2026ai.quantization.drift import compare
from mcp2026ai.registry import Preprocessing

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "quantization.json"
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "f16c", "avx512_fp16")
VARIANTS: dict[str, QuantizeOptions | None] = {
    "fp32": None,
    "int8-static": QuantizeOptions(scheme=Scheme.INT8_STATIC),
    "int8-static-pc": QuantizeOptions(scheme=Scheme.INT8_STATIC, per_channel=True),
    "int8-dynamic": QuantizeOptions(scheme=Scheme.INT8_DYNAMIC),
    "fp16": QuantizeOptions(scheme=Scheme.FP16),
}


@dataclass
class Row:
    model: str
    variant: str
    batch: int
    items_per_s: float
    ratio_vs_fp32: float
    rel_l2: float
    top1_agreement: float | None
    confidence_shift: float | None
    size_kib: float
    quantize_s: float


def cpu_info() -> dict[str, object]:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    return {
        "model": model or platform.processor(),
        "cores": os.cpu_count(),
        "flags": {flag: flag in flags for flag in CPU_FLAGS},
        "onnxruntime": ort.__version__,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def text_lines(count: int, seed: int) -> np.ndarray:
    spec = importlib.util.spec_from_file_location("make_text_image", ROOT / "scripts" / "make_text_image.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    prep = Preprocessing(**OCR_CLS_PREPROCESSING)
    words = ["contract", "inference", "latency", "budget", "registry", "quantized", "drift", "signature", "tensor"]
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) for _ in range(count)]
    return np.concatenate([image_to_tensor(script.render(line, i % 2 == 1), prep) for i, line in enumerate(lines)])


def workloads() -> list[dict[str, object]]:
    rng = np.random.default_rng(0)
    images = rng.standard_normal((16, 3, 224, 224)).astype(np.float32)
    return [
        {
            "model": "onnx-resnet50",
            "input": "gpu_0/data_0",
            "batch": 1,
            "calibration": [{"gpu_0/data_0": images[i : i + 1]} for i in range(8)],
            "validation": images[8:],
        },
        {
            "model": "ocr-cls",
            "input": "x",
            "batch": 8,
            "calibration": [{"x": batch} for batch in np.split(text_lines(32, seed=1), 4)],
            "validation": text_lines(48, seed=2),
        },
    ]


def session(path: Path, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def outputs(sess: ort.InferenceSession, name: str, data: np.ndarray, batch: int) -> dict[str, np.ndarray]:
    chunks = [sess.run(None, {name: data[i : i + batch]}) for i in range(0, len(data) - batch + 1, batch)]
    names = [output.name for output in sess.get_outputs()]
    return {n: np.concatenate([chunk[k] for chunk in chunks]) for k, n in enumerate(names)}


def timed_round(sess: ort.InferenceSession, feed: dict[str, np.ndarray], seconds: float) -> float:
    """Inferences per second over one round of about ``seconds``."""
    sess.run(None, feed)
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        sess.run(None, feed)
        runs += 1
    return runs / (time.perf_counter() - start)


def bench_model(work: dict[str, object], tmp: Path, args: argparse.Namespace) -> list[Row]:
    name, input_name, batch = str(work["model"]), str(work["input"]), int(work["batch"])  # type: ignore[call-overload]
    source = bundled_model_path(name)
    paths, quantize_s = {"fp32": source}, {"fp32": 0.0}
    for variant, options in VARIANTS.items():
        if options is not None:
            start = time.perf_counter()
            calibration = work["calibration"] if options.scheme.needs_calibration else None
            paths[variant] = quantize_file(source, tmp / f"{name}-{variant}.onnx", options, calibration)  # type: ignore[arg-type]
            quantize_s[variant] = time.perf_counter() - start
    sessions = {variant: session(path, args.threads) for variant, path in paths.items()}
    validation: np.ndarray = work["validation"]  # type: ignore[assignment]
    baseline = outputs(sessions["fp32"], input_name, validation, batch)
    feed = {input_name: validation[:batch]}
    rounds: dict[str, list[float]] = {variant: [] for variant in sessions}
    for _ in range(args.rounds):
        for variant, sess in sessions.items():
            rounds[variant].append(timed_round(sess, feed, args.seconds) * batch)
    speed = {variant: statistics.median(values) for variant, values in rounds.items()}
    rows = []
    for variant, sess in sessions.items():
        report = compare(baseline, outputs(sess, input_name, validation, batch))
        rows.append(
            Row(
                model=name,
                variant=variant,
                batch=batch,
                items_per_s=round(speed[variant], 2),
                ratio_vs_fp32=round(speed[variant] / speed["fp32"], 3),
                rel_l2=round(report.rel_l2, 5),
                top1_agreement=report.primary.top1_agreement,
                confidence_shift=None
                if report.primary.confidence_shift is None
                else round(report.primary.confidence_shift, 5),
                size_kib=round(paths[variant].stat().st_size / 1024, 1),
                quantize_s=round(quantize_s[variant], 2),
            )
        )
    return rows


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'model':<14}{'variant':<16}{'batch':>6}{'items/s':>10}{'x fp32':>8}"
        f"{'rel_l2':>9}{'top1':>7}{'conf':>9}{'KiB':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        top1 = "-" if row.top1_agreement is None else f"{row.top1_agreement:.3f}"
        conf = "-" if row.confidence_shift is None else f"{row.confidence_shift:+.4f}"
        print(
            f"{row.model:<14}{row.variant:<16}{row.batch:>6}{row.items_per_s:>10.1f}{row.ratio_vs_fp32:>8.2f}"
            f"{row.rel_l2:>9.4f}{top1:>7}{conf:>9}{row.size_kib:>9.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="Length of one timed round per variant.")
    parser.add_argument("--rounds", type=int, default=3, help="Interleaved rounds; the median counts.")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads (0: all cores).")
    args = parser.parse_args()
    ort.set_default_logger_severity(3)
    cpu = cpu_info()
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores, load {cpu['load_average_1m']}); flags: {cpu['flags']}")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [row for work in workloads() for row in bench_model(work, Path(tmp), args)]
    print_table(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    document = {"cpu": cpu, "settings": vars(args), "rows": [asdict(row) for row in rows]}
    RESULTS.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
