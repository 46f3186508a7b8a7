"""The decoder's rows on the real SmolLM2 int4 import: from two rows up a row's logits do not depend on the
number of rows or its place among them (on every host kind); a lone row matches them where the host's kernels
say so, and padded everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.ir.llm_info import load_llm_info
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

pytestmark = pytest.mark.timeout(180)

PROMPTS = [[11, 22, 33, 44, 55], [101, 7, 9], [5, 6, 7, 8, 9, 10, 11], [300, 301], [11, 22, 33, 44, 55]]
NEXT = [60, 61, 62, 63, 60]  # rows 0 and 4 hold the same sequence


@pytest.fixture(scope="module")
def decoder(smollm2_int4: Path) -> Iterator[OnnxDecoder]:
    running = OnnxDecoder(smollm2_int4, load_llm_info(smollm2_int4), num_slots=5, max_len=64)
    for slot, prompt in enumerate(PROMPTS):
        running.prefill(slot, prompt)
    yield running


def decode(decoder: OnnxDecoder, rows: int) -> np.ndarray:
    return decoder.decode(NEXT[:rows], [len(p) + 1 for p in PROMPTS[:rows]]).copy()


def test_a_rows_logits_are_the_same_in_any_batch_of_two_or_more(decoder: OnnxDecoder) -> None:
    five = decode(decoder, 5)
    assert np.array_equal(five[4], five[0])  # the same sequence at another place
    for rows in (2, 3, 4):
        assert np.array_equal(decode(decoder, rows), five[:rows])


def test_the_host_probe_says_whether_a_lone_row_matches_and_padding_makes_it_match(smollm2_int4: Path) -> None:
    fresh = OnnxDecoder(smollm2_int4, load_llm_info(smollm2_int4), num_slots=1, max_len=64)  # the spare slot pads
    matches = fresh.lone_row_matches_batched()
    fresh.prefill(0, PROMPTS[0])
    alone = fresh.decode(NEXT[:1], [len(PROMPTS[0]) + 1]).copy()
    padded = fresh.decode([NEXT[0], 0], [len(PROMPTS[0]) + 1, 1]).copy()
    assert np.array_equal(alone[0], padded[0]) == matches


def test_a_one_token_chunk_after_cached_context_gives_the_logits_of_a_longer_chunk(decoder: OnnxDecoder) -> None:
    prompt = [*PROMPTS[2], 12, 13]
    decoder.pad_lone_rows = True
    try:
        decoder.prefill(1, prompt[:-2])
        decoder.prefill(1, prompt[:-1], cached=len(prompt) - 2)
        last_alone = decoder.prefill(1, prompt, cached=len(prompt) - 1).copy()
        decoder.prefill(1, prompt[:-2])
        last_of_two = decoder.prefill(1, prompt, cached=len(prompt) - 2).copy()
    finally:
        decoder.pad_lone_rows = False
        decoder.prefill(1, PROMPTS[1])  # slot 1 as the other tests expect it
    assert np.array_equal(last_alone, last_of_two)
