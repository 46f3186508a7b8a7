"""The engine most generation tests run against (a module may declare its own ``engine`` with another config)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine


@pytest.fixture(scope="module")
def engine(smollm2_int4: Path) -> Iterator[Engine]:
    """SmolLM2-135M int4, 8 sequences of up to 512 tokens, batch-invariant on every host (its tests compare
    answers alone and in a batch); one per test module."""
    config = EngineConfig(max_num_seqs=8, max_model_len=512, batch_invariance=BatchInvariance.AUTO)
    running = build_engine("smollm2", smollm2_int4, config)
    yield running
    running.close()
