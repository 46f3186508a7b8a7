"""The seeds' mcp-config.yaml: accepted as written, defaults that requests override, clear notes
and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.errors import ContractError, NotFoundError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.serving.llm_config import (
    GenerationDefaults,
    config_notes,
    load_serving_config,
    resolve_model,
)
from support.models import mlp_model

SEED = """\
model: qwen2-7b-instruct
inference:
  strategy: speculative_decoding
  parameters:
    temperature: 0.3
    max_new_tokens: 2048
    stop_sequences: ["\\n\\n", "<|eot_id|>"]
resources:
  gpu_memory_gb: 16
  min_replicas: 2
  autoscale:
    target_gpu_utilization: 0.75
"""


def test_the_seed_config_is_accepted_as_written(tmp_path: Path) -> None:
    (tmp_path / "mcp-config.yaml").write_text(SEED)
    config = load_serving_config(tmp_path / "mcp-config.yaml")
    assert config.model == "qwen2-7b-instruct"
    assert config.inference.parameters.stop_sequences == ["\n\n", "<|eot_id|>"]
    assert config.resources.replica_range() is not None and config.resources.replica_range().min == 2  # type: ignore[union-attr]
    notes = config_notes(config, has_gpu=False)
    assert any("gpu_memory_gb: 16 is ignored: this host has no GPU" in note for note in notes)
    assert any("speculative_decoding" in note for note in notes)
    assert not [note for note in config_notes(config, has_gpu=True) if "gpu" in note]


def test_an_unknown_model_is_refused_with_the_registered_ones(tmp_path: Path) -> None:
    (tmp_path / "mcp-config.yaml").write_text(SEED)
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    config = load_serving_config(tmp_path / "mcp-config.yaml")
    with pytest.raises(NotFoundError, match=r"'qwen2-7b-instruct' is not registered \(registered: mlp\)"):
        resolve_model(registry, config, "mcp-config.yaml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("model: m\ninference: {parameters: {temperature: 5}}\n", "inference.parameters.temperature"),
        ("model: m\ninference: {strategy: beam}\n", "inference.strategy"),
        ("model: m\nresources: {gpu_memory_gb: -1}\n", "resources.gpu_memory_gb"),
        ("model: m\ninference: {parameters: {max_new_token: 5}}\n", "max_new_token"),
        ("- a list\n", "expected a mapping"),
    ],
)
def test_a_bad_config_names_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ContractError, match=rf"{path}.*{message}|{message}.*{path}"):
        load_serving_config(path)


def test_defaults_fill_only_what_the_request_left_unset() -> None:
    defaults = GenerationDefaults(temperature=0.3, max_new_tokens=64, stop_sequences=["\n\n"], top_k=20)
    filled = defaults.fill({"temperature": 0.9, "max_tokens": None, "stop": None, "n": 1})
    assert filled == {"temperature": 0.9, "max_tokens": 64, "stop": ("\n\n",), "top_k": 20, "n": 1}
    assert defaults.fill({"stop": ("END",), "max_tokens": 5})["stop"] == ("END",)
    assert GenerationDefaults().fill({"temperature": None, "n": 2}) == {"n": 2}
