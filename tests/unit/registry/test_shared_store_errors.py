"""The shared stores refuse bad situations in one line and change nothing: unreachable servers, wrong
credentials, a missing bucket, an object altered in the bucket (real moto S3 and PostgreSQL servers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcp2026ai.errors import IntegrityError
from tests.support.cli import Outcome, run_main
from tests.support.services import free_port
from tests.support.stores import Backend


@pytest.fixture
def mcp(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "200")
    return lambda *args: run_main([str(arg) for arg in args], capsys, monkeypatch)


def one_line(outcome: Outcome, *fragments: str) -> None:
    assert outcome.code == 2, outcome.out
    assert outcome.err.count("\n") == 1 and "Traceback" not in outcome.err, outcome.err
    for fragment in fragments:
        assert fragment in outcome.err, outcome.err


def registered(mcp) -> list[str]:  # type: ignore[no-untyped-def]
    listed = mcp("model", "list", "--json")
    assert listed.code == 0, listed.err
    return [record["ref"] if "ref" in record else record["name"] for record in json.loads(listed.out)]


def test_wrong_s3_credentials(shared_stores: Backend, mcp, mlp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
    one_line(mcp("model", "register", "--name", "mlp", "--path", mlp_path), "refused", "AWS_SECRET_ACCESS_KEY", "s3://")
    assert "wrong-secret" not in mcp("model", "register", "--name", "mlp", "--path", mlp_path).err
    assert registered(mcp) == [] and shared_stores.object_keys() == []


def test_unreachable_s3(shared_stores: Backend, mcp, mlp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    one_line(mcp("model", "register", "--name", "mlp", "--path", mlp_path), "unreachable")
    assert registered(mcp) == []


def test_missing_bucket(shared_stores: Backend, mcp, mlp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MCP_ARTIFACT_URL", "s3://no-such-bucket-here/registry")
    one_line(
        mcp("model", "register", "--name", "mlp", "--path", mlp_path), "bucket 'no-such-bucket-here' does not exist"
    )
    assert registered(mcp) == []


def test_an_object_altered_in_the_bucket_is_never_loaded(shared_stores: Backend, mcp, mlp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert mcp("keys", "init").code == 0
    assert mcp("model", "register", "--name", "mlp", "--path", mlp_path).code == 0
    assert mcp("model", "sign", "--name", "mlp").code == 0
    (key,) = shared_stores.object_keys()
    assert shared_stores.s3 is not None
    shared_stores.s3.client().put_object(Bucket=shared_stores.bucket, Key=key, Body=b"altered bytes")
    shutil.rmtree(shared_stores.registry().home / "artifacts" / "s3-cache")  # as on a node that never fetched it
    one_line(mcp("model", "verify", "--name", "mlp"), "mlp:1.0.0: artifact in s3://", "was modified")
    registry = shared_stores.registry()
    with pytest.raises(IntegrityError, match=r"does not match its sha256 \w+ \(corrupted or altered in the bucket\)"):
        registry.artifact_path(registry.resolve("mlp"))
    assert not [path for path in (registry.home / "artifacts").rglob("*.onnx")], "no bad copy kept in the cache"


def test_unreachable_postgres(mcp, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MCP_CATALOG_URL", f"postgresql://mcp:s3cret@127.0.0.1:{free_port()}/registry")
    outcome = mcp("model", "list")
    one_line(outcome, "catalog postgresql://mcp@127.0.0.1:", "is unreachable")
    assert "s3cret" not in outcome.err


def test_wrong_postgres_password(shared_stores: Backend, mcp, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    assert shared_stores.postgres is not None
    monkeypatch.setenv("MCP_CATALOG_URL", shared_stores.postgres.url(password="not-the-password"))
    outcome = mcp("model", "list")
    one_line(outcome, "refused the credentials", "password authentication failed")
    assert "not-the-password" not in outcome.err
