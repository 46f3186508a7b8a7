"""xgrammar against llguidance on SmolLM2's tokenizer: the measurement that chose generation/grammar.py's
engine. For each: the one-off tokenizer setup, the compile time of a 20-property JSON schema (three
schemas new to the compiler), and the cost of one token mask along a valid 20-property document
(median and p90 over its tokens).

Needs both engines: ``pip install xgrammar llguidance`` (xgrammar is not a project dependency).

    .venv/bin/python benchmarks/llm/grammar_engines.py
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
VOCAB, EOS = 49152, 2
_KINDS = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}]
_VALUES = {"string": "abc", "integer": 5, "number": 1.5, "boolean": True}
PROPERTIES = {f"field_{i}": _KINDS[i % 4] for i in range(20)}
DOCUMENT = json.dumps({name: _VALUES[kind["type"]] for name, kind in PROPERTIES.items()})


def schema(title: str) -> str:
    return json.dumps({"title": title, "type": "object", "properties": PROPERTIES, "required": list(PROPERTIES)})


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def xgrammar_figures(tokenizer_file: Path, ids: list[int]) -> None:
    import xgrammar
    from tokenizers import Tokenizer

    started = time.perf_counter()
    vocab = Tokenizer.from_file(str(tokenizer_file)).get_vocab()
    encoded = [""] * len(vocab)
    for text, index in vocab.items():
        encoded[index] = text
    info = xgrammar.TokenizerInfo(
        encoded, vocab_type=xgrammar.VocabType.BYTE_LEVEL, vocab_size=VOCAB, stop_token_ids=[EOS]
    )
    compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    setup = time.perf_counter() - started
    compiles, compiled = [], None
    for round_ in range(3):
        started = time.perf_counter()
        compiled = compiler.compile_json_schema(schema(f"x{round_}"))
        compiles.append(time.perf_counter() - started)
    matcher = xgrammar.GrammarMatcher(compiled)
    bitmask = xgrammar.allocate_token_bitmask(1, VOCAB)
    masks = []
    for token in ids:
        started = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        masks.append(time.perf_counter() - started)
        assert matcher.accept_token(token)
    report("xgrammar", setup, compiles, masks)


def llguidance_figures(tokenizer_file: Path, ids: list[int]) -> None:
    import llguidance

    started = time.perf_counter()
    tokenizer = llguidance.LLTokenizer(str(tokenizer_file), n_vocab=VOCAB, eos_token=EOS)
    setup = time.perf_counter() - started
    bitmask = np.full((VOCAB + 31) // 32, -1, dtype=np.int32)
    compiles, matcher = [], None
    for round_ in range(3):
        started = time.perf_counter()
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema(f"l{round_}"))
        matcher = llguidance.LLMatcher(tokenizer, grammar)
        matcher.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)  # its lexer is built lazily
        compiles.append(time.perf_counter() - started)
    assert matcher is not None
    masks = []
    for token in ids:
        started = time.perf_counter()
        matcher.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)
        masks.append(time.perf_counter() - started)
        assert matcher.consume_token(token)
    report("llguidance", setup, compiles, masks)


def report(name: str, setup: float, compiles: list[float], masks: list[float]) -> None:
    p90 = sorted(masks)[int(len(masks) * 0.9)]
    print(
        f"{name:10s} tokenizer setup {ms(setup)} ms; compile ms {[ms(c) for c in compiles]}; "
        f"mask median {statistics.median(masks) * 1e6:.0f} us, p90 {p90 * 1e6:.0f} us over {len(masks)} tokens"
    )


def main() -> None:
    from tokenizers import Tokenizer

    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    tokenizer_file = folder / "tokenizer.json"
    ids = Tokenizer.from_file(str(tokenizer_file)).encode(DOCUMENT, add_special_tokens=False).ids
    xgrammar_figures(tokenizer_file, ids)
    llguidance_figures(tokenizer_file, ids)


if __name__ == "__main__":
    main()
