"""The registry workflow: quantize a registered version, verify it, and what the policy reads back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.contract import Precision
from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.quantization import (
    QuantizeOptions,
    Scheme,
    latest_verification,
    precision_allowed,
    quantize_version,
    verified_drift,
    verify_version,
    version_precision,
)
from mcp2026ai.quantization.registration import QUANTIZATION_KIND
from mcp2026ai.quantization.verification_store import KIND
from mcp2026ai.registry import ModelRegistry, ModelVersion

FP16 = QuantizeOptions(scheme=Scheme.FP16)


def test_quantizing_registers_a_child_version_linked_to_its_parent(
    registry: ModelRegistry, ocr_cls: ModelVersion
) -> None:
    child = quantize_version(registry, "ocr-cls", FP16, version=ocr_cls.version)
    assert child.parent == ocr_cls.ref
    assert child.tags == {"quantized": "fp16", "precision": "fp16", "parent": ocr_cls.ref}
    assert child.signature == ocr_cls.signature
    assert child.preprocessing == ocr_cls.preprocessing
    assert child.digest != ocr_cls.digest
    assert version_precision(child) is Precision.FP16 and version_precision(ocr_cls) is Precision.FP32
    ((_, _, details),) = registry.catalog.annotations("ocr-cls", QUANTIZATION_KIND, child.version)
    assert details["parent"] == ocr_cls.ref and details["bytes_after"] < details["bytes_before"]


def test_int8_static_is_calibrated_from_the_given_data(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    options = QuantizeOptions(scheme=Scheme.INT8_STATIC)
    child = quantize_version(registry, "ocr-cls", options, calib_data=ocr_data["calib"], new_version="2.0.0")
    assert child.version == "2.0.0"
    assert child.tags["quantized"] == "int8-static" and child.tags["per_channel"] == "false"
    ((_, _, details),) = registry.catalog.annotations("ocr-cls", QUANTIZATION_KIND, "2.0.0")
    assert details["calibration_batches"] == 2 and details["calibrate_method"] == "minmax"
    result = verify_version(registry, "ocr-cls", child.version, ocr_data["val"], tolerance=0.5)
    assert result.precision == "int8" and result.top1_agreement is not None and result.top1_agreement >= 0.9


def test_int8_static_without_calibration_data_is_refused(registry: ModelRegistry, ocr_cls: ModelVersion) -> None:
    with pytest.raises(InvalidArgumentError, match="needs calibration data"):
        quantize_version(registry, "ocr-cls", QuantizeOptions(scheme=Scheme.INT8_STATIC))


def test_a_quantized_version_is_not_quantized_again(registry: ModelRegistry, ocr_cls: ModelVersion) -> None:
    child = quantize_version(registry, "ocr-cls", FP16)
    with pytest.raises(InvalidArgumentError, match=f"already quantized.*{ocr_cls.ref}"):
        quantize_version(registry, "ocr-cls", FP16, version=child.version)


def test_verify_stores_the_result_and_the_policy_reads_the_drift(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    child = quantize_version(registry, "ocr-cls", FP16)
    assert verified_drift(registry, "ocr-cls", child.version) is None
    assert not precision_allowed(registry, child, max_drift=0.03)
    at = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
    result = verify_version(registry, "ocr-cls", child.version, ocr_data["val"], at=at)
    assert result.passed and result.baseline == ocr_cls.version and result.precision == "fp16"
    assert 0 < result.rel_l2 < 0.01 and result.top1_agreement == 1.0
    assert result.confidence_shift is not None and abs(result.confidence_shift) < 0.01
    assert result.samples == 24 and list(result.outputs) == [ocr_cls.signature.outputs[0].name]
    ((version, when, payload),) = registry.catalog.annotations("ocr-cls", KIND)
    assert (version, when) == (child.version, at)
    assert {"baseline", "rel_l2", "top1_agreement", "confidence_shift", "tolerance", "passed"} <= set(payload)
    assert verified_drift(registry, "ocr-cls", child.version) == pytest.approx(result.rel_l2)
    assert precision_allowed(registry, child, max_drift=0.03)
    assert not precision_allowed(registry, child, max_drift=result.rel_l2 / 2)
    assert precision_allowed(registry, ocr_cls, max_drift=0.0)  # fp32 needs no verification


def test_a_failed_verification_does_not_erase_an_earlier_pass(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]
) -> None:
    child = quantize_version(registry, "ocr-cls", FP16)
    passed = verify_version(registry, "ocr-cls", child.version, ocr_data["val"], tolerance=0.03)
    failed = verify_version(registry, "ocr-cls", child.version, ocr_data["val"], tolerance=1e-9)
    assert passed.passed and not failed.passed
    latest = latest_verification(registry, "ocr-cls", child.version)
    assert latest is not None and not latest.passed
    assert verified_drift(registry, "ocr-cls", child.version) == pytest.approx(passed.rel_l2)


def test_verify_against_an_explicit_baseline_and_a_folder_of_samples(
    registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path], tmp_path: Path
) -> None:
    child = quantize_version(registry, "ocr-cls", FP16)
    folder = tmp_path / "samples"
    folder.mkdir()
    for index, row in enumerate(np.load(ocr_data["val"])["x"][:5]):
        np.save(folder / f"{index}.npy", row)  # one sample per file, no batch axis
    result = verify_version(registry, "ocr-cls", child.version, folder, baseline=ocr_cls.version, batch_size=2)
    assert result.samples == 5 and result.passed


def test_verify_refuses_bad_requests(registry: ModelRegistry, ocr_cls: ModelVersion, ocr_data: dict[str, Path]) -> None:
    with pytest.raises(InvalidArgumentError, match="no parent version"):
        verify_version(registry, "ocr-cls", ocr_cls.version, ocr_data["val"])
    with pytest.raises(InvalidArgumentError, match="another version"):
        verify_version(registry, "ocr-cls", ocr_cls.version, ocr_data["val"], baseline=ocr_cls.version)
    with pytest.raises(InvalidArgumentError, match="--tolerance"):
        verify_version(registry, "ocr-cls", ocr_cls.version, ocr_data["val"], tolerance=-1)
    with pytest.raises(NotFoundError):
        verify_version(registry, "ocr-cls", "9.9.9", ocr_data["val"], baseline=ocr_cls.version)
