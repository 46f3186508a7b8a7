"""The PostgreSQL catalog: versioned migrations, and registrations racing from several processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp2026ai.registry.catalogs.postgres import PostgresCatalog
from mcp2026ai.registry.catalogs.postgres_audit import PostgresAuditLog
from mcp2026ai.registry.catalogs.postgres_connection import connected
from mcp2026ai.registry.catalogs.postgres_schema import MIGRATIONS
from tests.support import REPO_ROOT
from tests.support.cli import run_main
from tests.support.stores import Backend

_REGISTER = """
import sys
from pathlib import Path
from mcp2026ai.registry.stores import audit_chain_for, catalog_url, open_registry
from mcp2026ai.settings import load_settings
settings = load_settings()
audit = audit_chain_for(catalog_url(settings), Path(sys.argv[2]))
registry = open_registry(settings, audit=audit, actor=f"worker-{sys.argv[3]}")
for _ in range(3):
    registry.register("mlp", Path(sys.argv[1]))
"""


def test_migrations_apply_once_and_are_recorded(shared_stores: Backend) -> None:
    url = shared_stores.env["MCP_CATALOG_URL"]
    PostgresCatalog(url)
    PostgresCatalog(url)  # a second opening applies nothing again
    with connected(url) as db:
        applied = [row[0] for row in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert applied == list(range(1, len(MIGRATIONS) + 1))


@pytest.mark.slow
def test_registrations_from_several_processes_get_unique_versions_and_one_chain(
    shared_stores: Backend, mlp_path: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _REGISTER, str(mlp_path), str(tmp_path / "unused.jsonl"), str(n)], env=env
        )
        for n in range(3)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0]
    records = shared_stores.registry().versions("mlp")
    assert sorted(record.number for record in records) == list(range(1, 10))
    assert len({record.version for record in records}) == 9
    log = PostgresAuditLog(shared_stores.env["MCP_CATALOG_URL"])
    assert log.verify().ok and log.verify().entries == 9
    assert {entry["target"] for entry in log.entries()} == {record.ref for record in records}
    assert not (tmp_path / "unused.jsonl").exists(), "the audit chain lives beside the PostgreSQL catalog"


_KILLED_REGISTER = """
import os, signal, sys
from mcp2026ai.registry.catalogs import postgres_audit
original = postgres_audit._append
def append(db, action, *args):
    if action == "model.register":
        os.kill(os.getpid(), signal.SIGKILL)
    return original(db, action, *args)
postgres_audit._append = append
from mcp2026ai.cli.main import main
sys.argv = ["mcp", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
def test_a_register_killed_between_catalog_and_audit_is_recovered_by_the_next_one(
    shared_stores: Backend,
    mlp_path: Path,
    other_mlp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shared chain's lock dies with its holder's connection: the next registration (from any
    machine) takes it, records the entry the killed one owed, and the chain verifies."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    args = ["model", "register", "--name", "mlp", "--path", str(mlp_path)]
    killed = subprocess.run([sys.executable, "-c", _KILLED_REGISTER, *args], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    failed = run_main(["audit", "verify"], capsys, monkeypatch)
    assert failed.code == 2 and "no model.register entry: mlp:1.0.0 (registration interrupted)" in failed.err
    assert (
        run_main(["model", "register", "--name", "other", "--path", str(other_mlp_path)], capsys, monkeypatch).code == 0
    )
    assert run_main(["audit", "verify"], capsys, monkeypatch).code == 0
    log = PostgresAuditLog(shared_stores.env["MCP_CATALOG_URL"])
    assert [(e["target"], e["details"].get("recovered", False)) for e in log.entries()] == [
        ("mlp:1.0.0", True),
        ("other:1.0.0", False),
    ]
