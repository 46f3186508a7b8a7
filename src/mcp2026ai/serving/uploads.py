"""Models sent with a repository ``load`` (Triton's ``file:<version>/model.onnx`` parameter): served
the way Triton serves them, never registered (finding 2 of the security review).

An upload is an override of this server's copy of the model, held in memory: it is not written to
the registry as a version, so it does not survive a restart, does not reach other replicas through
shared stores, and cannot become anyone's default. The registry sync leaves a model that serves an
upload alone until it is loaded again without a file, or unloaded.

- Content equal to a registered version of the model is that version: it loads from the registry,
  through the same signature check as any version.
- Under ``--require-signed`` nothing else is served: an upload must be a registered version signed by
  a trusted key, and is refused (403) before anything is read into a backend or written anywhere.
- Otherwise the file is checked as an ONNX model in a private temporary file (0600, removed at once)
  and served from its bytes as ``0.0.0-upload.<sha256 prefix>``, integer alias ``<version>`` from the
  parameter's name (what Triton clients ask for).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.errors import InvalidArgumentError, ModelImportError, SignatureError
from mcp2026ai.ir.importer import import_model
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.model_registry import validate_model_name
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.catalog import create_backend
from mcp2026ai.security.files import private_dir
from mcp2026ai.serving.artifacts import serving_default_plan

UPLOAD_VERSION_PREFIX = "0.0.0-upload."
UPLOAD_TAG = "upload"


@dataclass(frozen=True)
class Upload:
    """What a ``file:`` load serves: a registered version (``data`` None) or the uploaded bytes."""

    record: ModelVersion
    data: bytes | None = None

    @property
    def ephemeral(self) -> bool:
        return self.data is not None

    def backend(self) -> Backend:
        """A backend over the uploaded bytes (never a file)."""
        assert self.data is not None
        return create_backend(self.data, self.record.signature, serving_default_plan(), label=self.record.ref)


def is_upload_version(version: str) -> bool:
    return version.startswith(UPLOAD_VERSION_PREFIX)


def file_number(key: str, name: str) -> int:
    """The integer version of ``file:<version>/<file>.onnx`` (Triton's version directory)."""
    folder = key.removeprefix("file:").split("/", 1)[0]
    if not folder.isdigit() or not 0 < int(folder) < 10**18 or "/" not in key:
        raise InvalidArgumentError(f"load {name!r}: {key[:100]!r}: expected 'file:<version number>/<name>.onnx'")
    return int(folder)


def resolve_upload(registry: ModelRegistry, name: str, data: bytes, number: int, signed_only: bool) -> Upload:
    """The registered version with this content, else (unless ``signed_only``) the ephemeral model."""
    validate_model_name(name)
    digest = hashlib.sha256(data).hexdigest()
    for record in registry.catalog.versions(name):
        if record.digest == digest:
            return Upload(record)
    if signed_only:
        raise SignatureError(
            f"load {name!r}: the uploaded file (sha256 {digest[:12]}) is no version of {name!r} signed by a trusted "
            "key; under --require-signed an upload must be one (`mcp model register` and `mcp model sign` it first)"
        )
    record = ModelVersion(
        name=name,
        version=f"{UPLOAD_VERSION_PREFIX}{digest[:12]}",
        number=number,
        stage=Stage.DEV,
        format="onnx",
        digest=digest,
        signature=_checked_signature(registry.home / "tmp", data),
        tags={UPLOAD_TAG: "ephemeral: not registered, gone at restart"},
    )
    return Upload(record, data)


def _checked_signature(scratch: Path, data: bytes) -> Signature:
    """Check the bytes as an ONNX model (in a 0600 file in a private folder, removed at once) and return
    its I/O signature; the error names no server path."""
    folder = private_dir(scratch)
    fd, name = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".onnx")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return import_model(Path(name), folder).signature
    except InvalidArgumentError as exc:
        raise type(exc)(str(exc).replace(name, "the uploaded file")) from None
    except Exception as exc:  # a checker's own error type: still the client's file, never a 500  # noqa: BLE001
        raise ModelImportError(f"the uploaded file: not a valid ONNX model ({type(exc).__name__})") from None
    finally:
        Path(name).unlink(missing_ok=True)
