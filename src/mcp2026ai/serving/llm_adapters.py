"""LoRA adapter versions served on their base model's engine (``serving/llms.py`` installs them).

An adapter version is served like any language model version (routed by name and version, a
rollout's stable or canary, unloaded and retired), but it brings no engine of its own: it is a key in
its base's engine (``generation/adapters.py``), and its requests run the base with its deltas. Its
base is the served default version of the model its ``parent`` names; that version must hold the same
weights the adapter was registered against (the base's source digest in the adapter's manifest).
"""

from __future__ import annotations

import time
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.lora_adapter import AdapterWeights
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import LORA_FORMAT, read_manifest
from mcp2026ai.registry.lora_bundle import checked_adapter
from mcp2026ai.registry.signing import verified_llm_folder
from mcp2026ai.security.trust import TrustedKeys
from mcp2026ai.serving.llm_versions import ServedLLM


def is_adapter(record: ModelVersion) -> bool:
    return record.format == LORA_FORMAT


def base_name(record: ModelVersion) -> str:
    """The model an adapter version runs on (its ``parent`` is ``name:version``)."""
    if not record.parent:
        raise InvalidArgumentError(f"{record.ref} is an adapter without a base model")
    return record.parent.partition(":")[0]


def open_adapter(
    registry: ModelRegistry, record: ModelVersion, base: ServedLLM, trusted_keys: TrustedKeys | None
) -> AdapterWeights:
    """The adapter's weights, checked against the engine ``base`` runs (lineage, rank, shapes); its files
    verified as they are opened (and its signature under --require-signed)."""
    manifest = read_manifest(registry.store, record.digest)
    served_source = read_manifest(registry.store, base.record.digest).source_sha256
    if manifest.base_source_sha256 != served_source:
        raise InvalidArgumentError(
            f"{record.ref} was registered against {record.parent} (weights {str(manifest.base_source_sha256)[:12]}); "
            f"the served {base.record.ref} holds other weights ({served_source[:12]})"
        )
    engine = base.engine
    if engine.adapters is None:
        raise InvalidArgumentError(
            f"cannot serve adapter {record.ref}: {base.record.name!r} runs without LoRA "
            "(start the server with --max-loras N)"
        )
    folder = _folder(registry, record, trusted_keys)
    base_folder = registry.llm_folder(base.record)
    return checked_adapter(folder, base_folder, engine.info, engine.adapters.max_rank)


def _folder(registry: ModelRegistry, record: ModelVersion, trusted_keys: TrustedKeys | None) -> Path:
    if trusted_keys is None:
        return registry.llm_folder(record)
    return verified_llm_folder(registry, record, trusted_keys)


def served_adapter(record: ModelVersion, base: ServedLLM) -> ServedLLM:
    return ServedLLM(record, base.engine, time.time(), adapter=record.ref, base=base.record.name)
