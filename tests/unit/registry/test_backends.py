"""Every registry command on each backend: the local stores and the shared ones (a PostgreSQL catalog
and an S3 bucket on real servers), through the real ``mcp`` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import Outcome, run_main
from tests.support.stores import Backend


@pytest.fixture
def mcp(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*args: str | Path) -> Outcome:
        return run_main([str(arg) for arg in args], capsys, monkeypatch)

    return invoke


def ok(outcome: Outcome) -> str:
    assert outcome.code == 0, outcome.err
    return outcome.out


def test_register_list_show_promote_rm(backend: Backend, mcp, mlp_path: Path, other_mlp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = json.loads(ok(mcp("model", "register", "--name", "mlp", "--path", mlp_path, "--json")))
    second = json.loads(ok(mcp("model", "register", "--name", "mlp", "--path", other_mlp_path, "--json")))
    assert (first["version"], first["number"], second["version"], second["number"]) == ("1.0.0", 1, "1.1.0", 2)
    listed = json.loads(ok(mcp("model", "list", "--json")))
    assert [(r["version"], r["digest"]) for r in listed] == [("1.0.0", first["digest"]), ("1.1.0", second["digest"])]
    assert json.loads(ok(mcp("model", "show", "--name", "mlp", "--version", "2", "--json")))["version"] == "1.1.0"
    ok(mcp("model", "promote", "--name", "mlp", "--version", "1.0.0", "--stage", "production"))
    assert json.loads(ok(mcp("model", "show", "--name", "mlp", "--json")))["version"] == "1.0.0"
    if backend.shared:
        assert len(backend.object_keys()) == 2, "both artifacts went to the bucket"
        assert not (backend.registry().home / "registry.db").exists(), "no local catalog"
    assert ok(mcp("model", "rm", "--name", "mlp", "--version", "1.1")).strip() == "removed mlp:1.1.0"
    if backend.shared:
        assert [key.rsplit("/", 1)[-1] for key in backend.object_keys()] == [f"{first['digest']}.onnx"]
    assert backend.registry().artifact_path(backend.registry().resolve("mlp")).exists()


def test_sign_verify_and_audit_verify(backend: Backend, mcp, mlp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ok(mcp("keys", "init"))
    ok(mcp("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(mcp("model", "sign", "--name", "mlp"))
    assert "mlp:1.0.0: signature ok" in ok(mcp("model", "verify", "--name", "mlp"))
    verified = ok(mcp("audit", "verify"))
    assert ", 3 entries, head " in verified
    if backend.shared:
        assert "(audit_log table)" in verified and backend.env["MCP_CATALOG_URL"].split(":")[2] not in verified
    shown = json.loads(ok(mcp("audit", "show", "--json")))
    assert [entry["action"] for entry in shown] == ["keys.init", "model.register", "model.sign"]


def test_a_failed_registration_changes_nothing(backend: Backend, mcp, tmp_path: Path, mlp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ok(mcp("model", "register", "--name", "mlp", "--path", mlp_path, "--version", "1.0.0"))
    taken = mcp("model", "register", "--name", "mlp", "--path", mlp_path, "--version", "1")
    assert taken.code == 2 and taken.err.count("\n") == 1 and "already has version 1.0.0" in taken.err
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    assert mcp("model", "register", "--name", "other", "--path", broken).code == 2
    assert [r["name"] for r in json.loads(ok(mcp("model", "list", "--json")))] == ["mlp"]
    if backend.shared:
        assert len(backend.object_keys()) == 1


def test_predict_and_rollouts(backend: Backend, mcp, mlp_path: Path, other_mlp_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ok(mcp("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(mcp("model", "register", "--name", "mlp", "--path", other_mlp_path))
    np.save(tmp_path / "x.npy", np.ones((2, 4), dtype=np.float32))
    out = json.loads(ok(mcp("predict", "--name", "mlp", "--version", "1.0.0", "--input", tmp_path / "x.npy", "--json")))
    assert out["y"]["shape"] == [2, 3]
    ok(mcp("rollout", "set", "--name", "mlp", "--stable", "1.0.0", "--canary", "1.1.0", "--weight", "10"))
    shown = json.loads(ok(mcp("rollout", "show", "--name", "mlp", "--json")))
    assert (shown["rollout"]["stable"], shown["rollout"]["canary"], shown["rollout"]["weight"]) == (
        "1.0.0",
        "1.1.0",
        10,
    )
    ok(mcp("rollout", "clear", "--name", "mlp"))
    assert json.loads(ok(mcp("rollout", "show", "--name", "mlp", "--json")))["rollout"] is None
