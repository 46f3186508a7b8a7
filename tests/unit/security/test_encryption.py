"""Artifacts encrypted at rest: round trip, binding to the digest, wrong key, and signing on top."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mcp2026ai.errors import InvalidArgumentError, SignatureError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.signing import read_verified_artifact, sign_version, verify_artifact
from mcp2026ai.security import KeyRing, TrustedKeys
from mcp2026ai.security.encryption import MAGIC, ArtifactCipher, cipher_from_settings, write_new_key
from mcp2026ai.settings import Settings

from .conftest import CliResult


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "artifact.key"
    write_new_key(path)
    return path


@pytest.fixture
def encrypted(home: Path, key_file: Path) -> ModelRegistry:
    return ModelRegistry(home, ArtifactCipher.from_file(key_file))


def test_key_file_is_private_base64_of_32_bytes(key_file: Path) -> None:
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(base64.b64decode(key_file.read_text())) == 32
    with pytest.raises(InvalidArgumentError, match="already exists"):
        write_new_key(key_file)


def test_artifacts_are_stored_encrypted_and_read_back_in_plaintext(encrypted: ModelRegistry, relu_model: Path) -> None:
    record = encrypted.register("relu", relu_model)
    stored = encrypted.store.encrypted_path_for(record.digest)
    assert stored.read_bytes().startswith(MAGIC)
    assert relu_model.read_bytes() not in stored.read_bytes()
    assert not encrypted.store.path_for(record.digest).exists()
    data = encrypted.artifact_bytes(record)
    assert data == relu_model.read_bytes()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": np.array([[-1, 1, -2, 2]], dtype=np.float32)})
    np.testing.assert_array_equal(y, [[0, 1, 0, 2]])
    with pytest.raises(InvalidArgumentError, match="encrypted at rest"):
        encrypted.artifact_path(record)


def test_wrong_key_missing_key_and_altered_bytes_fail_clearly(
    encrypted: ModelRegistry, relu_model: Path, home: Path
) -> None:
    record = encrypted.register("relu", relu_model)
    with pytest.raises(SignatureError, match="wrong artifact key"):
        ModelRegistry(home, ArtifactCipher(os.urandom(32))).artifact_bytes(record)
    with pytest.raises(SignatureError, match="set MCP_ARTIFACT_KEY_FILE"):
        ModelRegistry(home).artifact_bytes(record)
    stored = encrypted.store.encrypted_path_for(record.digest)
    blob = bytearray(stored.read_bytes())
    blob[-1] ^= 1
    os.chmod(stored, 0o644)
    stored.write_bytes(bytes(blob))
    with pytest.raises(SignatureError, match="altered"):
        encrypted.artifact_bytes(record)


def test_ciphertext_is_bound_to_its_digest() -> None:
    cipher = ArtifactCipher(os.urandom(32))
    blob = cipher.encrypt(b"model", "a" * 64)
    assert cipher.decrypt(blob, "a" * 64) == b"model"
    with pytest.raises(SignatureError, match="does not decrypt"):
        cipher.decrypt(blob, "b" * 64)
    with pytest.raises(SignatureError, match="not an encrypted artifact"):
        cipher.decrypt(b"plain onnx bytes", "a" * 64)


def test_plaintext_artifacts_stay_readable_after_enabling_encryption(
    home: Path, key_file: Path, relu_model: Path, sigmoid_model: Path
) -> None:
    old = ModelRegistry(home).register("relu", relu_model)
    registry = ModelRegistry(home, ArtifactCipher.from_file(key_file))
    new = registry.register("sigmoid", sigmoid_model)
    assert registry.artifact_bytes(old) == relu_model.read_bytes()
    assert registry.store.is_encrypted(new.digest) and not registry.store.is_encrypted(old.digest)
    registry.remove("sigmoid")
    assert not registry.store.exists(new.digest)


def test_signatures_verify_over_the_decrypted_artifact(encrypted: ModelRegistry, relu_model: Path, tmp_path) -> None:
    key = KeyRing(tmp_path / "keys").create("release")
    record = encrypted.register("relu", relu_model)
    sign_version(encrypted, record, key)
    trusted = TrustedKeys([key.public])
    assert verify_artifact(encrypted, record, trusted).key_id == key.key_id
    assert read_verified_artifact(encrypted, record, trusted) == relu_model.read_bytes()


def test_cipher_from_settings(key_file: Path) -> None:
    assert cipher_from_settings(Settings(artifact_key_file=None, artifact_key=None)) is None
    assert isinstance(cipher_from_settings(Settings(artifact_key_file=key_file)), ArtifactCipher)
    inline = base64.b64encode(os.urandom(32)).decode()
    assert isinstance(cipher_from_settings(Settings(artifact_key=inline)), ArtifactCipher)
    with pytest.raises(InvalidArgumentError, match="MCP_ARTIFACT_KEY: artifact key must decode to 32 bytes"):
        cipher_from_settings(Settings(artifact_key=base64.b64encode(b"short").decode()))
    with pytest.raises(InvalidArgumentError, match="not base64"):
        cipher_from_settings(Settings(artifact_key="%%%"))


def test_cli_data_key_then_register_encrypts(
    cli, home: Path, tmp_path: Path, relu_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "secret" / "artifact.key"
    created: CliResult = cli("keys", "data-key", "--out", str(out))
    assert created.code == 0 and f"MCP_ARTIFACT_KEY_FILE={out}" in created.out
    monkeypatch.setenv("MCP_ARTIFACT_KEY_FILE", str(out))
    from mcp2026ai.cli import context

    context.settings.cache_clear()
    assert cli("model", "register", "--name", "relu", "--path", str(relu_model)).code == 0
    assert list((home / "artifacts" / "objects").rglob("*.onnx.enc"))
    assert not list((home / "artifacts" / "objects").rglob("*.onnx"))
    cli("keys", "init")
    cli("model", "sign", "--name", "relu")
    assert cli("model", "verify", "--name", "relu").code == 0
