"""LoRA adapters in the registry: a PEFT folder checked against its base and stored like a language model.

An adapter version's artifact is a manifest (as ``llm_bundle.py`` stores a converted model's): its two
files (``adapter_config.json``, ``adapter_model.safetensors``) by digest, the base's
:class:`~mcp2026ai.ir.llm_info.LLMInfo`, and its lineage: the digest of the base version it was
registered against and that base's source digest (the weights it adapts, whatever the precision the
base is served at). The version's digest is the manifest's, so it is signed like any version, and
``ModelVersion.parent`` names the base version.

The adapter is refused at registration when it does not fit the base: architecture, target modules,
layer count, every matrix's shape, and its rank against ``max_rank`` (``--max-lora-rank``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.llm_info import LLMInfo
from mcp2026ai.ir.lora_adapter import ADAPTER_FILES, AdapterWeights, check_fit, read_adapter
from mcp2026ai.ir.lora_graph import lora_targets
from mcp2026ai.registry.llm_bundle import (
    LORA_FORMAT,
    MEMBER_SUFFIX,
    LLMManifest,
    StoredLLM,
    _put_manifest,
    read_manifest,
)
from mcp2026ai.registry.records import ModelVersion
from mcp2026ai.registry.store import ArtifactStore

DEFAULT_MAX_RANK = 64
"""Registration's rank limit unless ``--max-lora-rank`` says otherwise (a server may hold a lower one)."""


def is_adapter_folder(path: Path) -> bool:
    return path.is_dir() and (path / ADAPTER_FILES[0]).is_file()


def adapter_digest(folder: Path) -> str:
    """sha256 over the adapter's two files (names and contents)."""
    digest = hashlib.sha256()
    for name in ADAPTER_FILES:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return digest.hexdigest()


def checked_adapter(folder: Path, base_folder: Path, info: LLMInfo, max_rank: int) -> AdapterWeights:
    """The adapter's weights, refused (InvalidArgumentError naming the mismatch) unless they fit the base."""
    adapter = read_adapter(folder)
    check_fit(adapter, lora_targets(base_folder / info.decoder_file, info), info, max_rank)
    return adapter


def import_adapter(
    store: ArtifactStore, folder: Path, base: ModelVersion, base_folder: Path, max_rank: int = DEFAULT_MAX_RANK
) -> StoredLLM:
    """Check ``folder`` against ``base`` (a language model version laid out in ``base_folder``) and store it."""
    if base.format == LORA_FORMAT:
        raise InvalidArgumentError(f"--base {base.ref} is an adapter itself; name its base model")
    base_manifest = read_manifest(store, base.digest)
    try:
        checked_adapter(folder, base_folder, base_manifest.info, max_rank)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{folder}: does not fit {base.ref}: {exc}") from None
    files = {name: store.put(folder / name, MEMBER_SUFFIX) for name in ADAPTER_FILES}
    manifest = LLMManifest(
        files=files,
        info=base_manifest.info,
        source_sha256=adapter_digest(folder),
        base_digest=base.digest,
        base_source_sha256=base_manifest.source_sha256,
    )
    return StoredLLM(digest=_put_manifest(store, manifest), format=LORA_FORMAT, info=manifest.info)
