"""Language models in the registry: GGUF import, manifest of content-addressed files, removal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp2026ai.errors import IntegrityError, InvalidArgumentError, ModelImportError, SignatureError
from mcp2026ai.ir.llm_info import LLMPrecision
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.llm_bundle import MANIFEST_SUFFIX, MEMBER_SUFFIX, TEXT_SIGNATURE, read_manifest
from mcp2026ai.registry.signing import sign_version, verify_artifact
from mcp2026ai.security import KeyRing, TrustedKeys

pytestmark = pytest.mark.usefixtures("llm_cache")


def test_gguf_registers_as_a_manifest_of_stored_files(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    record = registry.register("smollm2", smollm2_gguf)
    assert record.format == "gguf" and record.signature == TEXT_SIGNATURE
    info = registry.llm_info(record)
    assert (info.architecture, info.context_length, info.vocab_size) == ("llama", 8192, 49152)
    assert (info.num_layers, info.num_attention_heads, info.num_kv_heads, info.head_size) == (30, 9, 3, 64)
    assert info.precision is LLMPrecision.INT4 and info.has_chat_template and info.eos_token_ids == [2]
    manifest = read_manifest(registry.store, record.digest)
    assert {"model.onnx", "model.onnx.data", "tokenizer.json", "genai_config.json"} <= set(manifest.files)
    folder = registry.llm_folder(record)
    for name, digest in manifest.files.items():  # laid out as links to the stored, content-addressed objects
        assert os.path.samefile(folder / name, registry.store.path_for(digest, MEMBER_SUFFIX))


def test_same_source_same_digest_and_removal_keeps_shared_files(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    first = registry.register("a", smollm2_gguf)
    second = registry.register("b", smollm2_gguf)
    assert first.digest == second.digest
    members = read_manifest(registry.store, first.digest).files.values()
    registry.remove("a")
    assert registry.store.exists(first.digest, MANIFEST_SUFFIX)
    assert all(registry.store.exists(member, MEMBER_SUFFIX) for member in members)
    registry.remove("b")
    assert not registry.store.exists(first.digest, MANIFEST_SUFFIX)
    assert not any(registry.store.exists(member, MEMBER_SUFFIX) for member in members)


def test_an_altered_file_is_refused_on_load(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    record = registry.register("smollm2", smollm2_gguf)
    member = read_manifest(registry.store, record.digest).files["genai_config.json"]
    stored = registry.store.path_for(member, MEMBER_SUFFIX)
    os.chmod(stored, 0o644)
    stored.write_text("{}")
    with pytest.raises(IntegrityError, match="no longer matches"):
        registry.llm_folder(record)


def test_tensor_paths_of_a_language_model_say_what_it_is(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    record = registry.register("smollm2", smollm2_gguf)
    with pytest.raises(InvalidArgumentError, match="is a language model"):
        registry.artifact_path(record)


def test_precision_on_a_tensor_model_is_refused(registry: ModelRegistry, mlp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="precision applies to language models"):
        registry.register("mlp", mlp_path, precision=LLMPrecision.FP32)


def test_a_file_that_is_not_gguf_is_refused_with_its_name(registry: ModelRegistry, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelImportError, match=r"bogus\.gguf: not a readable GGUF file"):
        registry.register("bogus", bogus)
    assert registry.model_names() == []


@pytest.mark.slow
def test_a_hugging_face_folder_registers_too(registry: ModelRegistry, smollm2_hf: Path) -> None:
    record = registry.register("smollm2-hf", smollm2_hf)
    info = registry.llm_info(record)
    assert record.format == "huggingface" and info.source_format == "huggingface"
    assert (info.architecture, info.vocab_size, info.precision) == ("llama", 49152, LLMPrecision.INT4)
    assert (registry.llm_folder(record) / "chat_template.jinja").is_file()


def test_register_or_reuse_matches_a_language_model_by_its_source(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    first = registry.register_or_reuse("smollm2", smollm2_gguf)
    assert registry.register_or_reuse("smollm2", smollm2_gguf) == first
    assert [record.version for record in registry.versions("smollm2")] == ["1.0.0"]


def test_a_signed_language_model_verifies_through_its_manifest(registry: ModelRegistry, smollm2_gguf: Path) -> None:
    record = registry.register("smollm2", smollm2_gguf)
    key = KeyRing(registry.home / "keys").create("release")
    sign_version(registry, record, key)
    trusted = TrustedKeys([key.public])
    assert verify_artifact(registry, record, trusted).key_id == key.key_id
    manifest = registry.store.path_for(record.digest, MANIFEST_SUFFIX)
    os.chmod(manifest, 0o644)
    manifest.write_text(manifest.read_text().replace('"llama"', '"llamb"'))
    with pytest.raises(SignatureError, match="modified on disk"):
        verify_artifact(registry, record, trusted)
