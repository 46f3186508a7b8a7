"""``--storage-uri s3://bucket/prefix`` (with ``--stores-secret``): the KServe InferenceService names the
model's place in S3 (``storageUri``), as KServe users expect, and KServe's storage initializer downloads
it into ``/mnt/models`` before the runtime starts.

What lies there is the model exported as a Triton model repository (``mcp model export --format
triton``: ``<name>/config.pbtxt`` from the contract, one numbered directory per version, the registry's
default version served), which the command uploads under the URI; the runtime serves it as it stands
(``mcp serve --model-repository /mnt/models``), with no catalog to reach. Each ``config.pbtxt`` is
uploaded after its version directories, so a reader that finds a config finds its versions whole.

The InferenceService runs under a ServiceAccount that attaches the stores' Secret: KServe's initializer
reads ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` from it, and its S3 endpoint, scheme and
region from the ServiceAccount's ``serving.kserve.io/s3-*`` annotations (written from this command's
``AWS_ENDPOINT_URL`` and ``AWS_REGION``: neither is a secret). The plain Kubernetes Deployment keeps
reading the stores themselves.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp2026ai.deploy.kubernetes.options import Target
from mcp2026ai.deploy.kubernetes.workloads import labels
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.protocol.triton_export import export_repository
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.artifacts.s3_client import S3Location, s3_call, s3_client
from mcp2026ai.registry.triton_repository import CONFIG_FILE

MODEL_DIR = "/mnt/models"
"""Where KServe's storage initializer puts what ``storageUri`` names."""
STORAGE_LABEL = "KServe storageUri"


def check_storage_uri(uri: str, stores_secret: str | None) -> S3Location:
    """An ``s3://bucket/prefix`` location, with the Secret its credentials come from."""
    if stores_secret is None:
        raise InvalidArgumentError(
            "--storage-uri: needs --stores-secret (the Secret whose AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "KServe's storage initializer reads)"
        )
    try:
        location = S3Location.parse(uri)
    except InvalidArgumentError:
        raise InvalidArgumentError(f"--storage-uri: {uri!r} is not an s3://bucket/prefix location") from None
    if not location.prefix:
        raise InvalidArgumentError(f"--storage-uri: {uri!r} names a whole bucket; give a prefix (s3://bucket/models)")
    return location


def upload_repository(registry: ModelRegistry, name: str, location: S3Location) -> list[str]:
    """Export ``name`` as a Triton repository and upload it under ``location``; returns the keys."""
    client = s3_client()
    with tempfile.TemporaryDirectory(prefix="mcp-kserve-") as scratch:
        root = Path(scratch)
        export_repository(registry, [name], root)
        files = sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: (p.name == CONFIG_FILE, str(p)))
        keys = []
        for path in files:
            key = location.key(path.relative_to(root).as_posix())
            with s3_call(location, key, missing_is_error=True, label=STORAGE_LABEL):
                client.upload_file(str(path), location.bucket, key)
            keys.append(key)
    return keys


def storage_annotations(environ: Mapping[str, str]) -> dict[str, str]:
    """KServe's S3 annotations from the endpoint and region this command reached the stores with."""
    annotations: dict[str, str] = {}
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        annotations["serving.kserve.io/s3-endpoint"] = parts.netloc
        annotations["serving.kserve.io/s3-usehttps"] = "0" if parts.scheme == "http" else "1"
    region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    if region:
        annotations["serving.kserve.io/s3-region"] = region
    return annotations


def service_account_name(app: str) -> str:
    return f"mcp2026ai-{app}-storage"[:253]


def service_account(target: Target) -> dict[str, Any]:
    """The ServiceAccount the InferenceService runs under: the stores' Secret attached, KServe's S3
    annotations on it."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": service_account_name(target.app),
            "namespace": target.namespace,
            "labels": labels(target),
            "annotations": dict(target.storage_annotations),
        },
        "secrets": [{"name": target.stores_secret}],
        "automountServiceAccountToken": False,  # KServe's storage initializer reads the Secret, not the API
    }


def repository_command(http_port: int, grpc_port: int, drain_timeout_s: int) -> list[str]:
    """``mcp serve`` on the downloaded repository, on every interface."""
    return [
        "mcp", "serve", "--model-repository", MODEL_DIR, "--host", "0.0.0.0",
        "--port", str(http_port), "--grpc-port", str(grpc_port), "--drain-timeout", str(drain_timeout_s),
    ]  # fmt: skip
