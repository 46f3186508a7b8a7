"""What a converted model folder lacks that its architecture defines: a chat template, end-of-turn ids.

Gemma 3 GGUF files of the base model carry no chat template, yet the model knows Gemma's turn
markers (``<start_of_turn>``/``<end_of_turn>``), and its end-of-sequence id (``<eos>``) is not what
ends a turn. For such a folder the converter writes Gemma 3's published template (``templates/gemma3.jinja``,
as Google ships it with the instruction-tuned models: it writes ``{{ bos_token }}`` itself, so the BOS
comes from the tokenizer config like every other model's) and adds ``<end_of_turn>`` to the
end-of-sequence ids.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp2026ai.ir.llm_info import CHAT_TEMPLATE_FILE, LLMInfo, chat_template_of

_TEMPLATES_DIR = Path(__file__).parent / "templates"
GEMMA_TEMPLATE = (_TEMPLATES_DIR / "gemma3.jinja").read_text(encoding="utf-8")
"""Gemma 3's chat template (the instruction-tuned models')."""

TEMPLATES = {"gemma3_text": (GEMMA_TEMPLATE, "<end_of_turn>"), "gemma3": (GEMMA_TEMPLATE, "<end_of_turn>")}
"""Architecture -> (its chat template, the token that ends a turn)."""


def complete_folder(folder: Path, info: LLMInfo) -> LLMInfo:
    """Write the architecture's chat template when the folder has none; the info with the turn-ending id."""
    known = TEMPLATES.get(info.architecture)
    if known is None:
        return info
    template, end_of_turn = known
    if chat_template_of(folder) is None:
        (folder / CHAT_TEMPLATE_FILE).write_text(template, encoding="utf-8")
    vocab = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8")).get("added_tokens") or []
    ids = [int(token["id"]) for token in vocab if token.get("content") == end_of_turn]
    eos = [*info.eos_token_ids, *(i for i in ids if i not in info.eos_token_ids)]
    return info.model_copy(update={"eos_token_ids": eos, "has_chat_template": True})
