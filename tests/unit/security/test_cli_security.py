"""The security CLI end to end through the `mcp` entry point: keys, sign/verify, tokens, audit."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp2026ai.security import AuditLog, KeyRing

from .conftest import CliResult

Cli = Callable[..., CliResult]


def _actions(home: Path) -> list[tuple[str, str]]:
    return [(entry["action"], entry["target"]) for entry in AuditLog(home / "audit.jsonl").entries()]


def test_keys_init_sign_and_verify(cli: Cli, home: Path, relu_model: Path) -> None:
    created = cli("keys", "init")
    assert created.code == 0, created.err
    assert stat.S_IMODE((home / "keys" / "default.key").stat().st_mode) == 0o600
    assert (home / "trusted" / "default.pub").exists()
    assert cli("model", "register", "--name", "relu", "--path", str(relu_model)).code == 0
    signed = cli("model", "sign", "--name", "relu")
    assert signed.code == 0, signed.err
    assert "signed relu:1.0.0 with key default" in signed.out
    verified = cli("model", "verify", "--name", "relu", "--version", "1.0.0")
    assert verified.code == 0, verified.err
    assert "relu:1.0.0: signature ok" in verified.out
    assert _actions(home) == [
        ("keys.init", "default"),
        ("model.register", "relu:1.0.0"),
        ("model.sign", "relu:1.0.0"),
    ]


def test_verify_of_a_tampered_artifact_exits_2_with_one_line(cli: Cli, home: Path, relu_model: Path) -> None:
    cli("keys", "init")
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    cli("model", "sign", "--name", "relu")
    (artifact,) = (home / "artifacts" / "objects").rglob("*.onnx")
    os.chmod(artifact, 0o644)
    artifact.write_bytes(artifact.read_bytes().replace(b"Relu", b"Relx"))
    result = cli("model", "verify", "--name", "relu")
    assert result.code == 2
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert "relu:1.0.0: artifact" in result.err and "was modified on disk" in result.err


def test_verify_unsigned_and_untrusted_exit_2(cli: Cli, home: Path, relu_model: Path) -> None:
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    unsigned = cli("model", "verify", "--name", "relu")
    assert unsigned.code == 2 and "relu:1.0.0 is not signed" in unsigned.err
    assert cli("keys", "init", "--name", "outsider", "--no-trust").code == 0
    cli("model", "sign", "--name", "relu", "--key", "outsider")
    untrusted = cli("model", "verify", "--name", "relu")
    assert untrusted.code == 2 and "no trusted public keys" in untrusted.err
    cli("keys", "init", "--name", "insider")
    untrusted = cli("model", "verify", "--name", "relu")
    assert untrusted.code == 2 and "signed only by untrusted key" in untrusted.err
    trusted = cli("keys", "trust", str(home / "keys" / "outsider.pub"))
    assert trusted.code == 0 and "trusted key outsider" in trusted.out
    assert cli("model", "verify", "--name", "relu").code == 0


def test_trusted_keys_from_the_environment(
    cli: Cli, home: Path, relu_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    external = KeyRing(tmp_path / "ci-keys").create("ci")
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    (home / "keys").mkdir(parents=True)
    for suffix in (".key", ".pub"):
        (home / "keys" / f"ci{suffix}").write_bytes((tmp_path / "ci-keys" / f"ci{suffix}").read_bytes())
    assert cli("model", "sign", "--name", "relu", "--key", "ci").code == 0
    assert cli("model", "verify", "--name", "relu").code == 2
    monkeypatch.setenv("MCP_TRUSTED_KEYS", str(tmp_path / "ci-keys" / "ci.pub"))
    from mcp2026ai.cli import context

    context.settings.cache_clear()
    assert cli("model", "verify", "--name", "relu").code == 0
    listing = cli("keys", "list")
    assert listing.code == 0 and external.key_id in listing.out


def test_sign_with_a_missing_key_is_a_clear_error(cli: Cli, relu_model: Path) -> None:
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    result = cli("model", "sign", "--name", "relu", "--key", "nope")
    assert result.code == 2 and "no signing key 'nope'" in result.err


def test_token_create_list_revoke(cli: Cli, home: Path) -> None:
    created = cli("token", "create", "--name", "ci", "--scope", "infer,manage", "--expires", "30d")
    assert created.code == 0, created.err
    token = created.out.strip().splitlines()[-1]
    assert token.startswith("mcp_")
    assert token not in (home / "tokens.json").read_text()
    listing = cli("token", "list", "--json")
    (entry,) = json.loads(listing.out)
    assert entry["name"] == "ci" and entry["scopes"] == ["infer", "manage"] and entry["expires_at"]
    assert "secret_sha256" not in entry
    assert "active" in cli("token", "list").out
    assert cli("token", "revoke", "ci").code == 0
    assert "revoked" in cli("token", "list").out
    bad = cli("token", "create", "--name", "x", "--scope", "admin")
    assert bad.code == 2 and "--scope 'admin' is unknown" in bad.err
    assert [action for action, _ in _actions(home)] == ["token.create", "token.revoke"]


def test_audit_verify_and_show(cli: Cli, home: Path, relu_model: Path) -> None:
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    cli("model", "promote", "--name", "relu", "--version", "1.0.0", "--stage", "production")
    cli("model", "rm", "--name", "relu")
    ok = cli("audit", "verify")
    assert ok.code == 0 and "ok, 3 entries" in ok.out
    shown = cli("audit", "show", "--last", "2", "--json")
    assert [e["action"] for e in json.loads(shown.out)] == ["model.promote", "model.rm"]
    assert all(e["actor"].startswith("cli:") for e in json.loads(shown.out))
    log = home / "audit.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + lines[2])
    broken = cli("audit", "verify", "--path", str(log))
    assert broken.code == 2
    assert "audit chain broken at line 2" in broken.err and broken.err.count("\n") == 1


def test_keys_init_force_replaces_the_trusted_copy_and_old_signatures_stop_verifying(
    cli: Cli, home: Path, relu_model: Path
) -> None:
    cli("keys", "init")
    cli("model", "register", "--name", "relu", "--path", str(relu_model))
    cli("model", "sign", "--name", "relu")
    again = cli("keys", "init")
    assert again.code == 2 and "already exists" in again.err
    assert cli("keys", "init", "--force").code == 0
    stale = cli("model", "verify", "--name", "relu")
    assert stale.code == 2 and "signed only by untrusted key" in stale.err
    cli("model", "sign", "--name", "relu")
    assert cli("model", "verify", "--name", "relu").code == 0


def test_keys_init_does_not_shadow_a_trusted_key_of_the_same_name(cli: Cli, home: Path, tmp_path: Path) -> None:
    KeyRing(tmp_path / "ci").create("default")
    assert cli("keys", "trust", str(tmp_path / "ci" / "default.pub")).code == 0
    clash = cli("keys", "init")
    assert clash.code == 2 and "already trusted" in clash.err
    assert not (home / "keys" / "default.key").exists()
    assert cli("keys", "init", "--name", "local").code == 0
