"""A PEFT LoRA adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``), read and checked.

Only plain LoRA is applied: ``peft_type`` LORA, no DoRA, no bias, no ``modules_to_save``, no per-module
rank or alpha patterns, weights stored as ``[out, in]`` (``fan_in_fan_out`` false), on the decoder's
projections (:data:`mcp2026ai.ir.lora_graph.MODULE_NAMES`). Everything else is refused naming the
field, rather than served with part of the adapter silently left out.

:func:`check_fit` compares an adapter with a base decoder's projections: architecture (when the
config names the base class), every weight's layer, module and shape, and the rank against a limit.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.llm_info import LLMInfo
from mcp2026ai.ir.lora_graph import MODULE_NAMES, LoraTarget

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"
ADAPTER_FILES = (CONFIG_FILE, WEIGHTS_FILE)
MAX_CONFIG_BYTES = 64 << 10
MAX_WEIGHTS_BYTES = 512 << 20
"""Largest adapter weights file read (a rank-64 adapter of a 7B model is about 320 MiB in fp32)."""
_KEY = re.compile(r"^base_model\.model\.model\.layers\.(\d+)\.((?:self_attn|mlp)\.\w+)\.lora_([AB])\.weight$")


class AdapterConfig(BaseModel):
    """The fields of PEFT's ``adapter_config.json`` that decide what the adapter computes."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    peft_type: str = "LORA"
    r: int = Field(ge=1)
    lora_alpha: float = Field(gt=0)
    target_modules: list[str] = Field(min_length=1)
    use_rslora: bool = False
    use_dora: bool = False
    bias: str = "none"
    fan_in_fan_out: bool = False
    modules_to_save: list[str] | None = None
    rank_pattern: dict[str, Any] = Field(default_factory=dict)
    alpha_pattern: dict[str, Any] = Field(default_factory=dict)
    layers_to_transform: Any = None
    base_model_name_or_path: str | None = None
    auto_mapping: dict[str, Any] | None = None

    @property
    def scaling(self) -> float:
        """PEFT's factor on ``B @ A``: alpha / r (alpha / sqrt(r) with rsLoRA)."""
        return self.lora_alpha / (math.sqrt(self.r) if self.use_rslora else self.r)

    def unsupported(self) -> str | None:
        """Why this adapter cannot be applied exactly, or None."""
        checks = [
            (self.peft_type != "LORA", f"peft_type is {self.peft_type!r} (only LORA)"),
            (self.use_dora, "use_dora is true (DoRA is not applied)"),
            (self.bias != "none", f"bias is {self.bias!r} (only 'none')"),
            (self.fan_in_fan_out, "fan_in_fan_out is true"),
            (bool(self.modules_to_save), f"modules_to_save is {self.modules_to_save} (whole modules are not swapped)"),
            (
                bool(self.rank_pattern or self.alpha_pattern),
                "rank_pattern/alpha_pattern are set (one rank and alpha only)",
            ),
            (self.layers_to_transform is not None, "layers_to_transform is set"),
        ]
        unknown = sorted(set(self.target_modules) - MODULE_NAMES)
        if unknown:
            checks.append((True, f"target_modules {unknown} are not among {sorted(MODULE_NAMES)}"))
        return next((reason for failed, reason in checks if failed), None)


@dataclass(frozen=True)
class AdapterWeights:
    """An adapter's matrices: ``(layer, module)`` -> ``(A [r, in], B [out, r])``, float32."""

    config: AdapterConfig
    matrices: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]

    @property
    def rank(self) -> int:
        return self.config.r


def read_config(folder: Path) -> AdapterConfig:
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise InvalidArgumentError(f"{folder}: not a PEFT adapter folder (no {CONFIG_FILE})")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise InvalidArgumentError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        config = AdapterConfig.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        raise InvalidArgumentError(f"{path}: not a LoRA adapter config ({_first(exc)})") from None
    reason = config.unsupported()
    if reason:
        raise InvalidArgumentError(f"{path}: {reason}")
    return config


def read_adapter(folder: Path) -> AdapterWeights:
    """The adapter's config and weights (each checked: names, ranks, finite values)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    config = read_config(folder)
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise InvalidArgumentError(f"{folder}: no {WEIGHTS_FILE} (only safetensors weights are read)")
    if path.stat().st_size > MAX_WEIGHTS_BYTES:
        raise InvalidArgumentError(f"{path}: larger than {MAX_WEIGHTS_BYTES >> 20} MiB")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{path}: not a safetensors file ({_first(exc)})") from None
    halves: dict[tuple[int, str], dict[str, np.ndarray]] = {}
    for key, tensor in tensors.items():
        match = _KEY.match(key)
        if not match:
            raise InvalidArgumentError(f"{path}: tensor {key!r} is not a LoRA A/B weight of a decoder layer")
        matrix = np.asarray(tensor, dtype=np.float32)
        if matrix.ndim != 2 or not np.isfinite(matrix).all():
            raise InvalidArgumentError(f"{path}: tensor {key!r} is not a finite matrix")
        halves.setdefault((int(match.group(1)), match.group(2)), {})[match.group(3)] = matrix
    return AdapterWeights(config, _paired(path, halves, config.r))


def _paired(
    path: Path, halves: dict[tuple[int, str], dict[str, np.ndarray]], rank: int
) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray]]:
    matrices = {}
    for (layer, module), pair in sorted(halves.items()):
        if set(pair) != {"A", "B"}:
            raise InvalidArgumentError(f"{path}: layer {layer} {module} has lora_{''.join(pair)} only")
        a, b = pair["A"], pair["B"]
        if a.shape[0] != rank or b.shape[1] != rank:
            raise InvalidArgumentError(
                f"{path}: layer {layer} {module}: lora_A {list(a.shape)} and lora_B {list(b.shape)} are not rank {rank}"
            )
        matrices[(layer, module)] = (a, b)
    if not matrices:
        raise InvalidArgumentError(f"{path}: holds no LoRA weights")
    return matrices


def check_fit(adapter: AdapterWeights, targets: list[LoraTarget], info: LLMInfo, max_rank: int) -> None:
    """Refuse an adapter that does not fit the base decoder, naming the first mismatch."""
    config = adapter.config
    if config.r > max_rank:
        raise InvalidArgumentError(f"adapter rank {config.r} is over the limit --max-lora-rank {max_rank}")
    base_class = str((config.auto_mapping or {}).get("base_model_class") or "")
    if base_class and info.architecture.replace("_", "").lower() not in base_class.lower():
        raise InvalidArgumentError(
            f"adapter was made for {base_class}, the base model is a {info.architecture} ({info.num_layers} layers)"
        )
    sizes = {(t.layer, part.module): (t.in_features, part.size) for t in targets for part in t.parts}
    for (layer, module), (a, b) in adapter.matrices.items():
        if layer >= info.num_layers:
            raise InvalidArgumentError(f"adapter has layer {layer}; the base model has {info.num_layers} layers")
        if (layer, module) not in sizes:
            raise InvalidArgumentError(f"layer {layer} {module}: the base decoder has no such projection")
        in_features, out_features = sizes[(layer, module)]
        if a.shape[1] != in_features or b.shape[0] != out_features:
            raise InvalidArgumentError(
                f"layer {layer} {module}: adapter maps {a.shape[1]} -> {b.shape[0]}, the base {in_features} -> "
                f"{out_features} (another base model's adapter?)"
            )


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
