"""API tokens: creation, hashed storage, lookup, revocation, parsing of CLI values."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from mcp2026ai.security import Scope, TokenStore
from mcp2026ai.security.tokens import hash_secret, parse_duration, parse_scopes


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / "tokens.json")


def test_created_token_is_stored_only_as_a_hash_in_a_private_file(store: TokenStore) -> None:
    issued = store.create("ci", frozenset({Scope.INFER}))
    assert issued.token.startswith(f"mcp_{issued.record.id}_")
    secret = issued.token.split("_", 2)[2]
    text = store.path.read_text()
    assert secret not in text and issued.token not in text
    assert json.loads(text)["tokens"][0]["secret_sha256"] == hash_secret(secret)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_lookup_matches_only_the_exact_token(store: TokenStore) -> None:
    issued = store.create("ci", frozenset({Scope.INFER, Scope.MANAGE}))
    record = store.lookup(issued.token)
    assert record is not None and record.name == "ci" and record.scopes == [Scope.INFER, Scope.MANAGE]
    assert store.lookup(issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B")) is None
    assert store.lookup("mcp_000000000000_" + issued.token.split("_", 2)[2]) is None
    assert store.lookup("garbage") is None
    assert store.lookup("") is None


def test_each_token_is_unique_and_names_are_unique_among_active_tokens(store: TokenStore) -> None:
    first = store.create("ci", frozenset({Scope.INFER}))
    with pytest.raises(AlreadyExistsError, match="active token named 'ci'"):
        store.create("ci", frozenset({Scope.INFER}))
    store.revoke("ci")
    second = store.create("ci", frozenset({Scope.INFER}))
    assert second.token != first.token
    assert [r.name for r in store.records()] == ["ci", "ci"]


def test_revoke_by_name_or_id(store: TokenStore) -> None:
    a = store.create("a", frozenset({Scope.INFER}))
    revoked = store.revoke(a.record.id)
    assert revoked.revoked_at is not None
    record = store.lookup(a.token)
    assert record is not None and not record.active(datetime.now(UTC))
    with pytest.raises(NotFoundError, match="no unrevoked token"):
        store.revoke("a")


def test_expiry_is_computed_from_the_creation_time(store: TokenStore) -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    record = store.create("short", frozenset({Scope.INFER}), timedelta(hours=1), now=created).record
    assert record.expires_at == created + timedelta(hours=1)
    assert record.active(created + timedelta(minutes=59))
    assert not record.active(created + timedelta(hours=1))


def test_a_second_store_on_the_same_file_sees_changes(store: TokenStore) -> None:
    other = TokenStore(store.path)
    assert other.records() == []
    issued = store.create("late", frozenset({Scope.MANAGE}))
    assert other.lookup(issued.token) is not None
    store.revoke("late")
    looked_up = other.lookup(issued.token)
    assert looked_up is not None and looked_up.revoked_at is not None


def test_invalid_names_and_scopes_are_refused(store: TokenStore) -> None:
    with pytest.raises(InvalidArgumentError, match="token name ' x' is invalid"):
        store.create(" x", frozenset({Scope.INFER}))
    with pytest.raises(InvalidArgumentError, match="at least one scope"):
        store.create("x", frozenset())


def test_a_corrupt_token_file_is_a_clear_error(store: TokenStore) -> None:
    store.path.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="token file is unreadable"):
        store.records()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("infer", {Scope.INFER}), ("manage", {Scope.MANAGE}), ("infer, manage", {Scope.INFER, Scope.MANAGE})],
)
def test_parse_scopes(text: str, expected: set[Scope]) -> None:
    assert parse_scopes(text) == expected


@pytest.mark.parametrize("text", ["", "admin", "infer,root"])
def test_parse_scopes_names_the_bad_value(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="--scope"):
        parse_scopes(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("90m", timedelta(minutes=90)), ("2w", timedelta(14))],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["0d", "30", "d", "-1d", "1y", "1.5h"])
def test_parse_duration_refuses_bad_values(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"--expires '{text}'"):
        parse_duration(text)
