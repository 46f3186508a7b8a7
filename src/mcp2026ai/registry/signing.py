"""Ed25519 signatures over a model version: artifact digest plus the metadata that decides behaviour.

A signature covers the canonical JSON of :func:`signing_payload`: model name, version, artifact
format, the artifact's sha256 (recomputed from disk), the I/O signature, the inference contract and
the image preprocessing. The lifecycle stage and tags are deliberately left out, so ``promote`` does
not invalidate a signature. Signatures live in the catalog as annotations of kind ``signature``
(several signers per version are allowed); they are removed together with the version.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from mcp2026ai.errors import IntegrityError, NotFoundError, SignatureError
from mcp2026ai.registry.llm_bundle import LLMManifest, materialize
from mcp2026ai.registry.model_registry import ModelRegistry
from mcp2026ai.registry.records import ModelVersion
from mcp2026ai.security.keys import SigningKey
from mcp2026ai.security.trust import TrustedKeys

SIGNATURE_KIND = "signature"
PAYLOAD_FORMAT = "mcp2026ai/model-signature/v1"


class ModelSignature(BaseModel):
    """One signer's signature of one model version, as stored in the catalog."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    algorithm: Literal["ed25519"] = "ed25519"
    payload_format: Literal["mcp2026ai/model-signature/v1"] = "mcp2026ai/model-signature/v1"
    key_id: str
    signer: str
    digest: str
    value: str
    signed_at: datetime


def signing_payload(record: ModelVersion, digest: str) -> bytes:
    """The exact bytes that are signed: sorted, compact JSON of the version's identity and metadata."""
    document = {
        "payload_format": PAYLOAD_FORMAT,
        "name": record.name,
        "version": record.version,
        "format": record.format,
        "digest": digest,
        "signature": record.signature.model_dump(mode="json"),
        "contract": record.contract.model_dump(mode="json") if record.contract else None,
        "preprocessing": record.preprocessing.model_dump(mode="json") if record.preprocessing else None,
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def disk_digest(registry: ModelRegistry, record: ModelVersion) -> str:
    """sha256 of the stored artifact as it is on disk now; refuses a missing or modified file."""
    return _read_checked(registry, record)[1]


def sign_version(registry: ModelRegistry, record: ModelVersion, key: SigningKey) -> ModelSignature:
    """Sign ``record`` with ``key`` and store the signature in the catalog."""
    digest = disk_digest(registry, record)
    signature = ModelSignature(
        key_id=key.key_id,
        signer=key.name,
        digest=digest,
        value=base64.b64encode(key.sign(signing_payload(record, digest))).decode("ascii"),
        signed_at=datetime.now(UTC),
    )
    registry.catalog.annotate(
        record.name, record.version, SIGNATURE_KIND, signature.model_dump(mode="json"), signature.signed_at
    )
    return signature


def signatures(registry: ModelRegistry, record: ModelVersion) -> list[ModelSignature]:
    """Stored signatures of one version, oldest first; malformed rows are skipped (they cannot verify)."""
    found = []
    for _version, _at, payload in registry.catalog.annotations(record.name, SIGNATURE_KIND, record.version):
        try:
            found.append(ModelSignature.model_validate(payload))
        except ValidationError:
            continue
    return found


def verify_artifact(registry: ModelRegistry, record: ModelVersion, trusted_keys: TrustedKeys) -> ModelSignature:
    """Re-read and re-hash the artifact from disk and check a trusted signature; SignatureError if not."""
    return verify_digest(registry, record, disk_digest(registry, record), trusted_keys)


def read_verified_artifact(registry: ModelRegistry, record: ModelVersion, trusted_keys: TrustedKeys) -> bytes:
    """The artifact's bytes, read once and verified: load these (no window to swap the file after the check).

    The one function through which every engine and runtime opens an artifact under --require-signed:
    a tensor model's bytes (serving/artifacts.py: the version asked for and the stored plan's variant),
    a language model's manifest (:func:`verified_llm_folder`: the default version and the import its
    generation plan names)."""
    data, digest = _read_checked(registry, record)
    verify_digest(registry, record, digest, trusted_keys)
    return data


def verified_llm_folder(registry: ModelRegistry, record: ModelVersion, trusted_keys: TrustedKeys) -> Path:
    """A language model's files laid out from the manifest that was verified: the signature covers the
    manifest's digest, the manifest each file's digest, and :func:`materialize` checks every file."""
    data = read_verified_artifact(registry, record, trusted_keys)
    try:
        manifest = LLMManifest.model_validate_json(data)
    except ValueError:
        raise SignatureError(f"{record.ref}: its signed manifest is unreadable") from None
    return materialize(registry.store, record.digest, registry.home / "llm", manifest)


def verify_digest(
    registry: ModelRegistry, record: ModelVersion, digest: str, trusted_keys: TrustedKeys
) -> ModelSignature:
    """Check that a trusted key signed ``record`` with artifact ``digest``; returns that signature."""
    return check_signatures(record, digest, signatures(registry, record), trusted_keys)


def check_signatures(
    record: ModelVersion, digest: str, stored: list[ModelSignature], trusted_keys: TrustedKeys
) -> ModelSignature:
    """The first of ``stored`` made by a trusted key over ``record`` with artifact ``digest`` (no
    registry needed: an edge device checks a pulled package with it); SignatureError if none."""
    if not stored:
        raise SignatureError(f"{record.ref} is not signed (sign it with `mcp model sign --name {record.name}`)")
    if not len(trusted_keys):
        raise SignatureError(f"{record.ref}: no trusted public keys are configured (see `mcp keys trust`)")
    candidates = [signature for signature in stored if signature.key_id in trusted_keys]
    if not candidates:
        ids = ", ".join(sorted({signature.key_id for signature in stored}))
        raise SignatureError(f"{record.ref} is signed only by untrusted key(s) {ids} (see `mcp keys trust`)")
    payload = signing_payload(record, digest)
    for signature in candidates:
        public = trusted_keys.get(signature.key_id)
        if public is not None and public.verify(_decode(signature.value), payload):
            return signature
    raise SignatureError(
        f"{record.ref}: signature by key {candidates[0].key_id} does not match the artifact and metadata "
        "(tampered since signing)"
    )


def _read_checked(registry: ModelRegistry, record: ModelVersion) -> tuple[bytes, str]:
    """The artifact's plaintext and its sha256, which must equal the registered digest."""
    try:
        data = registry.artifact_bytes(record)  # the store checks the content against its digest
    except (NotFoundError, OSError):
        raise SignatureError(f"{record.ref}: artifact {record.digest[:12]} is missing or unreadable") from None
    except IntegrityError:  # under signed serving a changed artifact is refused as untrusted (403)
        raise SignatureError(
            f"{record.ref}: artifact in {registry.store.location} was modified on disk or in its store "
            f"(registered sha256 {record.digest[:12]})"
        ) from None
    return data, record.digest


def _decode(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""
