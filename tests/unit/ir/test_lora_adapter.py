"""Reading and checking a PEFT adapter folder (ir/lora_adapter.py): what is applied exactly is read, the
rest refused naming the field; an adapter that does not fit its base is refused naming the mismatch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.lora_adapter import check_fit, read_adapter
from mcp2026ai.ir.lora_graph import LoraPart, LoraTarget
from tests.unit.ir.test_lora_graph import INFO

KEY = "base_model.model.model.layers.{layer}.self_attn.{module}.lora_{half}.weight"
TARGETS = [
    LoraTarget(
        0,
        "attn/qkv_proj",
        8,
        16,
        (LoraPart("self_attn.q_proj", 0, 8), LoraPart("self_attn.k_proj", 8, 4), LoraPart("self_attn.v_proj", 12, 4)),
    ),
    LoraTarget(0, "attn/o_proj", 8, 8, (LoraPart("self_attn.o_proj", 0, 8),)),
]


def write(folder: Path, config: dict[str, Any] | None = None, shapes: dict[str, tuple[int, int]] | None = None) -> Path:
    folder.mkdir(exist_ok=True)
    fields = {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "o_proj"], **(config or {})}
    (folder / "adapter_config.json").write_text(json.dumps(fields))
    shapes = shapes or {
        KEY.format(layer=0, module="q_proj", half="A"): (2, 8),
        KEY.format(layer=0, module="q_proj", half="B"): (8, 2),
        KEY.format(layer=0, module="o_proj", half="A"): (2, 8),
        KEY.format(layer=0, module="o_proj", half="B"): (8, 2),
    }
    tensors = {key: np.ones(shape, np.float32) for key, shape in shapes.items()}
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    return folder


def test_a_plain_lora_adapter_is_read_with_its_scale(tmp_path: Path) -> None:
    adapter = read_adapter(write(tmp_path / "a"))
    assert adapter.rank == 2 and adapter.config.scaling == 2.0
    assert sorted(adapter.matrices) == [(0, "self_attn.o_proj"), (0, "self_attn.q_proj")]
    check_fit(adapter, TARGETS, INFO, max_rank=8)
    rslora = read_adapter(write(tmp_path / "b", {"use_rslora": True}))
    assert rslora.config.scaling == pytest.approx(4 / np.sqrt(2))


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"use_dora": True}, "use_dora"),
        ({"bias": "all"}, "bias"),
        ({"modules_to_save": ["lm_head"]}, "modules_to_save"),
        ({"target_modules": ["q_proj", "lm_head"]}, "lm_head"),
        ({"peft_type": "IA3"}, "peft_type"),
        ({"rank_pattern": {"q_proj": 4}}, "rank_pattern"),
    ],
)
def test_what_would_not_be_applied_exactly_is_refused_naming_it(
    tmp_path: Path, config: dict[str, Any], named: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        read_adapter(write(tmp_path / "a", config))


def test_an_adapter_that_does_not_fit_its_base_is_refused_naming_the_mismatch(tmp_path: Path) -> None:
    adapter = read_adapter(write(tmp_path / "a"))
    with pytest.raises(InvalidArgumentError, match="rank 2 is over the limit --max-lora-rank 1"):
        check_fit(adapter, TARGETS, INFO, max_rank=1)
    wide = {
        KEY.format(layer=0, module="q_proj", half="A"): (2, 12),
        KEY.format(layer=0, module="q_proj", half="B"): (8, 2),
    }
    with pytest.raises(InvalidArgumentError, match="adapter maps 12 -> 8, the base 8 -> 8"):
        check_fit(read_adapter(write(tmp_path / "b", shapes=wide)), TARGETS, INFO, max_rank=8)
    deep = {KEY.format(layer=5, module="q_proj", half=half): shape for half, shape in (("A", (2, 8)), ("B", (8, 2)))}
    with pytest.raises(InvalidArgumentError, match="adapter has layer 5; the base model has 1 layers"):
        check_fit(read_adapter(write(tmp_path / "c", shapes=deep)), TARGETS, INFO, max_rank=8)
    other = {"auto_mapping": {"base_model_class": "Gemma3ForCausalLM"}}
    with pytest.raises(InvalidArgumentError, match="made for Gemma3ForCausalLM, the base model is a llama"):
        check_fit(read_adapter(write(tmp_path / "d", other)), TARGETS, INFO, max_rank=8)


def test_a_broken_folder_is_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"no adapter_config\.json"):
        read_adapter(tmp_path)
    folder = write(tmp_path / "a")
    (folder / "adapter_model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(InvalidArgumentError, match="not a safetensors file"):
        read_adapter(folder)
    half = {KEY.format(layer=0, module="q_proj", half="A"): (2, 8)}
    with pytest.raises(InvalidArgumentError, match="has lora_A only"):
        read_adapter(write(tmp_path / "b", shapes=half))
