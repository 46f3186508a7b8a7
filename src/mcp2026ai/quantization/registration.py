"""Quantize a registered version and register the result as a new version linked to its parent."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError, ModelImportError
from mcp2026ai.ir.onnx_import import load_onnx, onnx_signature
from mcp2026ai.quantization.calibration import DEFAULT_BATCH, Feed, feeds, load_samples
from mcp2026ai.quantization.quantize import QuantizeOptions, quantize_file
from mcp2026ai.quantization.verification_store import PRECISION_TAG, QUANTIZED_TAG
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage

QUANTIZATION_KIND = "quantization"


def quantize_version(
    registry: ModelRegistry,
    name: str,
    options: QuantizeOptions,
    *,
    version: str | None = None,
    calib_data: Path | None = None,
    new_version: str | None = None,
    batch_size: int = DEFAULT_BATCH,
) -> ModelVersion:
    """Quantize ``name:version`` (the default version if None) and register it as a new dev version."""
    if options.scheme.needs_calibration and calib_data is None:
        raise InvalidArgumentError(f"scheme {options.scheme.value} needs calibration data (--calib-data DIR|file.npz)")
    parent = registry.resolve(name, version)
    if QUANTIZED_TAG in parent.tags:
        raise InvalidArgumentError(
            f"{parent.ref} is already quantized ({parent.tags[QUANTIZED_TAG]}); "
            f"quantize its fp32 parent {parent.parent}"
        )
    calibration = _calibration(parent, options, calib_data, batch_size)
    source = registry.artifact_path(parent)
    with tempfile.TemporaryDirectory(prefix="quantize-", dir=registry.home) as tmp:
        target = quantize_file(source, Path(tmp) / f"{name}-{options.scheme.value}.onnx", options, calibration)
        _check_signature(parent, target)
        size = target.stat().st_size
        record = registry.register(
            name,
            target,
            contract=parent.contract,
            version=new_version,
            stage=Stage.DEV,
            tags=_tags(parent, options),
            preprocessing=parent.preprocessing,
            parent=parent.ref,
        )
    details: dict[str, object] = {
        "parent": parent.ref,
        "scheme": options.scheme.value,
        "per_channel": options.per_channel,
        "calibrate_method": options.calibrate_method.value if options.scheme.needs_calibration else None,
        "calibration_batches": len(calibration),
        "bytes_before": source.stat().st_size,
        "bytes_after": size,
    }
    registry.catalog.annotate(name, record.version, QUANTIZATION_KIND, details, at=datetime.now(UTC))
    return record


def _calibration(parent: ModelVersion, options: QuantizeOptions, data: Path | None, batch_size: int) -> list[Feed]:
    if not options.scheme.needs_calibration or data is None:
        return []
    samples = load_samples(data, parent.signature, parent.preprocessing)
    return feeds(samples, parent.signature, batch_size)


def _check_signature(parent: ModelVersion, target: Path) -> None:
    signature = onnx_signature(load_onnx(target), target)
    if signature != parent.signature:
        raise ModelImportError(
            f"quantizing {parent.ref} changed its signature "
            f"({parent.signature.model_dump()} -> {signature.model_dump()})"
        )


def _tags(parent: ModelVersion, options: QuantizeOptions) -> dict[str, str]:
    tags = {QUANTIZED_TAG: options.scheme.value, PRECISION_TAG: options.scheme.precision.value, "parent": parent.ref}
    if options.scheme.value.startswith("int8"):
        tags["per_channel"] = str(options.per_channel).lower()
    return tags
