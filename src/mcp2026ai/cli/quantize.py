"""``mcp quantize`` and ``mcp verify``: make an int8/fp16 version, then gate it on measured drift."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console, print_json, print_table
from mcp2026ai.quantization import (
    CalibrationMethod,
    QuantizeOptions,
    Scheme,
    Verification,
    quantize_version,
    verify_version,
)
from mcp2026ai.quantization.calibration import DEFAULT_BATCH
from mcp2026ai.quantization.verify import DEFAULT_TOLERANCE

EXIT_DRIFT = 1
"""``mcp verify`` exit status when the drift is past the tolerance (2 stays for usage errors)."""


def quantize(
    name: Annotated[str, typer.Option(help="Model name.")],
    scheme: Annotated[Scheme, typer.Option(help="int8-static (calibrated QDQ), int8-dynamic or fp16.")],
    version: Annotated[str | None, typer.Option(help="Version to quantize; the default version if omitted.")] = None,
    per_channel: Annotated[bool, typer.Option("--per-channel", help="Per-channel int8 weights.")] = False,
    calib_data: Annotated[
        Path | None, typer.Option(help="Calibration samples: a .npz file, or a folder of .npy/.npz/images.")
    ] = None,
    calibrate_method: Annotated[CalibrationMethod, typer.Option(help="int8-static calibration.")] = (
        CalibrationMethod.MINMAX
    ),
    new_version: Annotated[str | None, typer.Option(help="Version for the result; next minor if omitted.")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="Rows per calibration batch (dynamic-batch models).")] = (
        DEFAULT_BATCH
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Quantize a model version and register the result as a new version linked to its parent."""
    registry = context.registry()
    options = QuantizeOptions(scheme=scheme, per_channel=per_channel, calibrate_method=calibrate_method)
    record = quantize_version(
        registry,
        name,
        options,
        version=version,
        calib_data=calib_data,
        new_version=new_version,
        batch_size=batch_size,
    )
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    parent = registry.resolve(name, (record.parent or "").partition(":")[2])
    before = registry.artifact_path(parent).stat().st_size
    after = registry.artifact_path(record).stat().st_size
    console.print(
        f"registered [bold]{record.ref}[/] ({scheme.value} from {record.parent}; "
        f"{before / 1024:.0f} KiB -> {after / 1024:.0f} KiB). Next: mcp verify --name {name} "
        f"--version {record.version} --data DIR|file.npz"
    )


def verify(
    name: Annotated[str, typer.Option(help="Model name.")],
    version: Annotated[str, typer.Option(help="Version to verify (e.g. the quantized one).")],
    data: Annotated[Path, typer.Option(help="Samples: a .npz file, or a folder of .npy/.npz/images.")],
    baseline: Annotated[str | None, typer.Option(help="Baseline version; the version's parent if omitted.")] = None,
    tolerance: Annotated[float, typer.Option(help="Largest relative L2 drift ||a-b||/||a|| accepted.")] = (
        DEFAULT_TOLERANCE
    ),
    batch_size: Annotated[int, typer.Option(min=1, help="Rows per batch (dynamic-batch models).")] = DEFAULT_BATCH,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Measure drift against a baseline version, store the result; exit 1 past the tolerance."""
    result = verify_version(
        context.registry(), name, version, data, baseline=baseline, tolerance=tolerance, batch_size=batch_size
    )
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        _print_verification(name, version, result)
    if not result.passed:
        raise typer.Exit(EXIT_DRIFT)


def _print_verification(name: str, version: str, result: Verification) -> None:
    rows = [{"output": output, "rel_l2": f"{drift:.5f}"} for output, drift in result.outputs.items()]
    print_table(f"{name}:{version} vs {result.baseline} ({result.samples} samples)", rows, ["output", "rel_l2"])
    top1 = "-" if result.top1_agreement is None else f"{result.top1_agreement:.4f}"
    shift = "-" if result.confidence_shift is None else f"{result.confidence_shift:+.5f}"
    verdict = "[green]PASSED[/]" if result.passed else "[red]FAILED[/]"
    console.print(
        f"{verdict}: relative L2 drift {result.rel_l2:.5f} (tolerance {result.tolerance:g}), "
        f"top-1 agreement {top1}, confidence shift {shift}"
    )
