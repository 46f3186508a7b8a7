"""A plan is measured under the admission the server applies (issue 34, item 5): requests the contract's
TTFT budget refuses are counted apart, and the time to first token is that of the requests served."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import build_engine
from mcp2026ai.policy.generation import OUTPUT_TOKENS, _workload

pytestmark = pytest.mark.timeout(120)


def test_a_burst_past_the_ttft_budget_counts_refusals_apart_from_the_served(smollm2_int4: Path) -> None:
    engine = build_engine("plan", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=256))
    try:
        ttfts, gaps, rate, refused = asyncio.run(_workload(engine, 4, budget=0.001))
    finally:
        engine.close()
    # one slot: the three behind the first wait a whole generation, far past 1 ms (429, not a late start)
    assert refused >= 3 and len(ttfts) == 4 - refused
    assert len(gaps) == (OUTPUT_TOKENS - 1) * len(ttfts) and rate >= 0
