"""Model signatures: sign, verify, and every way of tampering that verification must catch."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp2026ai.errors import PermissionDeniedError, SignatureError
from mcp2026ai.registry import ModelRegistry, ModelVersion, Stage
from mcp2026ai.registry.signing import (
    read_verified_artifact,
    sign_version,
    signatures,
    signing_payload,
    verify_artifact,
)
from mcp2026ai.security import KeyRing, SigningKey, TrustedKeys


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return KeyRing(tmp_path / "keys").create("release")


@pytest.fixture
def signed(registry: ModelRegistry, relu_model: Path, key: SigningKey) -> ModelVersion:
    record = registry.register("relu", relu_model)
    sign_version(registry, record, key)
    return record


def trusting(*keys: SigningKey) -> TrustedKeys:
    return TrustedKeys(key.public for key in keys)


def _sql(registry: ModelRegistry, statement: str, *args: object) -> None:
    with sqlite3.connect(registry.catalog.path) as db:
        db.execute(statement, args)


def _overwrite_artifact(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)  # the store keeps artifacts read-only; an attacker with the uid can undo that
    path.write_bytes(data)


def test_a_signed_version_verifies_with_the_trusted_key(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    signature = verify_artifact(registry, signed, trusting(key))
    assert signature.key_id == key.key_id and signature.signer == "release"
    assert signature.digest == signed.digest
    assert [s.key_id for s in signatures(registry, signed)] == [key.key_id]


def test_signature_error_is_a_permission_denied(registry: ModelRegistry, relu_model: Path, key) -> None:
    record = registry.register("plain", relu_model)
    with pytest.raises(PermissionDeniedError, match=r"plain:1\.0\.0 is not signed"):
        verify_artifact(registry, record, trusting(key))


def test_artifact_changed_on_disk_is_caught(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    path = registry.artifact_path(signed)
    _overwrite_artifact(path, path.read_bytes() + b"\x00")
    with pytest.raises(SignatureError, match="was modified on disk"):
        verify_artifact(registry, signed, trusting(key))
    with pytest.raises(SignatureError, match="was modified on disk"):
        read_verified_artifact(registry, signed, trusting(key))


def test_artifact_swapped_in_the_catalog_is_caught(
    registry: ModelRegistry, signed: ModelVersion, sigmoid_model: Path, key
) -> None:
    other = registry.register("other", sigmoid_model)  # a consistent file + digest pair
    _sql(registry, "UPDATE model_versions SET digest = ? WHERE name = 'relu'", other.digest)
    swapped = registry.resolve("relu", "1.0.0")
    with pytest.raises(SignatureError, match="does not match the artifact and metadata"):
        verify_artifact(registry, swapped, trusting(key))


def test_metadata_changed_in_the_catalog_is_caught(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    io_signature = signed.signature.model_dump(mode="json")
    io_signature["inputs"][0]["shape"] = [-1, 8]
    _sql(registry, "UPDATE model_versions SET signature = ? WHERE name = 'relu'", json.dumps(io_signature))
    with pytest.raises(SignatureError, match="tampered since signing"):
        verify_artifact(registry, registry.resolve("relu"), trusting(key))


def test_signature_moved_to_another_version_is_caught(registry: ModelRegistry, signed, relu_model, key) -> None:
    second = registry.register("relu", relu_model, version="2.0.0")  # same artifact, different version
    _sql(registry, "UPDATE annotations SET version = '2.0.0' WHERE kind = 'signature'")
    with pytest.raises(SignatureError, match="does not match"):
        verify_artifact(registry, second, trusting(key))


def test_forged_signature_value_is_caught(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    stored = signatures(registry, signed)[0].model_dump(mode="json")
    forged = {**stored, "value": "A" * 86 + "=="}
    _sql(registry, "UPDATE annotations SET payload = ? WHERE kind = 'signature'", json.dumps(forged))
    with pytest.raises(SignatureError, match="does not match"):
        verify_artifact(registry, signed, trusting(key))


def test_untrusted_signer_and_empty_trust_are_refused(registry, signed, tmp_path: Path) -> None:
    stranger = KeyRing(tmp_path / "other").create("stranger")
    with pytest.raises(SignatureError, match="signed only by untrusted key"):
        verify_artifact(registry, signed, trusting(stranger))
    with pytest.raises(SignatureError, match="no trusted public keys"):
        verify_artifact(registry, signed, TrustedKeys())


def test_one_trusted_signature_among_several_is_enough(registry, signed, key, tmp_path: Path) -> None:
    second = KeyRing(tmp_path / "other").create("qa")
    sign_version(registry, signed, second)
    assert verify_artifact(registry, signed, trusting(second)).signer == "qa"
    assert verify_artifact(registry, signed, trusting(key)).signer == "release"


def test_promotion_keeps_the_signature_valid(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    promoted = registry.promote("relu", "1.0.0", Stage.PRODUCTION)
    assert verify_artifact(registry, promoted, trusting(key)).key_id == key.key_id


def test_missing_artifact_is_refused(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    registry.artifact_path(signed).unlink()
    with pytest.raises(SignatureError, match="is missing"):
        verify_artifact(registry, signed, trusting(key))


def test_signing_a_tampered_artifact_is_refused(registry: ModelRegistry, relu_model: Path, key) -> None:
    record = registry.register("relu", relu_model)
    _overwrite_artifact(registry.artifact_path(record), b"evil")
    with pytest.raises(SignatureError, match="modified on disk"):
        sign_version(registry, record, key)
    assert signatures(registry, record) == []


def test_verified_bytes_load_into_onnxruntime(registry: ModelRegistry, signed: ModelVersion, key) -> None:
    data = read_verified_artifact(registry, signed, trusting(key))
    assert data == registry.artifact_path(signed).read_bytes()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], dtype=np.float32)
    (y,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_payload_covers_identity_and_metadata_but_not_stage(signed: ModelVersion) -> None:
    base = signing_payload(signed, signed.digest)
    assert signing_payload(signed.model_copy(update={"stage": Stage.ARCHIVED}), signed.digest) == base
    for change in ({"name": "x"}, {"version": "9.9.9"}, {"format": "tflite"}):
        assert signing_payload(signed.model_copy(update=change), signed.digest) != base
    assert signing_payload(signed, "0" * 64) != base


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_byte_change_in_the_artifact_is_caught(
    registry: ModelRegistry, signed: ModelVersion, key, data: st.DataObject
) -> None:
    path = registry.artifact_path(signed)
    original = path.read_bytes()
    index = data.draw(st.integers(0, len(original) - 1), label="index")
    value = data.draw(st.integers(0, 255).filter(lambda b: b != original[index]), label="byte")
    _overwrite_artifact(path, original[:index] + bytes([value]) + original[index + 1 :])
    try:
        with pytest.raises(SignatureError):
            verify_artifact(registry, signed, trusting(key))
    finally:
        _overwrite_artifact(path, original)
