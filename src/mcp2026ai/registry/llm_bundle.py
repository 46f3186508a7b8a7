"""Language models in the content-addressed store: every file an object, plus a manifest object.

A converted LLM is several files (the decoder, its external weights, the tokenizer, the chat
template, the builder's config). Each is stored under its own sha256 (``.blob``); a manifest
(``.llm.json``: file name -> digest, the model's :class:`LLMInfo` and the source's digest) is stored
the same way and its digest is the version's digest. Identical files are shared between versions
(an int4 and an fp32 import share the tokenizer); integrity is checked file by file on load.

:func:`materialize` lays the files out under their names (hard links to the stored objects, or
decrypted copies when the store encrypts at rest) for onnxruntime, which finds the decoder's
external weights beside it. Every name is confined to the model's folder, the folders are 0700, a
decrypted copy is written 0600 and its digest checked again at every load (a swapped plaintext file is
rewritten, never served).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mcp2026ai.errors import ModelImportError
from mcp2026ai.ir.llm_convert import convert_llm, source_digest, source_format
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision, load_llm_info
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry.store import ArtifactStore, sha256_of
from mcp2026ai.security.files import private_dir
from mcp2026ai.security.paths import confined_path

MANIFEST_SUFFIX = ".llm.json"
MEMBER_SUFFIX = ".blob"
LORA_FORMAT = "lora"
"""A LoRA adapter of a language model (``registry/lora_bundle.py``): stored and signed like one."""
LLM_FORMATS = frozenset({"gguf", "huggingface", LORA_FORMAT})
TEXT_SIGNATURE = Signature(
    inputs=[TensorSpec(name="text_input", datatype="BYTES", shape=[1])],
    outputs=[TensorSpec(name="text_output", datatype="BYTES", shape=[1])],
)
"""What an LLM version's record shows as its signature (Triton's generate extension names)."""


class LLMManifest(BaseModel):
    """The files of one converted model and what they are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    files: dict[str, str]
    info: LLMInfo
    source_sha256: str
    base_digest: str | None = None
    """A LoRA adapter's lineage: the digest of the base version it was registered against."""
    base_source_sha256: str | None = None
    """A LoRA adapter's base weights (the base's source digest, whatever its precision)."""


class StoredLLM(BaseModel):
    """What :func:`import_llm` stored: the manifest's digest and the model's description."""

    model_config = ConfigDict(frozen=True)

    digest: str
    format: str
    info: LLMInfo


def is_llm_format(format_name: str) -> bool:
    return format_name in LLM_FORMATS


def import_llm(store: ArtifactStore, source: Path, precision: LLMPrecision, cache_dir: Path) -> StoredLLM:
    """Convert ``source`` (or reuse its cached conversion) and store its files and manifest."""
    digest = source_digest(source)
    folder = convert_llm(source, precision, cache_dir, digest)
    files = {
        str(path.relative_to(folder)): store.put(path, MEMBER_SUFFIX)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    manifest = LLMManifest(files=files, info=load_llm_info(folder), source_sha256=digest)
    return StoredLLM(digest=_put_manifest(store, manifest), format=source_format(source), info=manifest.info)


def _put_manifest(store: ArtifactStore, manifest: LLMManifest) -> str:
    fields = manifest.model_dump(mode="json")
    for lineage in ("base_digest", "base_source_sha256"):  # a base model's manifest stays as it was
        if fields[lineage] is None:
            del fields[lineage]
    text = json.dumps(fields, sort_keys=True, indent=1)
    fd, name = tempfile.mkstemp(dir=store.root, prefix=".manifest-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return store.put(Path(name), MANIFEST_SUFFIX)
    finally:
        Path(name).unlink(missing_ok=True)


def read_manifest(store: ArtifactStore, digest: str) -> LLMManifest:
    try:
        return LLMManifest.model_validate_json(store.read(digest, MANIFEST_SUFFIX))
    except ValueError as exc:
        raise ModelImportError(f"LLM manifest {digest[:12]} is unreadable ({exc})".replace("\n", " ")) from None


def materialize(store: ArtifactStore, digest: str, root: Path, manifest: LLMManifest | None = None) -> Path:
    """A folder holding the model's files under their names, each checked against its digest.

    ``manifest``: the one already read and verified (``registry/signing.py``: the version's signature
    covers the manifest's digest, the manifest every file's), so exactly the checked files are laid out.
    """
    manifest = manifest or read_manifest(store, digest)
    folder = private_dir(root / digest[:24])
    for name, member in manifest.files.items():
        target = confined_path(folder, name, f"LLM manifest {digest[:12]}: file")
        private_dir(target.parent)
        if store.is_encrypted(member, MEMBER_SUFFIX):
            if not _holds(target, member):
                _write_private(target, store.read(member, MEMBER_SUFFIX))
            continue
        stored = store.verified_path(member, MEMBER_SUFFIX)
        if target.exists() and os.path.samefile(target, stored):
            continue
        _link_atomic(stored, target)
    return folder


def _link_atomic(stored: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        os.link(stored, tmp)
    except OSError:  # another file system: copy
        shutil.copyfile(stored, tmp)
    os.replace(tmp, target)


def _holds(target: Path, digest: str) -> bool:
    """``target`` is a regular file (not a link) whose content has ``digest``."""
    if target.is_symlink() or not target.is_file():
        return False
    return sha256_of(target) == digest


def _write_private(target: Path, data: bytes) -> None:
    """A decrypted member: owner-only from its first byte, swapped in whole."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, target)


def delete_llm(store: ArtifactStore, digest: str, remaining_manifests: Iterable[str]) -> None:
    """Remove a manifest and its files, except files another remaining manifest still lists."""
    kept: set[str] = set()
    for other in remaining_manifests:
        if other != digest and store.exists(other, MANIFEST_SUFFIX):
            kept.update(read_manifest(store, other).files.values())
    if store.exists(digest, MANIFEST_SUFFIX):
        for member in set(read_manifest(store, digest).files.values()) - kept:
            store.delete(member, MEMBER_SUFFIX)
    store.delete(digest, MANIFEST_SUFFIX)
