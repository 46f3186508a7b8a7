"""Runs onnxruntime-genai's model builder (``python -m mcp2026ai.ir.llm_builder_launch <builder args>``)
with the model's Hugging Face config read the way the builder (0.18) expects it.

transformers 5 describes Gemma 3's rotary embeddings per layer type
(``rope_parameters = {"full_attention": {...}, "sliding_attention": {...}}``); the builder reads a
flat ``rope_parameters["rope_type"]`` and ``rope_local_base_freq``. The config the builder loads gets
both (the global layers' values flat, the sliding layers' theta as ``rope_local_base_freq``); every
other config is passed through untouched.
"""

from __future__ import annotations

import runpy
from typing import Any


def builder_view(config: Any) -> Any:
    """``config`` with the per-layer-type rotary settings also in the flat form the builder reads."""
    rope = getattr(config, "rope_parameters", None)
    if not isinstance(rope, dict):
        return config
    full, sliding = rope.get("full_attention"), rope.get("sliding_attention")
    if isinstance(full, dict) and "rope_type" not in rope:
        rope.update({"rope_type": full.get("rope_type", "default"), "rope_theta": full.get("rope_theta")})
    if isinstance(sliding, dict) and not hasattr(config, "rope_local_base_freq"):
        config.rope_local_base_freq = sliding.get("rope_theta")
    return config


def main() -> None:
    import transformers

    load = transformers.AutoConfig.from_pretrained

    def from_pretrained(*args: Any, **kwargs: Any) -> Any:
        return builder_view(load(*args, **kwargs))

    transformers.AutoConfig.from_pretrained = from_pretrained  # type: ignore[method-assign]
    runpy.run_module("onnxruntime_genai.models.builder", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
