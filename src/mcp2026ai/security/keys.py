"""Ed25519 signing keys: create, store (private key 0600), load, and identify by key id."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from mcp2026ai.security.files import atomic_write

PRIVATE_SUFFIX = ".key"
PUBLIC_SUFFIX = ".pub"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_key_name(name: str) -> str:
    if not _NAME.match(name):
        raise InvalidArgumentError(
            f"key name {name!r} is invalid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def key_id(public_key: Ed25519PublicKey) -> str:
    """First 16 hex digits of the sha256 of the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class PublicKey:
    """A named Ed25519 verification key."""

    name: str
    key: Ed25519PublicKey

    @property
    def key_id(self) -> str:
        return key_id(self.key)

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            self.key.verify(signature, data)
        except InvalidSignature:
            return False
        return True

    def pem(self) -> bytes:
        return self.key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True)
class SigningKey:
    """A named Ed25519 private key."""

    name: str
    key: Ed25519PrivateKey

    @property
    def public(self) -> PublicKey:
        return PublicKey(self.name, self.key.public_key())

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, data: bytes) -> bytes:
        return self.key.sign(data)


def load_public_key(path: Path, name: str | None = None) -> PublicKey:
    """Read a PEM (SubjectPublicKeyInfo) Ed25519 public key; the name defaults to the file stem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidArgumentError(f"{path}: cannot read public key ({exc.strerror})") from None
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise InvalidArgumentError(f"{path}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidArgumentError(f"{path}: public key is {type(key).__name__}, expected Ed25519")
    return PublicKey(name or path.stem, key)


class KeyRing:
    """Private/public key pairs under one directory: ``NAME.key`` (PKCS#8, mode 0600) and ``NAME.pub``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def private_path(self, name: str) -> Path:
        return self.directory / f"{validate_key_name(name)}{PRIVATE_SUFFIX}"

    def public_path(self, name: str) -> Path:
        return self.directory / f"{validate_key_name(name)}{PUBLIC_SUFFIX}"

    def names(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(path.stem for path in self.directory.glob(f"*{PRIVATE_SUFFIX}"))

    def create(self, name: str, *, passphrase: bytes | None = None, overwrite: bool = False) -> SigningKey:
        """Generate a key pair; refuses to replace an existing private key unless ``overwrite``."""
        private_path = self.private_path(name)
        if private_path.exists() and not overwrite:
            raise AlreadyExistsError(f"{private_path}: key {name!r} already exists (use --force to replace it)")
        self.directory.mkdir(parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        signing = SigningKey(name, Ed25519PrivateKey.generate())
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
        )
        pem = signing.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
        atomic_write(private_path, pem, mode=0o600)
        atomic_write(self.public_path(name), signing.public.pem(), mode=0o644)
        return signing

    def load(self, name: str, *, passphrase: bytes | None = None) -> SigningKey:
        path = self.private_path(name)
        if not path.exists():
            raise NotFoundError(f"{path}: no signing key {name!r} (create one with `mcp keys init --name {name}`)")
        try:
            key = serialization.load_pem_private_key(path.read_bytes(), password=passphrase)
        except (ValueError, TypeError) as exc:
            wrong_passphrase = "password" in str(exc).lower()
            reason = "wrong or missing passphrase (MCP_KEY_PASSPHRASE)" if wrong_passphrase else "not a PEM key"
            raise InvalidArgumentError(f"{path}: cannot load private key: {reason}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise InvalidArgumentError(f"{path}: private key is {type(key).__name__}, expected Ed25519")
        return SigningKey(name, key)
