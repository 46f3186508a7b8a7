"""Where Ray Serve replicas find the registry (no Ray needed): the driver's MCP_HOME on the local
stores; on shared stores a scratch directory of their own, with the stores' settings forwarded."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from mcp2026ai.deploy.ray import replica_placement
from mcp2026ai.deploy.ray_replica import ReplicaSecrets, forwarded_env, node_audit_log, replica_secrets, scratch_home
from mcp2026ai.registry import ModelRegistry

SHARED = {
    "MCP_CATALOG_URL": "postgresql://mcp:secret@db:5432/registry",
    "MCP_ARTIFACT_URL": "s3://models/registry",
    "AWS_ENDPOINT_URL": "http://s3:9000",
    "AWS_ACCESS_KEY_ID": "key",
    "AWS_SECRET_ACCESS_KEY": "secret",
}
OPTIONS = {"num_cpus": 1.0}


def test_on_the_local_stores_replicas_open_the_drivers_home(registry: ModelRegistry) -> None:
    home, options = replica_placement(OPTIONS, registry)
    assert home == str(registry.home) and options == OPTIONS


@pytest.mark.parametrize("only", ["MCP_CATALOG_URL", "MCP_ARTIFACT_URL"])
def test_one_shared_store_is_not_enough_to_drop_the_home(
    registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch, only: str
) -> None:
    monkeypatch.setenv(only, SHARED[only])
    assert replica_placement(OPTIONS, registry)[0] == str(registry.home)


def test_on_shared_stores_replicas_get_the_settings_and_no_home(
    registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in SHARED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MCP_HOME", "/driver/only")
    home, options = replica_placement(OPTIONS, registry)
    assert home is None
    plain = {"MCP_ARTIFACT_URL": "s3://models/registry", "AWS_ENDPOINT_URL": "http://s3:9000"}
    names = "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,MCP_CATALOG_URL"
    # MCP_HOME is not forwarded; the secrets are named, never given (finding 13)
    assert options == {**OPTIONS, "runtime_env": {"env_vars": {**plain, "MCP_REPLICA_SECRETS": names}}}


def test_the_runtime_environment_carries_no_secret(registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray shows ``runtime_env`` in its dashboard and state API: no store secret may be in it."""
    secrets = {
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value",
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEKEYID",
        "AWS_SESSION_TOKEN": "session-token-value",
        "MCP_ARTIFACT_KEY": "artifact-key-value",
        "MCP_CATALOG_URL": "postgresql://mcp:db-password@db:5432/registry",
    }
    for key, value in {**SHARED, **secrets}.items():
        monkeypatch.setenv(key, value)
    rendered = json.dumps(replica_placement(OPTIONS, registry)[1]["runtime_env"])
    leaked = [name for name, value in secrets.items() if value in rendered or "db-password" in rendered]
    assert leaked == [], rendered
    handed = replica_secrets(os.environ)
    assert handed.values == secrets and not any(value in repr(handed) for value in secrets.values())


def test_a_replica_takes_the_drivers_secrets_unless_its_node_has_them() -> None:
    node = {"AWS_SECRET_ACCESS_KEY": "the node's own"}
    ReplicaSecrets({"AWS_SECRET_ACCESS_KEY": "driver's", "AWS_ACCESS_KEY_ID": "driver-id"}).apply(node)
    assert node == {"AWS_SECRET_ACCESS_KEY": "the node's own", "AWS_ACCESS_KEY_ID": "driver-id"}


def test_forwarded_env_skips_unset_and_empty_variables() -> None:
    assert forwarded_env({"AWS_SECRET_ACCESS_KEY": ""}) == {}
    assert forwarded_env({"AWS_REGION": "", "MCP_ARTIFACT_URL": "s3://b/p", "PATH": "/bin"}) == {
        "MCP_ARTIFACT_URL": "s3://b/p"
    }


def test_each_replica_has_its_own_scratch_and_audit_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the node's TMPDIR
    monkeypatch.delenv("MCP_AUDIT_LOG", raising=False)
    first, second = scratch_home(), scratch_home()
    assert first != second and first.parent == second.parent == tmp_path
    assert node_audit_log(first) == first / "audit.jsonl"
    monkeypatch.setenv("MCP_AUDIT_LOG", str(tmp_path / "node.jsonl"))
    assert node_audit_log(first) == tmp_path / "node.jsonl"
