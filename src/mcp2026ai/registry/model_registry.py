"""The model registry: import, store and catalogue model versions."""

from __future__ import annotations

import contextlib
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from mcp2026ai.ir import import_model
from mcp2026ai.ir.llm_convert import default_cache_dir, is_llm_source, source_digest
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision
from mcp2026ai.ir.pipeline_spec import PIPELINE_FORMAT, PIPELINE_SPEC_SUFFIX
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry.audit_trail import REGISTER_ACTION, recover_pending
from mcp2026ai.registry.catalog import AuditIntent, Catalog
from mcp2026ai.registry.catalogs import catalog_for
from mcp2026ai.registry.llm_bundle import (
    MANIFEST_SUFFIX,
    TEXT_SIGNATURE,
    delete_llm,
    import_llm,
    is_llm_format,
    materialize,
    read_manifest,
)
from mcp2026ai.registry.lora_bundle import DEFAULT_MAX_RANK, import_adapter, is_adapter_folder
from mcp2026ai.registry.records import ModelVersion, Preprocessing, Stage
from mcp2026ai.registry.store import ArtifactStore
from mcp2026ai.registry.text_encoder import store_tokenizer
from mcp2026ai.registry.versioning import SemVer, integer_alias, next_version
from mcp2026ai.security.audit import AuditChain
from mcp2026ai.security.files import private_dir

if TYPE_CHECKING:
    from mcp2026ai.security.encryption import ArtifactCipher

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

REGISTRY_ACTOR = "system"
"""Who a registration is recorded as when the caller does not say (``mcp`` commands say ``cli:<user>``)."""

_AUTOMATIC_VERSION_TRIES = 20
"""Registrations of one name racing for the next automatic version: each retry takes the next one."""


