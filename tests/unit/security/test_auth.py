"""The transport-neutral Authenticator: bearer parsing, scopes, expiry, revocation, fuzzed headers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp2026ai.errors import PermissionDeniedError, UnauthenticatedError
from mcp2026ai.security import ANONYMOUS, AuthConfig, Authenticator, Scope, TokenStore, bearer_token

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def auth(tmp_path: Path, clock: Clock) -> Authenticator:
    return Authenticator(AuthConfig(enabled=True, tokens_file=tmp_path / "tokens.json"), clock=clock)


def _token(auth: Authenticator, name: str, *scopes: Scope, expires: timedelta | None = None) -> str:
    return auth.store.create(name, frozenset(scopes), expires, now=NOW).token


def test_disabled_auth_lets_everyone_in_as_anonymous(tmp_path: Path) -> None:
    auth = Authenticator(AuthConfig(tokens_file=tmp_path / "tokens.json"))
    assert not auth.enabled
    assert auth.authenticate(None, Scope.MANAGE) is ANONYMOUS
    assert ANONYMOUS.allows(Scope.INFER) and ANONYMOUS.allows(Scope.MANAGE)


def test_valid_token_with_the_scope_gives_its_principal(auth: Authenticator) -> None:
    token = _token(auth, "svc", Scope.INFER)
    principal = auth.authenticate(f"Bearer {token}", Scope.INFER)
    assert principal.name == "svc" and principal.scopes == {Scope.INFER} and principal.token_id
    assert auth.authenticate(f"bearer   {token}  ", Scope.INFER).name == "svc"


def test_manage_needs_the_manage_scope(auth: Authenticator) -> None:
    infer_only = _token(auth, "reader", Scope.INFER)
    admin = _token(auth, "admin", Scope.MANAGE)
    with pytest.raises(PermissionDeniedError, match="token 'reader' lacks the 'manage' scope"):
        auth.authenticate(f"Bearer {infer_only}", Scope.MANAGE)
    assert auth.authenticate(f"Bearer {admin}", Scope.MANAGE).name == "admin"
    with pytest.raises(PermissionDeniedError, match="lacks the 'infer' scope"):
        auth.authenticate(f"Bearer {admin}", Scope.INFER)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "missing bearer token"),
        ("", "missing bearer token"),
        ("Basic dXNlcjpwYXNz", "must read 'Bearer <token>'"),
        ("Bearer", "must read 'Bearer <token>'"),
        ("Bearer mcp_0123456789ab_notarealsecretnotarealsecret", "invalid bearer token"),
        ("Bearer " + "x" * 600, "too long"),
    ],
)
def test_bad_credentials_are_unauthenticated(auth: Authenticator, value: str | None, message: str) -> None:
    with pytest.raises(UnauthenticatedError, match=message):
        auth.authenticate(value, Scope.INFER)


def test_expired_token_is_unauthenticated(auth: Authenticator, clock: Clock) -> None:
    token = _token(auth, "temp", Scope.INFER, expires=timedelta(days=30))
    clock.now = NOW + timedelta(days=29)
    assert auth.authenticate(f"Bearer {token}", Scope.INFER).name == "temp"
    clock.now = NOW + timedelta(days=30)
    with pytest.raises(UnauthenticatedError, match="token 'temp' expired at 2026-03-31 12:00:00 UTC"):
        auth.authenticate(f"Bearer {token}", Scope.INFER)


def test_revocation_from_another_process_applies_at_the_next_request(auth: Authenticator) -> None:
    token = _token(auth, "leaked", Scope.INFER)
    assert auth.authenticate(f"Bearer {token}", Scope.INFER).name == "leaked"
    TokenStore(auth.config.tokens_file).revoke("leaked")  # what `mcp token revoke` does
    with pytest.raises(UnauthenticatedError, match="token 'leaked' was revoked"):
        auth.authenticate(f"Bearer {token}", Scope.INFER)


def test_bearer_token_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("BEARER abc") == "abc"


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Authenticator, str]:
    auth = Authenticator(AuthConfig(enabled=True, tokens_file=tmp_path_factory.mktemp("fuzz") / "tokens.json"))
    return auth, auth.store.create("real", frozenset({Scope.INFER})).token


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_arbitrary_credentials_only_ever_fail_as_unauthenticated(
    populated: tuple[Authenticator, str], data: st.DataObject
) -> None:
    auth, real = populated
    token_id = real.split("_")[1]
    value = data.draw(
        st.one_of(
            st.none(),
            st.text(max_size=700),
            st.text(max_size=80).map(lambda s: f"Bearer mcp_{s}"),
            st.text(min_size=1, max_size=60).map(lambda s: f"Bearer mcp_{token_id}_{s}"),
        ).filter(lambda v: v is None or real not in v)
    )
    with pytest.raises(UnauthenticatedError):
        auth.authenticate(value, Scope.INFER)
    assert auth.authenticate(f"Bearer {real}", Scope.INFER).name == "real"
