"""What ``mcp deploy kubernetes`` is asked for, and the facts it renders from (the target)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.contract import AutoscaleSpec, InferenceContract
from mcp2026ai.deploy.kubernetes.hardening import DeploySecurity

HTTP_PORT = 8000
GRPC_PORT = 8001
KSERVE_HTTP_PORT = 8080  # KServe's default container port (its runtimes listen there)
KSERVE_GRPC_PORT = 9000  # the gRPC port KServe's Triton runtime uses
SERVER_BASELINE_MB = 512
"""Resident memory of the server itself (interpreter, onnxruntime, HTTP and gRPC stacks) on top of
the contract's model budget: the container's memory is this plus ``resources.memory_mb``."""
RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


class KubernetesOptions(BaseModel):
    """The command's options (the CLI's flags, validated)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Registered model to deploy.")
    version: str | None = Field(None, description="Version; default: the registry's default version.")
    replicas: int | None = Field(None, ge=1, le=1024, description="Fixed replica count; default: the contract's.")
    namespace: str = Field("default", description="Namespace of the namespaced objects.")
    out: Path = Field(description="Folder the manifests, Dockerfile and registry export are written to.")
    image: str | None = Field(None, description="Image reference; default: mcp2026ai/<model>:<version>.")
    base_image: str = Field("python:3.11-slim", description="Base image of both Dockerfile stages.")
    wheel: Path | None = Field(None, description="The mcp2026ai wheel the image installs; default: built now.")
    stores_secret: str | None = Field(
        None, description="Secret naming the shared stores the pods read; None: the registry is baked into the image."
    )
    storage_uri: str | None = Field(
        None,
        description="s3:// prefix the model is uploaded to as a Triton repository, for KServe's storageUri "
        "(with stores_secret); None: the KServe runtime reads the stores (or the baked registry).",
    )
    auth_secret: str | None = Field(None, description="Secret holding tokens.json: the server runs --auth.")
    trusted_keys: str | None = Field(
        None, description="configmap/NAME or secret/NAME holding trusted *.pub keys: the server runs --require-signed."
    )
    tls_secret: str | None = Field(None, description="kubernetes.io/tls Secret: the server serves HTTPS and gRPC TLS.")
    insecure: bool = Field(False, description="Render without --auth-secret (the server allows anonymous callers).")
    client_namespaces: list[str] = Field(
        default_factory=list, description="Namespaces whose pods the NetworkPolicy admits; default: the deployment's."
    )
    prometheus_namespace: str = Field("monitoring", description="Namespace of the Prometheus scraper admitted.")


class ReplicaPlan(BaseModel):
    """Replica counts for the Deployment and its HorizontalPodAutoscaler."""

    model_config = ConfigDict(frozen=True)

    min: int = Field(ge=1)
    max: int = Field(ge=1)
    autoscale: AutoscaleSpec | None = None
    source: str = Field(description="Where the counts came from, for the annotations.")


class Target(BaseModel):
    """Everything the renderers need, resolved once from the registry."""

    model_config = ConfigDict(frozen=True)

    model: str
    version: str
    app: str = Field(description="RFC 1123 name of the objects (model name, lower-cased, '.'/'_' -> '-').")
    namespace: str
    image: str
    contract: InferenceContract
    replicas: ReplicaPlan
    cpu: str = Field(description="CPU request and limit (Kubernetes quantity).")
    cpu_source: str
    memory: str = Field(description="Memory request and limit (Kubernetes quantity).")
    memory_source: str
    canary_percent: int | None = Field(None, description="KServe canaryTrafficPercent, when this is a canary.")
    stable_version: str | None = Field(None, description="The rollout's stable version, when this is a canary.")
    stores_secret: str | None = Field(None, description="Secret with the shared stores' settings (no baked registry).")
    storage_uri: str | None = Field(None, description="KServe storageUri: the model's Triton repository in S3.")
    storage_annotations: dict[str, str] = Field(
        default_factory=dict, description="KServe's serving.kserve.io/s3-* annotations (endpoint, https, region)."
    )
    security: DeploySecurity = Field(description="Tokens, signature checks, TLS and the NetworkPolicy's clients.")


def object_name(model: str) -> str:
    """An RFC 1123 label from a model name (``ocr_cls.v2`` -> ``ocr-cls-v2``)."""
    return re.sub(r"[^a-z0-9-]", "-", model.lower()).strip("-")[:63].rstrip("-") or "model"
