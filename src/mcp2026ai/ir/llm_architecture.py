"""Which language model architectures the importer converts, checked before any conversion starts.

A GGUF file names its architecture in ``general.architecture``; a Hugging Face folder in
``config.json``'s ``architectures``. The conversion needs both transformers (GGUF -> Hugging Face)
and onnxruntime-genai's model builder (Hugging Face -> ONNX decoder) to know it; an architecture
outside :data:`GGUF_ARCHITECTURES` / :data:`HF_ARCHITECTURES` is refused at registration with its
name, instead of failing minutes into a conversion with a message from deep inside either library.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp2026ai.errors import ModelImportError
from mcp2026ai.extras import require

GGUF_ARCHITECTURES = frozenset({"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "nemotron"})
"""GGUF architectures transformers de-quantizes and the builder (0.18) converts."""
HF_ARCHITECTURES = frozenset(
    {
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "Phi3ForCausalLM",
        "PhiForCausalLM",
        "GemmaForCausalLM",
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "NemotronForCausalLM",
        "OlmoForCausalLM",
        "GraniteForCausalLM",
        "SmolLM3ForCausalLM",
    }
)
"""Hugging Face architectures the builder converts to a text decoder."""


def gguf_architecture(path: Path) -> str:
    """``general.architecture`` of a GGUF file (ModelImportError if it is not a readable GGUF file)."""
    gguf = require("gguf", "importing a GGUF language model", ModelImportError)
    try:
        field = gguf.GGUFReader(str(path)).fields["general.architecture"]
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    except KeyError:
        raise ModelImportError(f"{path}: the GGUF file names no general.architecture") from None
    except Exception as exc:  # gguf raises many types on a bad file  # noqa: BLE001
        raise ModelImportError(f"{path}: not a readable GGUF file ({type(exc).__name__}: {exc})") from None


def check_convertible(source: Path) -> str:
    """The source's architecture; ModelImportError naming it when the importer cannot convert it."""
    if source.is_dir():
        config = json.loads((source / "config.json").read_text(encoding="utf-8"))
        names = config.get("architectures") or [str(config.get("model_type"))]
        architecture, known = str(names[0]), HF_ARCHITECTURES
    else:
        architecture, known = gguf_architecture(source), GGUF_ARCHITECTURES
    if architecture not in known:
        raise ModelImportError(
            f"{source}: architecture {architecture!r} cannot be converted to an onnxruntime decoder "
            f"(convertible: {', '.join(sorted(known))})"
        )
    return architecture
