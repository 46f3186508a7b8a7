"""API tokens with scopes, stored hashed in a JSON file (mode 0600) and looked up in constant time.

A token reads ``mcp_<id>_<secret>``: ``id`` (12 hex digits) is public and finds the record; the
secret (256 random bits) is only kept as its sha256. A fast hash is enough for secrets this long
(no dictionary to attack); comparison uses :func:`hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from mcp2026ai.security.files import atomic_write, locked

TOKEN_PREFIX = "mcp_"
_TOKEN = re.compile(r"^mcp_([0-9a-f]{12})_([A-Za-z0-9_-]{20,200})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class Scope(StrEnum):
    INFER = "infer"  # inference and read-only metadata
    MANAGE = "manage"  # load, unload, rollout and other management endpoints
    PULL = "pull"  # download a served model's artifact and signatures (edge devices)
    SHM = "shm"  # register, unregister and list shared memory regions (maps files under /dev/shm)


def parse_scopes(text: str) -> frozenset[Scope]:
    """``"infer,manage"`` -> {INFER, MANAGE}; names the bad value on error."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise InvalidArgumentError(
            "--scope is empty: use infer, manage, pull, shm or a comma-separated list (infer,pull)"
        )
    try:
        return frozenset(Scope(part) for part in parts)
    except ValueError:
        bad = next(part for part in parts if part not in set(Scope))
        raise InvalidArgumentError(
            f"--scope {bad!r} is unknown: use infer, manage, pull, shm or a comma-separated list (infer,pull)"
        ) from None


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s`` or ``2w``."""
    match = _DURATION.match(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise InvalidArgumentError(f"--expires {text!r}: expected a positive duration like 30d, 12h or 90m")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class TokenRecord(BaseModel):
    """What is stored about a token (never its secret)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    scopes: list[Scope]
    secret_sha256: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and not self.expired(now)


class _TokenFile(BaseModel):
    version: int = 1
    tokens: list[TokenRecord] = Field(default_factory=list)


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token: ``token`` is shown once and never stored."""

    record: TokenRecord
    token: str


class TokenStore:
    """Tokens in one JSON file; re-read when the file changes, so revocations apply without restart."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._records: list[TokenRecord] = []

    def records(self) -> list[TokenRecord]:
        with self._lock:
            return list(self._current())

    def create(
        self, name: str, scopes: frozenset[Scope], expires_in: timedelta | None = None, now: datetime | None = None
    ) -> IssuedToken:
        if not _NAME.match(name):
            raise InvalidArgumentError(
                f"token name {name!r} is invalid: use 1-64 letters, digits, '.', '_', '@' or '-'"
            )
        if not scopes:
            raise InvalidArgumentError("a token needs at least one scope (infer, manage, pull, shm)")
        now = now or datetime.now(UTC)
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        record = TokenRecord(
            id=token_id,
            name=name,
            scopes=sorted(scopes),
            secret_sha256=hash_secret(secret),
            created_at=now,
            expires_at=now + expires_in if expires_in else None,
        )

        def add(records: list[TokenRecord]) -> list[TokenRecord]:
            if any(other.name == name and other.active(now) for other in records):
                raise AlreadyExistsError(f"an active token named {name!r} already exists (revoke it first)")
            return [*records, record]

        self._update(add)
        return IssuedToken(record, f"{TOKEN_PREFIX}{token_id}_{secret}")

    def revoke(self, name_or_id: str, now: datetime | None = None) -> TokenRecord:
        """Revoke the active token with that name or id."""
        now = now or datetime.now(UTC)
        revoked: list[TokenRecord] = []

        def mark(records: list[TokenRecord]) -> list[TokenRecord]:
            out = []
            for record in records:
                if name_or_id in (record.name, record.id) and record.revoked_at is None and not revoked:
                    record = record.model_copy(update={"revoked_at": now})
                    revoked.append(record)
                out.append(record)
            if not revoked:
                raise NotFoundError(f"no unrevoked token named or with id {name_or_id!r}")
            return out

        self._update(mark)
        return revoked[0]

    def lookup(self, token: str) -> TokenRecord | None:
        """The record whose id and secret match ``token`` (any state), else None."""
        match = _TOKEN.match(token)
        if match is None:
            return None
        token_id, secret = match.groups()
        with self._lock:
            record = next((r for r in self._current() if r.id == token_id), None)
        wanted = record.secret_sha256 if record else hash_secret("")
        matches = hmac.compare_digest(wanted, hash_secret(secret))
        return record if record is not None and matches else None

    def _current(self) -> list[TokenRecord]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._records = None, []
            return self._records
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            self._records = self._read()
            self._stamp = stamp
        return self._records

    def _read(self) -> list[TokenRecord]:
        try:
            return _TokenFile.model_validate(json.loads(self.path.read_text(encoding="utf-8"))).tokens
        except (OSError, ValueError) as exc:
            raise InvalidArgumentError(f"{self.path}: token file is unreadable ({exc})".replace("\n", " ")) from None

    def _update(self, change: Callable[[list[TokenRecord]], list[TokenRecord]]) -> None:
        with self._lock, locked(self.path):
            self._stamp = None
            records = change(self._read() if self.path.exists() else [])
            document = _TokenFile(tokens=records).model_dump(mode="json")
            atomic_write(self.path, json.dumps(document, indent=2).encode("utf-8"), mode=0o600)