def validate_model_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidArgumentError(
            f"model name {name!r} is invalid: use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


class ModelRegistry:
    """Facade over the artifact store and the catalog: by default both local under ``home`` (which
    also holds this node's scratch space: temporary imports, caches, laid-out language models); shared
    ones come from :func:`mcp2026ai.registry.stores.open_registry`."""

    def __init__(
        self,
        home: Path,
        cipher: ArtifactCipher | None = None,
        audit: AuditChain | None = None,
        actor: str = REGISTRY_ACTOR,
        *,
        store: ArtifactStore | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        self.home = private_dir(home)
        self.store = store if store is not None else ArtifactStore(home / "artifacts", cipher)
        self.catalog = catalog if catalog is not None else catalog_for(None, home)
        self.audit = audit
        """Where each registration is recorded (``model.register``), atomically with its catalog row
        (see :mod:`mcp2026ai.registry.audit_trail`); None: not recorded."""
        self.actor = actor
        """Who registrations are recorded as when ``register`` is not told."""

    def register(
        self,
        name: str,
        path: Path,
        *,
        contract: InferenceContract | None = None,
        version: str | None = None,
        stage: Stage = Stage.DEV,
        tags: dict[str, str] | None = None,
        preprocessing: Preprocessing | None = None,
        parent: str | None = None,
        precision: LLMPrecision | None = None,
        actor: str | None = None,
        audit_details: dict[str, Any] | None = None,
        number: int | None = None,
        signature: Signature | None = None,
        source_format: str | None = None,
        base: ModelVersion | None = None,
        max_lora_rank: int = DEFAULT_MAX_RANK,
    ) -> ModelVersion:
        """Import ``path`` as a new version (with ``base``: a PEFT LoRA adapter folder of that language model
        version, checked to fit it, rank up to ``max_lora_rank``); with an audit log, its ``model.register`` entry (by
        ``actor``, else :attr:`actor`; ``audit_details`` added to the digest and source) is written
        with the catalog row, all or nothing across a crash. ``number`` fixes its integer alias (a
        Triton version directory's number) instead of the next free one. With ``source_format`` and
        ``signature`` the file is stored as it is, not imported (a Triton Python model's model.py)."""
        validate_model_name(name)
        chosen = self._new_version(name, version)  # before the artifact is stored: a refused file leaves nothing
        if source_format is not None and signature is not None:
            digest = self.store.put(Path(path))
        elif base is not None or is_adapter_folder(Path(path)):
            if base is None:
                raise InvalidArgumentError(f"{path} is a LoRA adapter: name its base model (--base)")
            stored = import_adapter(self.store, Path(path), base, self.llm_folder(base), max_lora_rank)
            digest, source_format, signature, parent = stored.digest, stored.format, TEXT_SIGNATURE, base.ref
            audit_details = {**(audit_details or {}), "base_digest": base.digest}
        elif is_llm_source(Path(path)):
            llm = import_llm(self.store, Path(path), precision or LLMPrecision.INT4, default_cache_dir(self.home))
            digest, source_format, signature = llm.digest, llm.format, TEXT_SIGNATURE
        else:
            if precision is not None:
                raise InvalidArgumentError(f"{path}: a precision applies to language models (.gguf, HF folder) only")
            imported = import_model(path, self.home / "tmp")
            preprocessing = store_tokenizer(self.store, preprocessing)
            digest, source_format = self.store.put(imported.onnx_path), imported.source_format
            signature = imported.signature
        record = ModelVersion(
            name=name,
            version=chosen,
            number=1,  # the catalog assigns the next free alias as it inserts
            stage=stage,
            format=source_format,
            digest=digest,
            signature=signature,
            contract=contract,
            tags=tags or {},
            preprocessing=preprocessing,
            parent=parent,
            created_at=datetime.now(UTC),
        )
        details = {
            "digest": digest,
            "source": str(path),
            **({"parent": parent} if parent else {}),
            **(audit_details or {}),
        }
        return self._catalogue(
            record, not version, AuditIntent(uuid.uuid4().hex, REGISTER_ACTION, actor or self.actor, details), number
        )

    def register_stored(
        self,
        name: str,
        digest: str,
        source_format: str,
        signature: Signature,
        *,
        contract: InferenceContract | None = None,
        version: str | None = None,
        stage: Stage = Stage.DEV,
        tags: dict[str, str] | None = None,
        actor: str | None = None,
        audit_details: dict[str, Any] | None = None,
        number: int | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> ModelVersion:
        """Catalogue an artifact already in the store (a pipeline's spec) as a new version of ``name``
        (``number``: its integer alias, else the next free one; ``preprocessing``: its labels, which the
        classification extension reads)."""
        validate_model_name(name)
        chosen = self._new_version(name, version)
        record = ModelVersion(
            name=name,
            version=chosen,
            stage=stage,
            format=source_format,
            digest=digest,
            signature=signature,
            contract=contract,
            tags=tags or {},
            preprocessing=preprocessing,
            created_at=datetime.now(UTC),
        )
        details = {"digest": digest, **(audit_details or {})}
        intent = AuditIntent(uuid.uuid4().hex, REGISTER_ACTION, actor or self.actor, details)
        return self._catalogue(record, not version, intent, number)

    def _catalogue(
        self, record: ModelVersion, automatic: bool, intent: AuditIntent, number: int | None = None
    ) -> ModelVersion:
        """Insert the version; with an audit log, its entry too, all or nothing across a crash: the intent
        goes in with the row, the entry follows, the intent is cleared (all under the log's lock)."""
        if self.audit is None:
            return self._insert(record, automatic, number=number)
        with self.audit.holding() as append:
            recover_pending(self.catalog, self.audit, append)  # what a killed registration owes first
            record = self._insert(record, automatic, intent, number)
            append(intent.action, intent.actor, record.ref, {**intent.details, "intent": intent.id})
            self.catalog.clear_audit(intent.id)
        return record

    def _insert(
        self, record: ModelVersion, automatic: bool, intent: AuditIntent | None = None, number: int | None = None
    ) -> ModelVersion:
        for _ in range(_AUTOMATIC_VERSION_TRIES):
            try:
                return self.catalog.insert(record, intent, number)
            except AlreadyExistsError:
                if not automatic:  # the caller's own version is taken: say so
                    raise
            # another registration of this name took the automatic version meanwhile: take the next
            record = record.model_copy(update={"version": self._new_version(record.name, None)})
        raise AlreadyExistsError(f"model {record.name!r}: too many concurrent registrations; try again")

    def _new_version(self, name: str, version: str | None) -> str:
        """The requested version (refused if taken), else the next minor after the highest."""
        existing = [record.version for record in self.catalog.versions(name)]
        chosen = str(SemVer.parse(version)) if version else next_version(existing)
        if chosen in existing:
            raise AlreadyExistsError(f"model {name!r} already has version {chosen}")
        return chosen

    def register_or_reuse(
        self, name: str, path: Path, actor: str | None = None, audit_details: dict[str, Any] | None = None
    ) -> ModelVersion:
        """The existing version of ``name`` with the same content, else a new registration (recorded
        as by ``actor`` with ``audit_details``, as in :meth:`register`)."""
        from mcp2026ai.registry.store import sha256_of

        if is_llm_source(Path(path)):  # a language model's version digest is its manifest's: match the source
            source = source_digest(Path(path))
            for record in self.catalog.versions(name):
                if is_llm_format(record.format) and read_manifest(self.store, record.digest).source_sha256 == source:
                    return record
            return self.register(name, path, actor=actor, audit_details=audit_details)
        digest = sha256_of(Path(path)) if Path(path).is_file() else None
        for record in self.catalog.versions(name):
            if record.digest == digest:
                return record
        return self.register(name, path, actor=actor, audit_details=audit_details)

    def versions(self, name: str | None = None) -> list[ModelVersion]:
        records = self.catalog.versions(name)
        if name is not None and not records:
            raise NotFoundError(f"unknown model {name!r}")
        return records

    def model_names(self) -> list[str]:
        return sorted({record.name for record in self.catalog.versions()})

    def resolve(self, name: str, version: str | None = None) -> ModelVersion:
        """An exact version, or the default: highest production, else highest non-archived."""
        if version is not None:
            alias = integer_alias(version)
            if alias is not None:  # Triton-style integer alias, then short semver
                with contextlib.suppress(NotFoundError):
                    return self.catalog.get_by_number(name, alias)
            return self.catalog.get(name, _normalize(version))
        records = self.versions(name)
        for wanted in ({Stage.PRODUCTION}, {Stage.DEV, Stage.STAGING}):
            candidates = [record for record in records if record.stage in wanted]
            if candidates:
                return max(candidates, key=lambda record: SemVer.parse(record.version))
        raise NotFoundError(f"model {name!r} has only archived versions")

    def promote(self, name: str, version: str, stage: Stage) -> ModelVersion:
        version = _normalize(version)
        self.catalog.set_stage(name, version, stage)
        return self.catalog.get(name, version)

    def remove(self, name: str, version: str | None = None) -> list[ModelVersion]:
        """Delete one version, or every version of the model; unreferenced artifacts go too."""
        doomed = [self.catalog.get(name, _normalize(version))] if version else self.versions(name)
        for record in doomed:
            self.catalog.delete(record.name, record.version)
            if self.catalog.digest_in_use(record.digest):
                continue
            if is_llm_format(record.format):
                others = (other.digest for other in self.catalog.versions() if is_llm_format(other.format))
                delete_llm(self.store, record.digest, others)
            elif record.format == PIPELINE_FORMAT:  # its steps stay registered (remove them by name)
                self.store.delete(record.digest, PIPELINE_SPEC_SUFFIX)
            else:
                self.store.delete(record.digest)
        return doomed

    def artifact_path(self, record: ModelVersion) -> Path:
        """The plaintext file, checked against its digest; an artifact encrypted at rest has none: use
        :meth:`artifact_bytes`."""
        if record.format == PIPELINE_FORMAT:
            raise InvalidArgumentError(f"{record.ref} is a pipeline: it has no model file (its steps do)")
        if is_llm_format(record.format):
            raise InvalidArgumentError(
                f"{record.ref} is a language model: generate with `mcp generate` or the /v1 and /generate endpoints"
            )
        if self.store.is_encrypted(record.digest):
            raise InvalidArgumentError(
                f"{record.ref} is encrypted at rest and has no plaintext file; load it from artifact_bytes()"
            )
        return self.store.verified_path(record.digest)

    def llm_info(self, record: ModelVersion) -> LLMInfo:
        """A language model version's architecture, sizes and precision (from its manifest)."""
        return read_manifest(self.store, record.digest).info

    def llm_folder(self, record: ModelVersion) -> Path:
        """A language model version's files laid out under their names, each checked against its digest."""
        return materialize(self.store, record.digest, self.home / "llm")

    def artifact_bytes(self, record: ModelVersion) -> bytes:
        """The artifact's plaintext bytes (decrypted when stored encrypted); a language model's is its
        manifest, which names every file's digest (each checked when the files are laid out)."""
        if is_llm_format(record.format):
            return self.store.read(record.digest, MANIFEST_SUFFIX)
        if record.format == PIPELINE_FORMAT:  # its stored spec, which names each step's digest or version
            return self.store.read(record.digest, PIPELINE_SPEC_SUFFIX)
        return self.store.read(record.digest)


def _normalize(version: str) -> str:
    return str(SemVer.parse(version))
