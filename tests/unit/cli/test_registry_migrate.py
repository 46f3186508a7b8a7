"""``mcp registry migrate``: a local registry copied into a PostgreSQL catalog and an S3 bucket."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.registry.catalogs.postgres_audit import PostgresAuditLog
from mcp2026ai.registry.stores import open_registry
from mcp2026ai.security import AuditLog
from tests.support.cli import Outcome, run_main
from tests.support.stores import Backend, use_shared_stores


def mcp(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> Outcome:
    monkeypatch.setenv("COLUMNS", "200")
    return run_main([str(arg) for arg in args], capsys, monkeypatch)


def test_migrate_copies_versions_artifacts_annotations_and_the_audit_chain(
    mcp_home: Path,
    mlp_path: Path,
    other_mlp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local = ModelRegistry(mcp_home, audit=AuditLog(mcp_home / "audit.jsonl"))
    local.register("mlp", mlp_path)
    local.register("mlp", other_mlp_path, stage=Stage.PRODUCTION, tags={"team": "a"})
    local.catalog.annotate("mlp", "1.0.0", "note", {"said": "hello"}, datetime.now(UTC))
    local_chain = [entry["hash"] for entry in AuditLog(mcp_home / "audit.jsonl").entries()]
    shared: Backend = use_shared_stores(request, monkeypatch)
    done = mcp(capsys, monkeypatch, "registry", "migrate", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert (report["copied"], report["objects"], report["audit_adopted"]) == (["mlp:1.0.0", "mlp:1.1.0"], 2, 2)
    moved = open_registry(home=mcp_home / "elsewhere")  # another node: no local files
    assert [(r.version, r.number, r.stage, r.tags) for r in moved.versions("mlp")] == [
        ("1.0.0", 1, Stage.DEV, {}),
        ("1.1.0", 2, Stage.PRODUCTION, {"team": "a"}),
    ]
    assert moved.catalog.annotations("mlp", "note") == local.catalog.annotations("mlp", "note")
    assert moved.artifact_path(moved.resolve("mlp")).read_bytes() == other_mlp_path.read_bytes()
    verified = mcp(capsys, monkeypatch, "audit", "verify")
    assert verified.code == 0 and ", 3 entries, " in verified.out, verified.err
    assert [entry["hash"] for entry in PostgresAuditLog(shared.env["MCP_CATALOG_URL"]).entries()][:2] == local_chain, (
        "the same chain, hash for hash"
    )
    assert len(shared.object_keys()) == 2
    again = mcp(capsys, monkeypatch, "registry", "migrate", "--json")
    assert json.loads(again.out)["skipped"] == ["mlp:1.0.0", "mlp:1.1.0"], "a second run copies nothing"


def test_migrate_needs_a_target(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    refused = mcp(capsys, monkeypatch, "registry", "migrate")
    assert refused.code == 2 and "give --catalog and/or --artifacts" in refused.err
