"""A registration's catalog row and its audit entry: both, or a detected and repaired gap.

The kill between the catalog insert and the audit append is simulated two ways: an append that
raises in-process, and a real ``mcp model register`` subprocess that SIGKILLs itself at that point.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcp2026ai.app import register_paths, repair_audit_trail
from mcp2026ai.cli import context
from mcp2026ai.registry import ModelRegistry, audit_trail
from mcp2026ai.security import AuditLog
from tests.support.cli import Outcome, run_main
from tests.support.onnx_models import build_mlp


class Killed(Exception):
    """Stands for the process dying at the patched point."""


def audited(home: Path) -> ModelRegistry:
    return ModelRegistry(home, audit=AuditLog(home / "audit.jsonl"), actor="cli:tester")


def registrations(log: AuditLog) -> list[dict[str, Any]]:
    return [entry for entry in log.entries() if entry["action"] == "model.register"]


def die_before_register_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next model.register append dies before writing (the catalog row is already in)."""
    original = AuditLog._append_locked

    def append(self: AuditLog, action: str, *args: Any) -> dict[str, Any]:
        if action == "model.register":
            monkeypatch.setattr(AuditLog, "_append_locked", original)
            raise Killed
        return original(self, action, *args)

    monkeypatch.setattr(AuditLog, "_append_locked", append)


def test_a_registration_writes_its_entry_and_leaves_no_intent(mcp_home: Path, mlp_path: Path) -> None:
    registry = audited(mcp_home)
    record = registry.register("mlp", mlp_path, audit_details={"note": "first"})
    [entry] = registrations(registry.audit)  # type: ignore[arg-type]
    assert (entry["actor"], entry["target"]) == ("cli:tester", "mlp:1.0.0")
    assert entry["details"]["digest"] == record.digest and entry["details"]["note"] == "first"
    assert "recovered" not in entry["details"]
    assert registry.catalog.pending_audits() == []
    assert audit_trail.unaudited_versions(registry.catalog, registry.audit) == []  # type: ignore[arg-type]


def test_a_kill_before_the_append_is_detected_then_recovered_by_the_next_registration(
    mcp_home: Path, mlp_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = audited(mcp_home)
    log = registry.audit
    assert log is not None
    die_before_register_entry(monkeypatch)
    with pytest.raises(Killed):
        registry.register("mlp", mlp_path)
    assert registry.resolve("mlp").version == "1.0.0"  # servable, yet no entry
    assert registrations(log) == []
    [missing] = audit_trail.unaudited_versions(registry.catalog, log)
    assert missing.describe() == "mlp:1.0.0 (registration interrupted)"

    audited(mcp_home).register("other", build_mlp(tmp_path / "other.onnx", seed=4))

    recovered, fresh = registrations(log)
    assert (recovered["target"], recovered["actor"], recovered["details"]["recovered"]) == (
        "mlp:1.0.0",
        "cli:tester",
        True,
    )
    assert fresh["target"] == "other:1.0.0" and "recovered" not in fresh["details"]
    assert audit_trail.unaudited_versions(registry.catalog, log) == []
    assert registry.catalog.pending_audits() == [] and log.verify().ok


def test_a_kill_after_the_append_is_not_recorded_twice(
    mcp_home: Path, mlp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = audited(mcp_home)

    def killed(intent_id: str) -> None:
        raise Killed

    monkeypatch.setattr(registry.catalog, "clear_audit", killed)
    with pytest.raises(Killed):
        registry.register("mlp", mlp_path)
    assert len(registry.catalog.pending_audits()) == 1

    fresh = audited(mcp_home)
    assert [entry["target"] for entry in audit_trail.recover(fresh.catalog, fresh.audit)] == []  # type: ignore[arg-type]
    assert [entry["target"] for entry in registrations(fresh.audit)] == ["mlp:1.0.0"]  # type: ignore[arg-type]
    assert fresh.catalog.pending_audits() == []


def test_server_start_recovers_what_a_killed_registration_owed(
    mcp_home: Path, mlp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = audited(mcp_home)
    die_before_register_entry(monkeypatch)
    with pytest.raises(Killed):
        registry.register("mlp", mlp_path)
    repair_audit_trail(audited(mcp_home))  # what run_server does before serving
    [entry] = registrations(registry.audit)  # type: ignore[arg-type]
    assert entry["target"] == "mlp:1.0.0" and entry["details"]["recovered"] is True


def test_a_version_registered_without_the_audit_log_is_named_by_verify_and_repaired(
    mcp_home: Path, mlp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ModelRegistry(mcp_home).register("mlp", mlp_path)  # no audit log configured: no entry, no intent
    failed = run_main(["audit", "verify"], capsys, monkeypatch)
    assert failed.code == 2 and failed.err.count("\n") == 1
    assert "1 registered model version(s) have no model.register entry: mlp:1.0.0;" in failed.err
    repaired = run_main(["audit", "verify", "--repair"], capsys, monkeypatch)
    assert repaired.code == 0 and "recorded the missing model.register entry of mlp:1.0.0" in repaired.out
    [entry] = registrations(AuditLog(mcp_home / "audit.jsonl"))
    assert entry["actor"] == audit_trail.RECOVERY_ACTOR and entry["details"]["recovered"] is True
    assert run_main(["audit", "verify"], capsys, monkeypatch).code == 0


_KILLED_REGISTER = textwrap.dedent(
    """
    import os, signal, sys
    from mcp2026ai.security.audit import AuditLog
    original = AuditLog._append_locked
    def append(self, action, *args):
        if action == "model.register":
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, action, *args)
    AuditLog._append_locked = append
    from mcp2026ai.cli.main import main
    sys.argv = ["mcp", *sys.argv[1:]]
    main()
    """
)


def test_a_register_sigkilled_between_catalog_and_audit_fails_verify_until_the_next_register(
    mcp_home: Path, mlp_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["model", "register", "--name", "mlp", "--path", str(mlp_path)]
    env = {**os.environ, "MCP_HOME": str(mcp_home), "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", _KILLED_REGISTER, *args], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    assert run_main(["model", "list"], capsys, monkeypatch).out.count("mlp") == 1  # the version is servable
    failed: Outcome = run_main(["audit", "verify"], capsys, monkeypatch)
    assert failed.code == 2
    assert "have no model.register entry: mlp:1.0.0 (registration interrupted)" in failed.err

    other = build_mlp(tmp_path / "other.onnx", seed=5)
    assert run_main(["model", "register", "--name", "other", "--path", str(other)], capsys, monkeypatch).code == 0
    passed = run_main(["audit", "verify"], capsys, monkeypatch)
    assert passed.code == 0 and "ok, 2 entries" in passed.out
    targets = [
        (e["target"], e["details"].get("recovered", False)) for e in registrations(AuditLog(mcp_home / "audit.jsonl"))
    ]
    assert targets == [("mlp:1.0.0", True), ("other:1.0.0", False)]


def test_serve_model_path_registrations_are_audited_once(mcp_home: Path, mlp_path: Path) -> None:
    for _ in range(2):  # the second start reuses the identical version: nothing new to record
        assert register_paths(context.registry(), [mlp_path]) == {"mlp": mlp_path.resolve()}
    [entry] = registrations(AuditLog(mcp_home / "audit.jsonl"))
    assert entry["target"] == "mlp:1.0.0" and entry["actor"] == context.actor()
    assert entry["details"]["source"] == str(mlp_path)
