"""Incremental detokenization: the hand-written window decoder against tokenizers' ``DecodeStream``.

Both turn SmolLM2's token ids into text deltas one token at a time (what every stream does per
generated token). The texts are English prose, code, and multi-byte text (accents, CJK, emoji:
byte-level BPE splits these characters across tokens). Prints microseconds per token for each, and
checks both give the same text. Run (after one SmolLM2 conversion is cached, ``make test`` does it):

    .venv/bin/python benchmarks/llm/detokenize.py
"""

from __future__ import annotations

import glob
import statistics
import time
from pathlib import Path

from mcp2026ai.generation.tokenizer import IncrementalDecoder, TextTokenizer, WindowDecoder

TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 40,
    "def main() -> int:\n    for index, value in enumerate(values):\n        print(f'{index}: {value!r}')\n" * 20,
    "Café, naïve, Zürich — 東京は日本の首都です。😀🚀 Ünïcødé everywhere! " * 30,
]
ROUNDS = 5


def per_token_us(decoder_class: type, tokenizer: TextTokenizer, ids: list[int]) -> tuple[float, str]:
    best = float("inf")
    text = ""
    for _ in range(ROUNDS):
        decoder = decoder_class(tokenizer)
        started = time.perf_counter()
        text = "".join(decoder.push(token) for token in ids) + decoder.flush()
        best = min(best, time.perf_counter() - started)
    return best / len(ids) * 1e6, text


def main() -> None:
    folder = Path(sorted(glob.glob(".cache/llm/*-int4-*"))[0])
    tokenizer = TextTokenizer(folder)
    rows = []
    for text in TEXTS:
        ids = tokenizer.encode(text, add_special_tokens=False)
        window_us, window_text = per_token_us(WindowDecoder, tokenizer, ids)
        stream_us, stream_text = per_token_us(IncrementalDecoder, tokenizer, ids)
        assert window_text == stream_text == tokenizer.decode(ids), "the decoders disagree"
        rows.append((len(ids), window_us, stream_us))
        print(f"{len(ids):5d} tokens: window {window_us:6.2f} us/token, DecodeStream {stream_us:6.2f} us/token")
    print(
        f"median: window {statistics.median(r[1] for r in rows):.2f}, DecodeStream {statistics.median(r[2] for r in rows):.2f}"
    )


if __name__ == "__main__":
    main()
