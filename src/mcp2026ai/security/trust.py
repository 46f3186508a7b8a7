"""The set of trusted Ed25519 public keys: every ``*.pub`` in a directory plus configured files."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError
from mcp2026ai.security.keys import PUBLIC_SUFFIX, PublicKey, load_public_key, validate_key_name


class TrustConfig(BaseModel):
    """Where trusted public keys come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trusted_dir: Path | None = Field(None, description="Directory whose *.pub files are trusted (MCP_HOME/trusted).")
    trusted_keys: list[Path] = Field(default_factory=list, description="Additional public key files to trust.")


class TrustedKeys:
    """Public keys by key id; a signature counts only if its key id is in here."""

    def __init__(self, keys: Iterable[PublicKey] = ()) -> None:
        self._keys = {key.key_id: key for key in keys}

    @classmethod
    def from_config(cls, config: TrustConfig) -> TrustedKeys:
        """Load the directory's keys and each listed file (a listed folder: its ``*.pub``, e.g. a mounted
        ConfigMap); a listed path that is missing is an error."""
        keys: list[PublicKey] = []
        if config.trusted_dir is not None and config.trusted_dir.is_dir():
            keys += [load_public_key(path) for path in sorted(config.trusted_dir.glob(f"*{PUBLIC_SUFFIX}"))]
        for path in config.trusted_keys:
            if path.is_dir():
                keys += [load_public_key(key) for key in sorted(path.glob(f"*{PUBLIC_SUFFIX}"))]
                continue
            if not path.is_file():
                raise InvalidArgumentError(f"{path}: trusted public key file not found")
            keys.append(load_public_key(path))
        return cls(keys)

    def get(self, key_id: str) -> PublicKey | None:
        return self._keys.get(key_id)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __iter__(self) -> Iterator[PublicKey]:
        return iter(self._keys.values())

    def __len__(self) -> int:
        return len(self._keys)


def trust_key_file(source: Path, trusted_dir: Path, name: str | None = None, *, replace: bool = False) -> PublicKey:
    """Validate a public key file and copy it into ``trusted_dir`` as ``NAME.pub``.

    A different key already trusted under that name is only replaced when ``replace`` is set.
    """
    key = load_public_key(source, validate_key_name(name) if name else None)
    validate_key_name(key.name)
    trusted_dir.mkdir(parents=True, exist_ok=True)
    target = trusted_dir / f"{key.name}{PUBLIC_SUFFIX}"
    if not replace and target.exists() and load_public_key(target).key_id != key.key_id:
        raise AlreadyExistsError(f"{target}: a different key is already trusted as {key.name!r} (use --name)")
    if target.resolve() != source.resolve():
        shutil.copyfile(source, target)
    return PublicKey(key.name, key.key)
