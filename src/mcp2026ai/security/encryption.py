"""Optional encryption of model artifacts at rest: AES-256-GCM bound to the artifact's digest.

An encrypted artifact is ``MAGIC | nonce (12 bytes) | ciphertext+tag``; the associated data is
``MAGIC | sha256-hex of the plaintext``, so a file moved to another digest's name, or altered in any
byte, fails to decrypt. The 32-byte key comes from a file (MCP_ARTIFACT_KEY_FILE) or the environment
(MCP_ARTIFACT_KEY), base64; keep it off the disk that holds the artifacts.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mcp2026ai.errors import InvalidArgumentError, SignatureError
from mcp2026ai.security.files import atomic_write
from mcp2026ai.settings import Settings

MAGIC = b"MCPAEAD1"
_NONCE_BYTES = 12
KEY_BYTES = 32


class ArtifactCipher:
    """Encrypts and decrypts whole artifacts (up to 2 GiB, the protobuf limit of an ONNX file)."""

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise InvalidArgumentError(f"artifact key must be {KEY_BYTES} bytes, got {len(key)}")
        self._aead = AESGCM(key)

    @classmethod
    def from_text(cls, text: str, source: str) -> ArtifactCipher:
        try:
            key = base64.b64decode(text.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidArgumentError(f"{source}: artifact key is not base64") from None
        if len(key) != KEY_BYTES:
            raise InvalidArgumentError(f"{source}: artifact key must decode to {KEY_BYTES} bytes, got {len(key)}")
        return cls(key)

    @classmethod
    def from_file(cls, path: Path) -> ArtifactCipher:
        try:
            text = path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgumentError(f"{path}: cannot read artifact key ({exc})") from None
        return cls.from_text(text, str(path))

    def encrypt(self, plaintext: bytes, digest: str) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return MAGIC + nonce + self._aead.encrypt(nonce, plaintext, MAGIC + digest.encode("ascii"))

    def decrypt(self, blob: bytes, digest: str) -> bytes:
        """The plaintext; SignatureError if the blob is not ours, was altered, or the key is wrong."""
        if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _NONCE_BYTES + 16:
            raise SignatureError(f"artifact {digest[:12]} is not an encrypted artifact")
        nonce = blob[len(MAGIC) : len(MAGIC) + _NONCE_BYTES]
        try:
            return self._aead.decrypt(nonce, blob[len(MAGIC) + _NONCE_BYTES :], MAGIC + digest.encode("ascii"))
        except InvalidTag:
            raise SignatureError(
                f"artifact {digest[:12]} does not decrypt: wrong artifact key, or the file was altered"
            ) from None


def cipher_from_settings(settings: Settings) -> ArtifactCipher | None:
    """The configured cipher, or None when encryption at rest is off (the default)."""
    if settings.artifact_key_file is not None:
        return ArtifactCipher.from_file(settings.artifact_key_file)
    if settings.artifact_key is not None:
        return ArtifactCipher.from_text(settings.artifact_key.get_secret_value(), "MCP_ARTIFACT_KEY")
    return None


def write_new_key(path: Path, overwrite: bool = False) -> None:
    """Generate a random 256-bit key, base64, in a file of mode 0600."""
    if path.exists() and not overwrite:
        raise InvalidArgumentError(f"{path}: an artifact key already exists (use --force to replace it)")
    atomic_write(path, base64.b64encode(AESGCM.generate_key(bit_length=256)) + b"\n", mode=0o600)
