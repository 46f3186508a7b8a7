"""Mixed LoRA adapters in one batch vs one adapter, and the mechanism that applies them, on SmolLM2 (int4).

Two parts, interleaved in rounds (the median is what a busy machine gives, the max the least disturbed):

1. The engine at c=8: 8 concurrent greedy streams of ``--tokens`` tokens each, all on adapter ``a``
   (single-adapter) vs spread over the base and adapters ``a`` and ``b`` (mixed), and the base alone on a
   decoder without LoRA inputs (what adapters cost when none is used). Target: mixed >= 0.6 x single.
2. One decode step of 8 rows (200 tokens of context each), two ways of applying per-row adapters:
   masked (what the engine does: one run, every row selects its adapter's columns: ``ir/lora_graph.py``)
   vs grouped (one run per adapter, as a scheduler that grouped rows per adapter would make: 3 + 3 + 2
   rows), beside the plain decoder's step.

The adapters are random rank-``--rank`` matrices of the right shapes (no download, no peft needed).
Figures on the shared 2-core development host are measured under contention (other work on the cores).

    .venv/bin/python benchmarks/engine/lora_mix.py [--rounds 3] [--tokens 48] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision, load_llm_info
from mcp2026ai.ir.lora_adapter import AdapterConfig, AdapterWeights
from mcp2026ai.ir.lora_graph import NO_ADAPTER, LoraLayout, LoraTarget, lora_targets
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
STREAMS = 8
CONTEXT = 200
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def random_adapter(targets: list[LoraTarget], rank: int, seed: int) -> AdapterWeights:
    rng = np.random.default_rng(seed)
    matrices = {}
    for target in targets:
        for part in target.parts:
            a = rng.standard_normal((rank, target.in_features)).astype(np.float32) * 0.05
            b = rng.standard_normal((part.size, rank)).astype(np.float32) * 0.05
            matrices[(target.layer, part.module)] = (a, b)
    return AdapterWeights(AdapterConfig(r=rank, lora_alpha=2 * rank, target_modules=MODULES), matrices)


def throughput(engine: Engine, adapters: list[str | None], tokens: int) -> float:
    """Generated tokens per second of ``len(adapters)`` concurrent streams (stream i on ``adapters[i]``)."""
    ids = engine.tokenizer.chat_ids([{"role": "user", "content": "Tell me about the sea."}])
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)

    async def run() -> float:
        started = time.perf_counter()
        streams = [
            engine.submit(GenerationRequest(f"r{i}-{time.monotonic_ns()}", ids, params, adapter=adapter))
            for i, adapter in enumerate(adapters)
        ]
        await asyncio.gather(*(stream.collect(1) for stream in streams))
        return len(adapters) * tokens / (time.perf_counter() - started)

    return asyncio.run(run())


def step_ms(run: Callable[[], object], repeats: int = 10) -> float:
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def prefilled(decoder: OnnxDecoder) -> OnnxDecoder:
    for slot in range(STREAMS):
        decoder.prefill(slot, list(range(1, CONTEXT)))
    return decoder


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    info = load_llm_info(folder)
    targets = lora_targets(folder / info.decoder_file, info)
    weights = {name: random_adapter(targets, arguments.rank, seed) for seed, name in enumerate(("a", "b"))}
    base_config = {"max_num_seqs": STREAMS, "max_model_len": 512, "prefix_cache_mb": 0}
    lora = build_engine("lora", folder, EngineConfig(**base_config, max_loras=2, max_lora_rank=arguments.rank))
    plain = build_engine("plain", folder, EngineConfig(**base_config))
    for name, adapter in weights.items():
        lora.load_adapter(name, adapter)
    decoder = prefilled(OnnxDecoder(folder, info, STREAMS, 512, lora=LoraLayout(2, arguments.rank)))
    for slot, adapter in enumerate(weights.values()):
        assert decoder.lora is not None
        decoder.lora.write(slot, adapter)
    plain_decoder = prefilled(OnnxDecoder(folder, info, STREAMS, 512))
    rows, lengths = [5] * STREAMS, [CONTEXT] * STREAMS
    mixed_rows = [NO_ADAPTER, 0, 1] * 2 + [NO_ADAPTER, 0]
    figures: dict[str, list[float]] = {
        key: []
        for key in (
            "single tok/s",
            "mixed tok/s",
            "base on plain decoder tok/s",
            "masked step ms",
            "grouped step ms",
            "plain step ms",
        )
    }
    mixed = [None, "a", "b"] * 2 + [None, "a"]
    for _ in range(arguments.rounds):
        figures["single tok/s"].append(throughput(lora, ["a"] * STREAMS, arguments.tokens))
        figures["mixed tok/s"].append(throughput(lora, mixed, arguments.tokens))  # type: ignore[arg-type]
        figures["base on plain decoder tok/s"].append(throughput(plain, [None] * STREAMS, arguments.tokens))
        figures["masked step ms"].append(step_ms(lambda: decoder.decode(rows, lengths, mixed_rows)))
        figures["grouped step ms"].append(
            step_ms(
                lambda: [
                    decoder.decode(rows[:n], lengths[:n], [slot] * n) for slot, n in ((NO_ADAPTER, 3), (0, 3), (1, 2))
                ]
            )
        )
        figures["plain step ms"].append(step_ms(lambda: plain_decoder.decode(rows, lengths)))
    lora.close()
    plain.close()
    report = {
        "note": "measured under contention (other work on the 2 cores) unless run on a quiet machine",
        "streams": STREAMS,
        "rank": arguments.rank,
        **{name: summary(values) for name, values in figures.items()},
        "mixed/single (median)": round(
            statistics.median(figures["mixed tok/s"]) / statistics.median(figures["single tok/s"]), 3
        ),
        "masked/plain step (median)": round(
            statistics.median(figures["masked step ms"]) / statistics.median(figures["plain step ms"]), 3
        ),
        "grouped/masked step (median)": round(
            statistics.median(figures["grouped step ms"]) / statistics.median(figures["masked step ms"]), 3
        ),
    }
    print(json.dumps(report, indent=2))
    if arguments.json:
        arguments.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
