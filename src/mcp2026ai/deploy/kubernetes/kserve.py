"""The KServe flavour: a ClusterServingRuntime running ``mcp serve`` (v2 REST and gRPC, ONNX) from
the rendered image, and an InferenceService whose predictor uses it.

The image carries the registry export, so the InferenceService has no ``storageUri``; each version
gets its own runtime (its image tag), and a version that is its rollout's canary is rendered with
``canaryTrafficPercent`` = the rollout's weight: KServe sends that share to the new revision and the
rest to the previous one (serverless mode). With ``--stores-secret`` the runtime reads the shared
stores instead (:mod:`mcp2026ai.deploy.kubernetes.stores`); with ``--storage-uri`` as well, the
InferenceService names the model's Triton repository in S3 (``storageUri``) and the runtime serves
what KServe's storage initializer downloaded (:mod:`mcp2026ai.deploy.kubernetes.storage_uri`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from mcp2026ai.deploy.kubernetes import stores
from mcp2026ai.deploy.kubernetes.dockerfile import DRAIN_TIMEOUT_S, MCP_HOME, SCRATCH_HOME, serve_command
from mcp2026ai.deploy.kubernetes.hardening import secret_mounts, serve_flags
from mcp2026ai.deploy.kubernetes.options import KSERVE_GRPC_PORT, KSERVE_HTTP_PORT, Target
from mcp2026ai.deploy.kubernetes.storage_uri import repository_command, service_account_name
from mcp2026ai.deploy.kubernetes.workloads import (
    Manifest,
    container_mounts,
    container_security,
    labels,
    pod_volumes,
    resources,
)

MODEL_FORMAT = {"name": "onnx", "version": "1"}
PROTOCOLS = ["v2", "grpc-v2"]


def runtime_name(target: Target) -> str:
    """``mcp2026ai-<app>-<version>`` with the version's dots and '+' as dashes (RFC 1123)."""
    version = re.sub(r"[^a-z0-9-]", "-", target.version.lower())
    return f"mcp2026ai-{target.app}-{version}"[:63].rstrip("-")


def runtime_command(target: Target) -> list[str]:
    """``mcp serve`` with the security flags; with the baked registry, behind a copy of the export into
    the scratch MCP_HOME (a ServingRuntime has no init containers; the root filesystem is read-only)."""
    if target.storage_uri is not None:
        return [*repository_command(KSERVE_HTTP_PORT, KSERVE_GRPC_PORT, DRAIN_TIMEOUT_S), *serve_flags(target.security)]
    command = serve_command(target, KSERVE_HTTP_PORT, KSERVE_GRPC_PORT)
    if target.stores_secret is not None:
        return command
    return ["/bin/sh", "-c", f'cp -R {MCP_HOME}/. {SCRATCH_HOME}/ && exec "$@"', "mcp-serve", *command]


def serving_runtime(target: Target) -> Manifest:
    command = runtime_command(target)
    container: dict[str, Any] = {
        "name": "kserve-container",
        "image": target.image,
        "command": command[:2],
        "args": command[2:],
        "resources": resources(target),
        "securityContext": container_security(),
    }
    if target.stores_secret is not None and target.storage_uri is None:
        container = stores.shared_container(container, target.stores_secret, SCRATCH_HOME)
    elif target.stores_secret is None:
        container["env"] = [{"name": "MCP_HOME", "value": SCRATCH_HOME}]
    container["volumeMounts"] = container_mounts() + secret_mounts(target.security)[1]
    return {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": runtime_name(target), "labels": labels(target)},
        "spec": {
            "annotations": {
                "prometheus.kserve.io/port": str(KSERVE_HTTP_PORT),
                "prometheus.kserve.io/path": "/metrics",
            },
            "supportedModelFormats": [{**MODEL_FORMAT, "autoSelect": False}],
            "protocolVersions": list(PROTOCOLS),
            "containers": [container],
            **pod_volumes(target),
        },
    }


def predictor(target: Target) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minReplicas": target.replicas.min,
        "maxReplicas": target.replicas.max,
        "model": {
            "modelFormat": dict(MODEL_FORMAT),
            "runtime": runtime_name(target),
            "protocolVersion": "v2",
            "resources": resources(target),
        },
    }
    if target.storage_uri is not None:
        spec["model"]["storageUri"] = target.storage_uri
        spec["serviceAccountName"] = service_account_name(target.app)
    scale = target.replicas.autoscale
    if scale is not None:  # Knative's concurrency target: in-flight requests per pod
        spec["scaleMetric"] = "concurrency"
        spec["scaleTarget"] = max(1, math.ceil(scale.target_ongoing_requests))
    if target.canary_percent is not None:
        spec["canaryTrafficPercent"] = target.canary_percent
    return spec


def inference_service(target: Target) -> Manifest:
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": target.app,
            "namespace": target.namespace,
            "labels": labels(target),
            "annotations": {"mcp2026ai.dev/model": f"{target.model}:{target.version}"},
        },
        "spec": {"predictor": predictor(target)},
    }
