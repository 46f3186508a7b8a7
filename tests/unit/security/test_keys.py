"""Signing keys on disk and the trusted key set."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from mcp2026ai.security import KeyRing, TrustConfig, TrustedKeys, load_public_key, trust_key_file


def test_create_writes_private_key_0600_and_loadable_public_key(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys")
    key = ring.create("release")
    assert stat.S_IMODE(ring.private_path("release").stat().st_mode) == 0o600
    assert stat.S_IMODE(ring.directory.stat().st_mode) == 0o700
    public = load_public_key(ring.public_path("release"))
    assert public.key_id == key.key_id and len(key.key_id) == 16
    assert public.verify(key.sign(b"payload"), b"payload")
    assert not public.verify(key.sign(b"payload"), b"payloaD")
    assert ring.load("release").key_id == key.key_id
    assert ring.names() == ["release"]


def test_create_refuses_to_replace_a_key_unless_forced(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path)
    first = ring.create("default")
    with pytest.raises(AlreadyExistsError, match="already exists"):
        ring.create("default")
    assert ring.create("default", overwrite=True).key_id != first.key_id


def test_passphrase_protected_key_needs_the_passphrase(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path)
    key = ring.create("locked", passphrase=b"s3cret")
    assert b"ENCRYPTED" in ring.private_path("locked").read_bytes()
    assert ring.load("locked", passphrase=b"s3cret").key_id == key.key_id
    with pytest.raises(InvalidArgumentError, match="passphrase"):
        ring.load("locked")
    with pytest.raises(InvalidArgumentError, match="passphrase"):
        ring.load("locked", passphrase=b"wrong")


def test_bad_names_and_missing_keys_are_clear_errors(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path)
    with pytest.raises(InvalidArgumentError, match=r"key name '\.\./x' is invalid"):
        ring.create("../x")
    with pytest.raises(NotFoundError, match="mcp keys init --name nope"):
        ring.load("nope")


def test_load_public_key_rejects_garbage_and_non_ed25519(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key")
    with pytest.raises(InvalidArgumentError, match="not a PEM public key"):
        load_public_key(garbage)
    ec_pub = tmp_path / "ec.pub"
    ec_key = ec.generate_private_key(ec.SECP256R1()).public_key()
    ec_pub.write_bytes(ec_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(InvalidArgumentError, match="expected Ed25519"):
        load_public_key(ec_pub)
    with pytest.raises(InvalidArgumentError, match="cannot read"):
        load_public_key(tmp_path / "missing.pub")


def test_trusted_keys_come_from_the_directory_and_the_configured_list(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys")
    in_dir, listed, other = ring.create("a"), ring.create("b"), ring.create("c")
    trust_key_file(ring.public_path("a"), tmp_path / "trusted")
    trusted = TrustedKeys.from_config(
        TrustConfig(trusted_dir=tmp_path / "trusted", trusted_keys=[ring.public_path("b")])
    )
    assert in_dir.key_id in trusted and listed.key_id in trusted
    assert other.key_id not in trusted
    assert len(trusted) == 2
    with pytest.raises(InvalidArgumentError, match="trusted public key file not found"):
        TrustedKeys.from_config(TrustConfig(trusted_keys=[tmp_path / "gone.pub"]))


def test_trusting_a_different_key_under_a_taken_name_is_refused(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys")
    ring.create("a")
    ring.create("b")
    trust_key_file(ring.public_path("a"), tmp_path / "trusted", name="ops")
    trust_key_file(ring.public_path("a"), tmp_path / "trusted", name="ops")  # same key again: fine
    with pytest.raises(AlreadyExistsError, match="different key is already trusted as 'ops'"):
        trust_key_file(ring.public_path("b"), tmp_path / "trusted", name="ops")
