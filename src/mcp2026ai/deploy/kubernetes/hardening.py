"""Deployments that are safe as generated: bearer tokens, signature checks, optional TLS, a read-only
root filesystem and a NetworkPolicy (finding 1 of the security review).

The image's entrypoint carries the security flags (``--auth``, ``--require-signed``, ``--tls-*``), so
``docker run`` of the image fails closed without its mounts rather than serving an open API; the
manifests mount what they read:

- ``--auth-secret NAME``: a Secret whose ``tokens.json`` (``mcp token create`` writes it; it holds
  hashes only) is mounted at :data:`AUTH_DIR`; ``MCP_TOKENS_FILE`` points there.
- ``--trusted-keys configmap/NAME`` (or ``secret/NAME``): every ``*.pub`` in it is mounted at
  :data:`TRUSTED_DIR` (``MCP_TRUSTED_KEYS``) and the server runs ``--require-signed``.
- ``--tls-secret NAME``: a ``kubernetes.io/tls`` Secret at :data:`TLS_DIR`; probes use HTTPS.
- ``--insecure``: the only way to render without ``--auth-secret``; the server then runs
  ``--allow-unauthenticated`` and every rendered file says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import InvalidArgumentError

AUTH_DIR = "/etc/mcp/auth"
TOKENS_FILE = f"{AUTH_DIR}/tokens.json"
TRUSTED_DIR = "/etc/mcp/trusted"
TLS_DIR = "/etc/mcp/tls"
TMP_DIR = "/tmp"
SECRET_FILE_MODE = 0o440  # owner root, group fsGroup (the server's group): readable by the server only
INSECURE_NOTE = (
    "INSECURE: rendered with --insecure: no bearer tokens, any client that reaches the pods may load, unload "
    "or download models"
)
PROMETHEUS_LABELS = {"app.kubernetes.io/name": "prometheus"}


class TrustSource(BaseModel):
    """Where the trusted public keys come from: a ConfigMap (public keys are not secret) or a Secret."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["configmap", "secret"]
    name: str

    @classmethod
    def parse(cls, text: str) -> TrustSource:
        kind, _, name = text.partition("/") if "/" in text else ("configmap", "", text)
        if kind.lower() not in ("configmap", "secret") or not name:
            raise InvalidArgumentError(
                f"--trusted-keys: {text!r} is not configmap/NAME or secret/NAME (the ConfigMap or Secret holding *.pub)"
            )
        return cls(kind=kind.lower(), name=name)  # type: ignore[arg-type]

    def volume(self) -> dict[str, Any]:
        if self.kind == "configmap":
            return {"configMap": {"name": self.name, "defaultMode": SECRET_FILE_MODE}}
        return {"secret": {"secretName": self.name, "defaultMode": SECRET_FILE_MODE}}


class DeploySecurity(BaseModel):
    """How the rendered server is protected (resolved from the command's flags)."""

    model_config = ConfigDict(frozen=True)

    auth_secret: str | None = None
    trusted_keys: TrustSource | None = None
    tls_secret: str | None = None
    insecure: bool = False
    client_namespaces: list[str] = Field(default_factory=list)
    prometheus_namespace: str = "monitoring"

    @property
    def scheme(self) -> str:
        return "HTTPS" if self.tls_secret else "HTTP"


def check_security(security: DeploySecurity) -> None:
    """``--auth-secret`` or an explicit ``--insecure``, not both."""
    if security.insecure and security.auth_secret is not None:
        raise InvalidArgumentError("--insecure: conflicts with --auth-secret (an authenticated deployment)")
    if not security.insecure and security.auth_secret is None:
        raise InvalidArgumentError(
            "--auth-secret: needed (the Secret holding tokens.json from `mcp token create`); the server listens on "
            "0.0.0.0, so without tokens anyone in the cluster may load or download models: pass --insecure to "
            "render that anyway"
        )


def serve_flags(security: DeploySecurity) -> list[str]:
    """The ``mcp serve`` flags the entrypoint adds."""
    flags = ["--allow-unauthenticated"] if security.insecure else ["--auth"]
    if security.trusted_keys is not None:
        flags.append("--require-signed")
    if security.tls_secret is not None:
        flags += ["--tls-cert", f"{TLS_DIR}/tls.crt", "--tls-key", f"{TLS_DIR}/tls.key"]
    return flags


def image_env(security: DeploySecurity) -> dict[str, str]:
    """Where the mounted files are, for the image's ``ENV``."""
    env = {}
    if security.auth_secret is not None:
        env["MCP_TOKENS_FILE"] = TOKENS_FILE
    if security.trusted_keys is not None:
        env["MCP_TRUSTED_KEYS"] = TRUSTED_DIR
    return env


def secret_mounts(security: DeploySecurity) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) of the tokens, the trusted keys and the TLS pair; all read-only."""
    sources: list[tuple[str, str, dict[str, Any]]] = []
    if security.auth_secret is not None:
        sources.append(("auth", AUTH_DIR, {"secret": {"secretName": security.auth_secret, "defaultMode": 0o440}}))
    if security.trusted_keys is not None:
        sources.append(("trusted-keys", TRUSTED_DIR, security.trusted_keys.volume()))
    if security.tls_secret is not None:
        sources.append(("tls", TLS_DIR, {"secret": {"secretName": security.tls_secret, "defaultMode": 0o440}}))
    volumes = [{"name": name, **source} for name, _, source in sources]
    mounts = [{"name": name, "mountPath": path, "readOnly": True} for name, path, _ in sources]
    return volumes, mounts


def tmp_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """/tmp as an emptyDir: the root filesystem is read-only."""
    return {"name": "tmp", "emptyDir": {}}, {"name": "tmp", "mountPath": TMP_DIR}


def network_policy_ingress(
    security: DeploySecurity, namespace: str, ports: list[int], metrics_port: int
) -> list[dict[str, Any]]:
    """Clients (pods of the client namespaces, default: the deployment's own) on every port; the
    Prometheus scraper (pods labelled ``app.kubernetes.io/name: prometheus`` in its namespace) on the
    metrics port."""
    namespaces = security.client_namespaces or [namespace]
    clients = [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}, "podSelector": {}}
        for name in namespaces
    ]
    scraper = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": security.prometheus_namespace}},
        "podSelector": {"matchLabels": dict(PROMETHEUS_LABELS)},
    }
    return [
        {"from": clients, "ports": [{"protocol": "TCP", "port": port} for port in ports]},
        {"from": [scraper], "ports": [{"protocol": "TCP", "port": metrics_port}]},
    ]
