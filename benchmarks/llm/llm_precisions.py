"""Which int8 paths keep SmolLM2 correct: greedy token agreement with the fp32 import (the planner's
accuracy gate, ``policy/generation.py``) and decode speed, for every weight precision the import
offers plus the int8 alternatives it does not.

Paths: the model builder's int4 and int8 (weight-only MatMulNBits, the import's ``--precision``),
the builder's int8 with ``accuracy_level=1`` (fp32 activations), and onnxruntime's dynamic int8
quantization (``quantize_dynamic``, MatMul weights, per tensor and per channel) of the fp32 import.
Conversions land in a work folder (the import's own in ``.cache/llm``); agreement is teacher-forced
over the planner's two fixed prompts, 48 tokens each; speed is one greedy sequence, 1 thread.

    .venv/bin/python benchmarks/llm/llm_precisions.py [--work /tmp/llm-precisions]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.contract import parse_contract
from mcp2026ai.ir.llm_convert import convert_llm, gguf_to_hf, keep_last_logits
from mcp2026ai.ir.llm_info import INFO_FILE, LLMPrecision, read_llm_info, save_llm_info
from mcp2026ai.policy.generation import GenerationPlan, measure, token_agreement

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"


def builder_int8(hf: Path, out: Path, extra: list[str]) -> Path:
    """The model builder's int8 with extra options, post-processed as the import does."""
    if not (out / INFO_FILE).is_file():
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out)]
        command += ["-p", "int8", "-e", "cpu", "-c", str(out.parent / "builder-cache"), "--extra_options", *extra]
        subprocess.run(command, capture_output=True, check=True)
        info = read_llm_info(out, LLMPrecision.INT8, "gguf")
        keep_last_logits(out / info.decoder_file, info.logits)
        save_llm_info(out, info)
    return out


def dynamic_int8(fp32: Path, out: Path, per_channel: bool) -> Path:
    """onnxruntime's dynamic int8 quantization of the fp32 import's MatMul weights."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if not (out / INFO_FILE).is_file():
        out.mkdir(parents=True, exist_ok=True)
        for file in fp32.iterdir():
            if file.suffix not in (".onnx", ".data"):
                shutil.copy(file, out / file.name)
        quantize_dynamic(
            str(fp32 / "model.onnx"),
            str(out / "model.onnx"),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=per_channel,
            use_external_data_format=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/llm-precisions"))
    args = parser.parse_args()
    gguf = bundled_model_path("smollm2")
    fp32 = convert_llm(gguf, LLMPrecision.FP32, CACHE)
    hf = args.work / "hf"
    if not (hf / "config.json").is_file():
        gguf_to_hf(gguf, hf)
    paths = {
        "int4 (builder, import default)": convert_llm(gguf, LLMPrecision.INT4, CACHE),
        "int8 (builder, --precision int8)": convert_llm(gguf, LLMPrecision.INT8, CACHE),
        "int8 (builder, accuracy_level=1)": builder_int8(hf, args.work / "builder-acc1", ["accuracy_level=1"]),
        "int8 (quantize_dynamic, per tensor)": dynamic_int8(fp32, args.work / "dynamic", per_channel=False),
        "int8 (quantize_dynamic, per channel)": dynamic_int8(fp32, args.work / "dynamic-pc", per_channel=True),
        "fp32 (reference)": fp32,
    }
    contract = parse_contract({"generation": {"max_model_len": 256}})
    plan = GenerationPlan(threads=1, max_num_seqs=1)
    print(f"{'path':40} {'agreement':>10} {'tokens/s':>9} {'ITL p99 ms':>11}")
    for label, folder in paths.items():
        agreement = token_agreement(folder, fp32)
        figures = measure(folder, plan, contract)
        print(f"{label:40} {agreement:10.1%} {figures.tokens_per_s:9.0f} {figures.itl_p99_ms:11.1f}", flush=True)


if __name__ == "__main__":
    main()
