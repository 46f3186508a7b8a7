"""Verify a version against a baseline version on the same data, and store the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.quantization import drift
from mcp2026ai.quantization.calibration import DEFAULT_BATCH, Feed, feeds, load_samples
from mcp2026ai.quantization.verification_store import Verification, record_verification, version_precision
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.runtime.plan import DEFAULT_PLAN

DEFAULT_TOLERANCE = 0.03


def verify_version(
    registry: ModelRegistry,
    name: str,
    version: str,
    data: Path,
    *,
    baseline: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    batch_size: int = DEFAULT_BATCH,
    at: datetime | None = None,
) -> Verification:
    """Run both versions on ``data``, measure drift, store and return the verification.

    ``baseline`` defaults to the version's parent (the version it was quantized from).
    """
    if not 0 <= tolerance <= 1:
        raise InvalidArgumentError(f"--tolerance {tolerance}: expected a relative L2 drift between 0 and 1")
    candidate = registry.resolve(name, version)
    base = registry.resolve(name, baseline or _parent_version(candidate))
    if base.version == candidate.version:
        raise InvalidArgumentError(f"{candidate.ref}: the baseline must be another version")
    _check_compatible(base, candidate)
    samples = load_samples(data, base.signature, base.preprocessing or candidate.preprocessing)
    report = drift.compare(
        run_version(registry, base, feeds(samples, base.signature, batch_size)),
        run_version(registry, candidate, feeds(samples, candidate.signature, batch_size)),
    )
    verification = Verification(
        baseline=base.version,
        precision=version_precision(candidate).value,
        rel_l2=report.rel_l2,
        top1_agreement=report.primary.top1_agreement,
        confidence_shift=report.primary.confidence_shift,
        tolerance=tolerance,
        passed=report.rel_l2 <= tolerance,
        samples=report.samples,
        outputs={output.name: output.rel_l2 for output in report.outputs},
        data=str(data),
    )
    record_verification(registry, name, candidate.version, verification, at=at or datetime.now(UTC))
    return verification


def run_version(registry: ModelRegistry, record: ModelVersion, batches: list[Feed]) -> dict[str, np.ndarray]:
    """Every output of ``record`` over all batches, concatenated along the batch axis."""
    backend = create_backend(registry.artifact_path(record), record.signature, DEFAULT_PLAN)
    backend.load()
    try:
        results = [backend.infer(batch) for batch in batches]
    finally:
        backend.unload()
    return _concatenate(results)


def _concatenate(results: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    names = list(results[0])
    return {name: np.concatenate([result[name] for result in results]) for name in names}


def _parent_version(record: ModelVersion) -> str:
    parent_name, _, parent_version = (record.parent or "").partition(":")
    if parent_name != record.name or not parent_version:
        raise InvalidArgumentError(f"{record.ref} has no parent version of the same model; give --baseline")
    return parent_version


def _check_compatible(base: ModelVersion, candidate: ModelVersion) -> None:
    base_inputs = [spec.name for spec in base.signature.inputs]
    cand_inputs = [spec.name for spec in candidate.signature.inputs]
    base_outputs = {spec.name for spec in base.signature.outputs}
    cand_outputs = {spec.name for spec in candidate.signature.outputs}
    if base_inputs != cand_inputs or not base_outputs <= cand_outputs:
        raise InvalidArgumentError(
            f"{candidate.ref} and baseline {base.version} do not share a signature "
            f"(inputs {cand_inputs} vs {base_inputs}, outputs {sorted(cand_outputs)} vs {sorted(base_outputs)})"
        )
