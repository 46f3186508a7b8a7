"""Steps every format converter shares: where the ONNX goes, and proof that it computes the same thing.

A converted model is accepted only after the original runtime (TorchScript, TFLite) and onnxruntime
ran on the same inputs and every output agreed within tolerance.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.importer import ImportedModel

DEFAULT_RTOL = 1e-3
"""Largest relative L2 difference ``||a-b|| / ||a||`` accepted between original and converted outputs."""
DEFAULT_ATOL = 1e-4
"""Outputs whose largest absolute difference is within this pass whatever their relative difference."""


@dataclass(frozen=True)
class OutputCheck:
    """How one output of the converted model compares with the original runtime's."""

    name: str
    max_abs: float
    rel_l2: float
    passed: bool


@dataclass(frozen=True)
class Conversion:
    """A converted, validated model and the comparisons that validated it."""

    imported: ImportedModel
    checks: tuple[OutputCheck, ...]


def converted_path(source: Path, workdir: Path) -> Path:
    """``workdir/<stem>-<sha256 prefix>.onnx``: distinct per source content, stable across runs."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir / f"{source.stem}-{digest}.onnx"


def run_onnx(path: Path, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """All outputs of an ONNX model by output name; inputs are fed by name, or by position if renamed."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed_names = [value.name for value in session.get_inputs()]
        feed = dict(inputs) if set(inputs) == set(feed_names) else dict(zip(feed_names, inputs.values(), strict=False))
        names = [output.name for output in session.get_outputs()]
        return dict(zip(names, session.run(names, feed), strict=True))
    except Exception as exc:  # onnxruntime raises its own pybind types  # noqa: BLE001
        raise ModelImportError(f"{path}: onnxruntime cannot run the converted model ({first_line(exc)})") from None


def compare(name: str, reference: np.ndarray, converted: np.ndarray, rtol: float, atol: float) -> OutputCheck:
    """Compare one output; shapes must match exactly."""
    if reference.shape != converted.shape:
        return OutputCheck(name, float("inf"), float("inf"), False)
    ref = np.asarray(reference, dtype=np.float64)
    diff = ref - np.asarray(converted, dtype=np.float64)
    max_abs = float(np.max(np.abs(diff))) if diff.size else 0.0
    norm = float(np.linalg.norm(ref))
    rel_l2 = float(np.linalg.norm(diff)) / norm if norm > 0 else (0.0 if max_abs == 0 else float("inf"))
    return OutputCheck(name, max_abs, rel_l2, rel_l2 <= rtol or max_abs <= atol)


def compare_all(
    reference: Mapping[str, np.ndarray], converted: Mapping[str, np.ndarray], rtol: float, atol: float
) -> tuple[OutputCheck, ...]:
    """Pair outputs by name, or by position where the converter renamed them."""
    if set(reference) <= set(converted):
        pairs = [(name, reference[name], converted[name]) for name in reference]
    else:
        pairs = [(name, ref, got) for (name, ref), got in zip(reference.items(), converted.values(), strict=False)]
    if len(pairs) != len(reference):
        raise ModelImportError(f"the converted model has {len(converted)} outputs, the original {len(reference)}")
    return tuple(compare(name, ref, got, rtol, atol) for name, ref, got in pairs)


def ensure_equivalent(path: Path, checks: tuple[OutputCheck, ...], rtol: float, atol: float) -> None:
    """Raise ModelImportError naming the first output that disagrees."""
    for check in checks:
        if not check.passed:
            raise ModelImportError(
                f"{path}: the converted ONNX model disagrees with the original on output {check.name!r} "
                f"(max |diff| {check.max_abs:.3g}, relative L2 {check.rel_l2:.3g}; "
                f"accepted: relative L2 <= {rtol:g} or max |diff| <= {atol:g})"
            )


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """Silence stdout, Python's and file descriptor 1 (converters print whole graphs from C++)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as sink, open(os.devnull, "w") as devnull, redirect_stdout(devnull):
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
