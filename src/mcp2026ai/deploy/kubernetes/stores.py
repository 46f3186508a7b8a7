"""``--stores-secret NAME``: pods read the shared stores instead of a registry baked into the image.

The catalog (PostgreSQL) and the artifacts (S3) are named by a Kubernetes Secret the cluster already
holds; the containers take each setting from it (``secretKeyRef``), so no credential appears in a
manifest, the image or the build context. ``MCP_HOME`` is then only each pod's scratch space (the
cache of fetched artifacts, the pod's audit log): an ``emptyDir``. Every pod serves the registry's
default version and follows its promotes and rollbacks within the sync interval, as ``mcp serve`` does
anywhere on shared stores.
"""

from __future__ import annotations

import re
from typing import Any

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.stores import shares_every_store
from mcp2026ai.settings import load_settings

SECRET_KEYS = {
    "MCP_CATALOG_URL": True,
    "MCP_ARTIFACT_URL": True,
    "AWS_ACCESS_KEY_ID": True,
    "AWS_SECRET_ACCESS_KEY": True,
    "AWS_ENDPOINT_URL": False,
    "AWS_REGION": False,
    "MCP_ARTIFACT_KEY": False,
}
"""The Secret's keys, each an environment variable of the same name: True if it must be there (an
S3 endpoint other than AWS, the region and the key of artifacts encrypted at rest are optional)."""
SCRATCH_VOLUME = "scratch"
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_shared_stores(secret: str) -> None:
    """A valid Secret name, and a registry here that lives in shared stores (the ones pods will read)."""
    if len(secret) > 253 or not DNS_SUBDOMAIN.match(secret):
        raise InvalidArgumentError(f"--stores-secret: {secret!r} is not a valid Secret name (RFC 1123 subdomain)")
    if not shares_every_store(load_settings()):
        raise InvalidArgumentError(
            "--stores-secret: this registry is local; set MCP_CATALOG_URL (postgresql://) and MCP_ARTIFACT_URL "
            "(s3://) to the stores the pods will read, or copy it there with `mcp registry migrate`"
        )


def check_serves_default(registry: ModelRegistry, record: ModelVersion, asked_version: bool) -> None:
    """Pods on shared stores serve the model's default version: an explicit --version must be it."""
    default = registry.resolve(record.name)
    if asked_version and default.version != record.version:
        raise InvalidArgumentError(
            f"--stores-secret: pods serve {record.name}'s default version ({default.ref}) and follow its "
            f"promotes; promote {record.ref} first or omit --version"
        )


def store_env(secret: str) -> list[dict[str, Any]]:
    """Each store setting from the Secret (the optional ones marked ``optional``)."""
    env = []
    for key, required in SECRET_KEYS.items():
        ref: dict[str, Any] = {"name": secret, "key": key}
        if not required:
            ref["optional"] = True
        env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
    return env


def scratch_mount(path: str) -> dict[str, str]:
    return {"name": SCRATCH_VOLUME, "mountPath": path}


def scratch_volume() -> dict[str, Any]:
    return {"name": SCRATCH_VOLUME, "emptyDir": {}}


def shared_container(container: dict[str, Any], secret: str, scratch: str) -> dict[str, Any]:
    """``container`` with the stores' settings and the scratch volume mounted at ``scratch``."""
    return {**container, "env": store_env(secret), "volumeMounts": [scratch_mount(scratch)]}
