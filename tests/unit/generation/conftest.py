"""The engine most generation tests run against (a module may declare its own ``engine`` with another config)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine


@pytest.fixture(scope="module")
def engine(smollm2_int4: Path) -> Iterator[Engine]:
    """SmolLM2-135M int4, 8 sequences of up to 512 tokens; one per test module."""
    running = build_engine("smollm2", smollm2_int4, EngineConfig(max_num_seqs=8, max_model_len=512))
    yield running
    running.close()
