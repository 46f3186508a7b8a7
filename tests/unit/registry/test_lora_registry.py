"""LoRA adapters in the registry (registry/lora_bundle.py, ``mcp model register --adapter``): stored by
digest with the base version's digest as lineage, signable like any version, refused at registration
naming the mismatch when they do not fit the base."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.numpy import load_file, save_file

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.llm_bundle import read_manifest
from mcp2026ai.registry.signing import sign_version, verify_artifact
from mcp2026ai.security import KeyRing, TrustedKeys
from tests.support.lora import make_adapter, set_config

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("llm_cache")]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory, smollm2_hf: Path) -> Path:
    return make_adapter(smollm2_hf, tmp_path_factory.mktemp("adapter") / "sql", seed=1)


def test_an_adapter_is_stored_with_its_base_as_lineage_and_signs_like_any_version(
    registry: ModelRegistry, smollm2_gguf: Path, adapter: Path
) -> None:
    base = registry.register("smollm2", smollm2_gguf)
    record = registry.register("smollm2-sql", adapter, base=base)
    assert (record.format, record.parent) == ("lora", "smollm2:1.0.0")
    manifest = read_manifest(registry.store, record.digest)
    assert manifest.base_digest == base.digest
    assert manifest.base_source_sha256 == read_manifest(registry.store, base.digest).source_sha256
    assert sorted(manifest.files) == ["adapter_config.json", "adapter_model.safetensors"]
    key = KeyRing(registry.home / "keys").create("release")
    sign_version(registry, record, key)
    assert verify_artifact(registry, record, TrustedKeys([key.public])).key_id == key.key_id


def test_an_adapter_that_does_not_fit_is_refused_naming_the_mismatch(
    registry: ModelRegistry, smollm2_gguf: Path, adapter: Path, tmp_path: Path
) -> None:
    base = registry.register("smollm2", smollm2_gguf)
    with pytest.raises(InvalidArgumentError, match="rank 8 is over the limit --max-lora-rank 4"):
        registry.register("x", adapter, base=base, max_lora_rank=4)
    with pytest.raises(InvalidArgumentError, match="name its base model"):
        registry.register("x", adapter)
    other = tmp_path / "other"
    other.mkdir()
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    key = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
    tensors[key] = tensors[key][:, :500].copy()  # an adapter of a model with another hidden size
    save_file(tensors, str(other / "adapter_model.safetensors"))
    (other / "adapter_config.json").write_text((adapter / "adapter_config.json").read_text())
    with pytest.raises(InvalidArgumentError, match=r"layer 0 self_attn.q_proj: adapter maps 500 -> 576, the base 576"):
        registry.register("x", other, base=base)
    set_config(other, target_modules=["q_proj", "embed_tokens"])
    with pytest.raises(InvalidArgumentError, match="target_modules \\['embed_tokens'\\] are not among"):
        registry.register("x", other, base=base)
    assert "x" not in registry.model_names()
