"""The plain Kubernetes objects: Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget."""

from __future__ import annotations

from typing import Any

from mcp2026ai.deploy.kubernetes import stores
from mcp2026ai.deploy.kubernetes.dockerfile import DRAIN_TIMEOUT_S, MCP_HOME, SCRATCH_HOME, UID
from mcp2026ai.deploy.kubernetes.hardening import INSECURE_NOTE, network_policy_ingress, secret_mounts, tmp_volume
from mcp2026ai.deploy.kubernetes.options import GRPC_PORT, HTTP_PORT, Target

Manifest = dict[str, Any]
READY_PATH = "/v2/health/ready"
LIVE_PATH = "/v2/health/live"
CPU_TARGET_PERCENT = 70
IN_FLIGHT_METRIC = "mcp_requests_in_flight"
STARTUP_BUDGET_S = 180
"""How long a pod may take to measure its plan and load the model before it is restarted."""


def labels(target: Target) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": target.app,
        "app.kubernetes.io/instance": target.app,
        "app.kubernetes.io/version": target.version,
        "app.kubernetes.io/component": "inference",
        "app.kubernetes.io/managed-by": "mcp2026ai",
    }


def selector(target: Target) -> dict[str, str]:
    return {"app.kubernetes.io/name": target.app, "app.kubernetes.io/instance": target.app}


def metadata(target: Target, name: str | None = None) -> dict[str, Any]:
    return {"name": name or target.app, "namespace": target.namespace, "labels": labels(target)}


def resources(target: Target) -> dict[str, Any]:
    """Requests equal to limits (Guaranteed QoS): CPU from the plan's threads, memory from the budget."""
    amounts = {"cpu": target.cpu, "memory": target.memory}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def container_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": UID,
        "runAsGroup": UID,
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def probe(path: str, period_s: int, failures: int, port: str | int = "http", scheme: str = "HTTP") -> dict[str, Any]:
    get: dict[str, Any] = {"path": path, "port": port}
    if scheme != "HTTP":
        get["scheme"] = scheme
    return {
        "httpGet": get,
        "periodSeconds": period_s,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }


def server_container(target: Target) -> dict[str, Any]:
    """The image's own entrypoint runs (``mcp serve`` on 8000/8001); probes hit the v2 health routes.
    The root filesystem is read-only: MCP_HOME is the scratch ``emptyDir`` (the baked registry is
    copied there by the ``registry`` init container), /tmp another one, the secrets read-only mounts."""
    scheme = target.security.scheme
    container: dict[str, Any] = {
        "name": "server",
        "image": target.image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [
            {"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"},
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
        ],
        "startupProbe": probe(READY_PATH, 2, STARTUP_BUDGET_S // 2, scheme=scheme),
        "readinessProbe": probe(READY_PATH, 5, 2, scheme=scheme),
        "livenessProbe": probe(LIVE_PATH, 10, 3, scheme=scheme),
        "resources": resources(target),
        "securityContext": container_security(),
    }
    if target.stores_secret is None:
        container["env"] = [{"name": "MCP_HOME", "value": SCRATCH_HOME}]
    else:
        container = stores.shared_container(container, target.stores_secret, SCRATCH_HOME)
    container["volumeMounts"] = container_mounts() + secret_mounts(target.security)[1]
    return container


def container_mounts() -> list[dict[str, Any]]:
    """The scratch MCP_HOME and /tmp: the only writable places."""
    return [stores.scratch_mount(SCRATCH_HOME), tmp_volume()[1]]


def registry_copy(target: Target) -> dict[str, Any]:
    """The init container that copies the image's registry export into the scratch MCP_HOME (the
    server's catalog is written to: plans, the audit log, SQLite's journal)."""
    return {
        "name": "registry",
        "image": target.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["cp", "-R", f"{MCP_HOME}/.", f"{SCRATCH_HOME}/"],
        "resources": resources(target),
        "securityContext": container_security(),
        "volumeMounts": [stores.scratch_mount(SCRATCH_HOME)],
    }


def pod_volumes(target: Target) -> dict[str, Any]:
    """The scratch ``emptyDir`` (MCP_HOME), /tmp, and the tokens, trusted keys and TLS pair."""
    return {"volumes": [stores.scratch_volume(), tmp_volume()[0], *secret_mounts(target.security)[0]]}


def provenance(target: Target) -> dict[str, str]:
    """Where each sizing figure came from (annotations on the Deployment)."""
    registry = f"shared stores (Secret {target.stores_secret})" if target.stores_secret else "baked into the image"
    return {
        "mcp2026ai.dev/registry": registry,
        "mcp2026ai.dev/model": f"{target.model}:{target.version}",
        "mcp2026ai.dev/cpu-from": target.cpu_source,
        "mcp2026ai.dev/memory-from": target.memory_source,
        "mcp2026ai.dev/replicas-from": target.replicas.source,
        "mcp2026ai.dev/security": security_summary(target),
    }


def security_summary(target: Target) -> str:
    """One line for the Deployment's annotations: what protects the API (or that nothing does)."""
    security = target.security
    if security.insecure:
        return INSECURE_NOTE
    parts = [f"--auth (tokens from Secret {security.auth_secret})"]
    if security.trusted_keys is not None:
        parts.append(f"--require-signed (keys from {security.trusted_keys.kind} {security.trusted_keys.name})")
    if security.tls_secret is not None:
        parts.append(f"TLS (Secret {security.tls_secret})")
    return "; ".join(parts)


def deployment(target: Target) -> Manifest:
    pod_annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(HTTP_PORT),
        "prometheus.io/path": "/metrics",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**metadata(target), "annotations": provenance(target)},
        "spec": {
            "replicas": target.replicas.min,
            "selector": {"matchLabels": selector(target)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": labels(target), "annotations": pod_annotations},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": {"runAsNonRoot": True, "fsGroup": UID},
                    "terminationGracePeriodSeconds": DRAIN_TIMEOUT_S + 10,
                    **({"initContainers": [registry_copy(target)]} if target.stores_secret is None else {}),
                    "containers": [server_container(target)],
                    **pod_volumes(target),
                },
            },
        },
    }


