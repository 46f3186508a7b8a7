"""What a converted language model is: architecture, sizes, tokens, precision, read from its files.

The onnxruntime-genai model builder writes ``genai_config.json`` beside the decoder; the tokenizer
files carry the special tokens and (``chat_template.jinja`` or ``tokenizer_config.json``) the chat
template. :class:`LLMInfo` gathers what the engine and ``mcp model show`` need.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import ModelImportError

GENAI_CONFIG = "genai_config.json"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
INFO_FILE = "mcp_llm.json"
"""Written beside the converted files: this module's :class:`LLMInfo` as JSON."""


class LLMPrecision(StrEnum):
    """Weight precisions the import offers. int8 is the model builder's weight-only 8-bit MatMulNBits
    (its default accuracy level): on SmolLM2 its greedy choice agrees with the fp32 import's at 95.8 %
    of positions (int4: 82 %), where onnxruntime's dynamic int8 quantization of the fp32 import
    agreed at 74-77 % only (docs/generation-policy.md)."""

    INT4 = "int4"
    INT8 = "int8"
    FP32 = "fp32"


class LLMInfo(BaseModel):
    """A converted decoder-only language model, as the engine and the CLI see it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    architecture: str = Field(description="Model family the builder recognised, e.g. llama.")
    context_length: int = Field(ge=1, description="Longest sequence (prompt + generated tokens) the model supports.")
    vocab_size: int = Field(ge=1)
    num_layers: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    head_size: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    precision: LLMPrecision
    decoder_file: str = Field("model.onnx", description="The decoder's ONNX file among the model's files.")
    input_ids: str = "input_ids"
    attention_mask: str = "attention_mask"
    past_key: str = Field("past_key_values.%d.key", description="Past key input name pattern (layer index).")
    past_value: str = "past_key_values.%d.value"
    present_key: str = "present.%d.key"
    present_value: str = "present.%d.value"
    logits: str = "logits"
    eos_token_ids: list[int] = Field(default_factory=list, description="Token ids that end a generation.")
    bos_token_id: int | None = None
    has_chat_template: bool = False
    source_format: str = Field(description="gguf or huggingface.")

    def kv_bytes_per_token(self) -> int:
        """Bytes of keys and values one token takes over all layers (float32 cache)."""
        return self.num_layers * 2 * self.num_kv_heads * self.head_size * 4

    def describe(self) -> dict[str, Any]:
        """The figures ``mcp model show`` prints."""
        return {
            "architecture": self.architecture,
            "context_length": self.context_length,
            "vocabulary": self.vocab_size,
            "precision": self.precision.value,
            "layers": self.num_layers,
            "heads": f"{self.num_attention_heads} (kv {self.num_kv_heads}) x {self.head_size}",
            "chat_template": "yes" if self.has_chat_template else "no",
        }


def _load_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelImportError(f"{path}: missing from the converted model") from None
    except (OSError, ValueError) as exc:
        raise ModelImportError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ModelImportError(f"{path}: expected a JSON object")
    return document


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, list) else [int(value)]


def tokenizer_config_of(folder: Path) -> dict[str, Any]:
    """The folder's ``tokenizer_config.json`` (empty when it has none)."""
    config_file = folder / TOKENIZER_CONFIG
    return _load_json(config_file) if config_file.is_file() else {}


def chat_template_of(folder: Path) -> str | None:
    """The model's Jinja chat template: ``chat_template.jinja``, else ``tokenizer_config.json``'s."""
    template_file = folder / CHAT_TEMPLATE_FILE
    if template_file.is_file():
        return template_file.read_text(encoding="utf-8")
    config_file = folder / TOKENIZER_CONFIG
    if config_file.is_file():
        template = _load_json(config_file).get("chat_template")
        return template if isinstance(template, str) else None
    return None


def read_llm_info(folder: Path, precision: LLMPrecision, source_format: str) -> LLMInfo:
    """The :class:`LLMInfo` of a folder the model builder wrote."""
    model = _load_json(folder / GENAI_CONFIG).get("model") or {}
    decoder = model.get("decoder") or {}
    inputs, outputs = decoder.get("inputs") or {}, decoder.get("outputs") or {}
    try:
        return LLMInfo(
            architecture=str(model["type"]),
            context_length=int(model["context_length"]),
            vocab_size=int(model["vocab_size"]),
            num_layers=int(decoder["num_hidden_layers"]),
            num_attention_heads=int(decoder["num_attention_heads"]),
            num_kv_heads=int(decoder["num_key_value_heads"]),
            head_size=int(decoder["head_size"]),
            hidden_size=int(decoder["hidden_size"]),
            precision=precision,
            decoder_file=str(decoder.get("filename", "model.onnx")),
            input_ids=inputs.get("input_ids", "input_ids"),
            attention_mask=inputs.get("attention_mask", "attention_mask"),
            past_key=inputs.get("past_key_names", "past_key_values.%d.key"),
            past_value=inputs.get("past_value_names", "past_key_values.%d.value"),
            present_key=outputs.get("present_key_names", "present.%d.key"),
            present_value=outputs.get("present_value_names", "present.%d.value"),
            logits=outputs.get("logits", "logits"),
            eos_token_ids=_ids(model.get("eos_token_id")),
            bos_token_id=model.get("bos_token_id"),
            has_chat_template=chat_template_of(folder) is not None,
            source_format=source_format,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelImportError(f"{folder / GENAI_CONFIG}: unexpected model description ({exc})") from None


def save_llm_info(folder: Path, info: LLMInfo) -> None:
    (folder / INFO_FILE).write_text(info.model_dump_json(indent=2), encoding="utf-8")


def load_llm_info(folder: Path) -> LLMInfo:
    return LLMInfo.model_validate(_load_json(folder / INFO_FILE))
