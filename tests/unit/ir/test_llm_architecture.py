"""An architecture the importer cannot convert is refused at registration, named (ir/llm_architecture.py)."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.llm_architecture import check_convertible
from mcp2026ai.registry import ModelRegistry


def tiny_gguf(path: Path, architecture: str) -> Path:
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_gguf_of_another_architecture_is_refused_at_register(tmp_path: Path) -> None:
    source = tiny_gguf(tmp_path / "encoder.gguf", "bert")
    with pytest.raises(ModelImportError, match=r"architecture 'bert' cannot be converted .*convertible: .*llama"):
        ModelRegistry(tmp_path / "home").register("encoder", source)
    assert ModelRegistry(tmp_path / "home").model_names() == []


def test_a_hugging_face_folder_names_its_architecture(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"]}))
    with pytest.raises(ModelImportError, match="architecture 'BertForMaskedLM'"):
        check_convertible(tmp_path)


def test_convertible_ones_pass() -> None:
    assert check_convertible(bundled_model_path("smollm2")) == "llama"


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(ModelImportError, match="not a readable GGUF file"):
        check_convertible(tmp_path / "x.gguf")
