"""A model's own sampling defaults (ir/llm_sampling.py): read from a Hugging Face folder's
``generation_config.json`` or a GGUF's ``general.sampling.*`` metadata, copied into the converted
folder, and layered under a served ``mcp-config.yaml`` (serving/llm_config.py ``over``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp2026ai.ir.llm_sampling import read_sampling, sampling_of_gguf, sampling_of_hf, write_sampling
from mcp2026ai.serving.llm_config import GenerationDefaults


def test_a_hugging_face_generation_config_gives_its_sampling_fields(tmp_path: Path) -> None:
    document = {"do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "bos_token_id": 1}
    (tmp_path / "generation_config.json").write_text(json.dumps(document))
    assert sampling_of_hf(tmp_path) == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}
    converted = tmp_path / "converted"
    converted.mkdir()
    write_sampling(converted, sampling_of_hf(tmp_path))
    assert read_sampling(converted) == {"temperature": 0.6, "top_p": 0.95, "top_k": 20}


def test_odd_or_missing_values_are_left_out(tmp_path: Path) -> None:
    assert sampling_of_hf(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text('{"temperature": 9, "top_p": "high", "top_k": true}')
    assert sampling_of_hf(tmp_path) == {}
    (tmp_path / "generation_config.json").write_text("not json")
    assert sampling_of_hf(tmp_path) == {}
    write_sampling(tmp_path / "missing", {})  # nothing to write: no file, no error


def test_a_gguf_s_sampling_metadata_is_read(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_float32("general.sampling.temp", 0.7)
    writer.add_float32("general.sampling.top_p", 0.8)
    writer.add_int32("general.sampling.top_k", 40)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    values = sampling_of_gguf(path)
    assert (
        values["top_k"] == 40 and values["temperature"] == pytest.approx(0.7) and values["top_p"] == pytest.approx(0.8)
    )


def test_a_served_config_wins_over_the_model_s_own() -> None:
    own = GenerationDefaults(temperature=0.6, top_p=0.95)
    configured = GenerationDefaults(temperature=0.2, max_new_tokens=64)
    merged = configured.over(own)
    assert (merged.temperature, merged.top_p, merged.max_new_tokens) == (0.2, 0.95, 64)
    assert merged.fill({"temperature": 1.0}) == {"temperature": 1.0, "top_p": 0.95, "max_tokens": 64}
