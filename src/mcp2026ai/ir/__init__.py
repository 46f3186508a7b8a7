"""Model import: every supported format becomes an ONNX file plus its signature."""

from mcp2026ai.ir import tflite_import, torchscript_import  # noqa: F401  (register .tflite and .pt importers)
from mcp2026ai.ir.importer import ImportedModel, import_model, supported_suffixes
from mcp2026ai.ir.signature import Signature, TensorSpec

__all__ = ["ImportedModel", "Signature", "TensorSpec", "import_model", "supported_suffixes"]
