"""A converted Gemma folder gets Gemma's chat template and <end_of_turn> as an end id (ir/llm_defaults.py);
the builder sees transformers 5's per-layer-type rotary config flat (ir/llm_builder_launch.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from mcp2026ai.generation.chat_template import ChatTemplate
from mcp2026ai.ir.llm_builder_launch import builder_view
from mcp2026ai.ir.llm_defaults import complete_folder
from mcp2026ai.ir.llm_info import CHAT_TEMPLATE_FILE, LLMInfo, LLMPrecision


def info(architecture: str) -> LLMInfo:
    sizes = {"context_length": 8, "vocab_size": 300, "num_layers": 1, "num_attention_heads": 1, "num_kv_heads": 1}
    return LLMInfo(
        architecture=architecture,
        **sizes,
        head_size=4,
        hidden_size=4,
        precision=LLMPrecision.INT4,
        eos_token_ids=[1],
        source_format="gguf",
    )


def test_a_gemma_folder_without_a_template_gets_gemma_s(tmp_path: Path) -> None:
    tokens = [{"id": 106, "content": "<end_of_turn>"}, {"id": 105, "content": "<start_of_turn>"}]
    (tmp_path / "tokenizer.json").write_text(json.dumps({"added_tokens": tokens}))
    completed = complete_folder(tmp_path, info("gemma3_text"))
    assert completed.eos_token_ids == [1, 106] and completed.has_chat_template
    template = ChatTemplate((tmp_path / CHAT_TEMPLATE_FILE).read_text(), {"bos_token": "<bos>"})
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert template.render(messages) == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    )  # the BOS is the tokenizer config's, written by the template's {{ bos_token }}


def test_other_architectures_are_left_alone(tmp_path: Path) -> None:
    assert complete_folder(tmp_path, info("llama")) == info("llama")
    assert not (tmp_path / CHAT_TEMPLATE_FILE).exists()


def test_the_builder_sees_the_global_rope_flat_and_the_local_theta() -> None:
    rope = {"full_attention": {"rope_type": "default", "rope_theta": 1e6}, "sliding_attention": {"rope_theta": 1e4}}
    config = builder_view(SimpleNamespace(rope_parameters=rope))
    assert config.rope_parameters["rope_type"] == "default" and config.rope_parameters["rope_theta"] == 1e6
    assert config.rope_local_base_freq == 1e4
    flat = SimpleNamespace(rope_parameters={"rope_type": "yarn", "factor": 2.0})
    assert builder_view(flat).rope_parameters == {"rope_type": "yarn", "factor": 2.0}
