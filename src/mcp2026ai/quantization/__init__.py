"""Quantization (int8 static/dynamic, fp16) with a drift gate: verify against a baseline, store the result."""

from mcp2026ai.quantization.drift import DriftReport, OutputDrift
from mcp2026ai.quantization.quantize import CalibrationMethod, QuantizeOptions, Scheme, quantize_file
from mcp2026ai.quantization.registration import quantize_version
from mcp2026ai.quantization.verification_store import (
    Verification,
    latest_verification,
    precision_allowed,
    verified_drift,
    version_precision,
)
from mcp2026ai.quantization.verify import verify_version

__all__ = [
    "CalibrationMethod",
    "DriftReport",
    "OutputDrift",
    "QuantizeOptions",
    "Scheme",
    "Verification",
    "latest_verification",
    "precision_allowed",
    "quantize_file",
    "quantize_version",
    "verified_drift",
    "verify_version",
    "version_precision",
]
