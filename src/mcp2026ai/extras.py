"""Optional dependencies: import a heavy library only when a feature needs it, with an install hint."""

from __future__ import annotations

import importlib
from types import ModuleType

from mcp2026ai.errors import InvalidArgumentError, MCPError

# Optional extra (pyproject ``[project.optional-dependencies]``) that provides each module.
EXTRA_FOR_MODULE = {
    "torch": "torch",
    "tf2onnx": "tflite",
    "ai_edge_litert": "tflite",
    "onnxconverter_common": "quantization",
    "sympy": "quantization",
    "ray": "ray",
    "transformers": "llm",
    "gguf": "llm",
    "onnxruntime_genai": "llm",
    "onnx_ir": "llm",
    "tokenizers": "llm",
    "jinja2": "llm",
    "llguidance": "llm",
    "openvino": "openvino",
    "tenacity": "edge",
    "cachetools": "edge",
    "kubernetes_validate": "kubernetes",
    "jsonschema": "kubernetes",
    "boto3": "s3",
    "botocore": "s3",
    "psycopg": "postgres",
}


def require(module: str, purpose: str, error: type[MCPError] = InvalidArgumentError) -> ModuleType:
    """Import ``module`` or raise ``error`` saying which extra to install for ``purpose``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRA_FOR_MODULE.get(module.split(".")[0])
        hint = f"pip install 'mcp2026ai[{extra}]'" if extra else f"pip install {module.split('.')[0]}"
        missing = exc.name or module
        raise error(f"{purpose} needs the optional package {missing!r}, which is not installed ({hint})") from None