def network_policy(target: Target) -> Manifest:
    """Ingress to the pods from the clients' namespaces (every port) and the Prometheus scraper
    (the metrics port) only; everything else in the cluster is refused."""
    ingress = network_policy_ingress(target.security, target.namespace, [HTTP_PORT, GRPC_PORT], HTTP_PORT)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(target),
        "spec": {"podSelector": {"matchLabels": selector(target)}, "policyTypes": ["Ingress"], "ingress": ingress},
    }


def service(target: Target) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(target),
        "spec": {
            "type": "ClusterIP",
            "selector": selector(target),
            "ports": [
                {"name": "http", "port": HTTP_PORT, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"},
                {
                    "name": "grpc",
                    "port": GRPC_PORT,
                    "targetPort": "grpc",
                    "protocol": "TCP",
                    "appProtocol": "kubernetes.io/h2c",
                },
            ],
        },
    }


def quantity(value: float) -> str:
    """A Kubernetes quantity: ``2`` for 2.0, ``1500m`` for 1.5."""
    return str(int(value)) if float(value).is_integer() else f"{round(value * 1000)}m"


def hpa_metrics(target: Target) -> list[dict[str, Any]]:
    """CPU utilisation always; the contract's in-flight target per pod when it asks for autoscaling
    (a Pods metric: needs a metrics adapter such as prometheus-adapter serving ``mcp_requests_in_flight``)."""
    metrics: list[dict[str, Any]] = [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                     "averageUtilization": CPU_TARGET_PERCENT}}},
    ]  # fmt: skip
    scale = target.replicas.autoscale
    if scale is not None:
        metrics.append(
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": IN_FLIGHT_METRIC},
                    "target": {"type": "AverageValue", "averageValue": quantity(scale.target_ongoing_requests)},
                },
            }
        )
    return metrics


def hpa_behavior(target: Target) -> dict[str, Any] | None:
    scale = target.replicas.autoscale
    if scale is None:
        return None
    return {
        "scaleUp": {"stabilizationWindowSeconds": round(scale.upscale_delay_s)},
        "scaleDown": {"stabilizationWindowSeconds": round(scale.downscale_delay_s)},
    }


def autoscaler(target: Target) -> Manifest:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target.app},
        "minReplicas": target.replicas.min,
        "maxReplicas": target.replicas.max,
        "metrics": hpa_metrics(target),
    }
    behavior = hpa_behavior(target)
    if behavior is not None:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": metadata(target),
            "spec": spec}  # fmt: skip


def disruption_budget(target: Target) -> Manifest:
    """At most one pod down at a time for voluntary disruptions (node drains, upgrades)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(target),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(target)}},
    }
