"""The registry's stores as a test parameter: ``local`` (MCP_HOME) or ``shared`` (a PostgreSQL catalog
and an S3 bucket on real servers, selected through MCP_CATALOG_URL and MCP_ARTIFACT_URL)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mcp2026ai.cli import context
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.stores import open_registry
from tests.support.postgres_server import PostgresServer, postgres_server  # noqa: F401 (fixture)
from tests.support.s3_server import S3Server, s3_server  # noqa: F401 (fixture)


@dataclass
class Backend:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    s3: S3Server | None = None
    bucket: str = ""
    postgres: PostgresServer | None = None

    @property
    def shared(self) -> bool:
        return self.s3 is not None

    def registry(self) -> ModelRegistry:
        """The registry the CLI would open now (settings re-read from the environment)."""
        context.settings.cache_clear()
        return open_registry()

    def object_keys(self) -> list[str]:
        assert self.s3 is not None
        listed = self.s3.client().list_objects_v2(Bucket=self.bucket)
        return [str(item["Key"]) for item in listed.get("Contents", [])]


def use_shared_stores(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    s3: S3Server = request.getfixturevalue("s3_server")
    postgres: PostgresServer = request.getfixturevalue("postgres_server")
    bucket = s3.new_bucket()
    env = {**s3.env(), "MCP_CATALOG_URL": postgres.new_database(), "MCP_ARTIFACT_URL": f"s3://{bucket}/registry"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    context.settings.cache_clear()
    return Backend("shared", env, s3, bucket, postgres)


@pytest.fixture(params=["local", "shared"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """Each test runs once on the local stores and once on the shared ones."""
    if request.param == "local":
        return Backend("local")
    return use_shared_stores(request, monkeypatch)


@pytest.fixture
def shared_stores(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Backend:
    return use_shared_stores(request, monkeypatch)
