"""Write everything ``mcp deploy kubernetes`` renders into the output folder.

DIR/Dockerfile, DIR/.dockerignore, DIR/dist/mcp2026ai-*.whl, DIR/registry/   the image's build context
DIR/kubernetes/{deployment,service,hpa,pdb,networkpolicy}.yaml           plain Kubernetes
DIR/kserve/{servingruntime,inferenceservice}.yaml                        KServe flavour
DIR/kserve/serviceaccount.yaml                                           with --storage-uri: S3 access for KServe
DIR/crd/{modelservice-crd,modelservice}.yaml                             the ModelService CRD + example
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from mcp2026ai.deploy.kubernetes import crd, kserve, workloads
from mcp2026ai.deploy.kubernetes.dockerfile import WHEELS_DIR, dockerignore, render_dockerfile
from mcp2026ai.deploy.kubernetes.export import export_version
from mcp2026ai.deploy.kubernetes.hardening import INSECURE_NOTE
from mcp2026ai.deploy.kubernetes.options import KubernetesOptions, Target
from mcp2026ai.deploy.kubernetes.storage_uri import service_account, upload_repository
from mcp2026ai.deploy.kubernetes.target import resolve_target
from mcp2026ai.deploy.kubernetes.wheel import provide_wheel
from mcp2026ai.deploy.kubernetes.workloads import Manifest
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.artifacts.s3_client import S3Location

MANIFESTS: dict[str, Callable[[Target], Manifest]] = {
    "kubernetes/deployment.yaml": workloads.deployment,
    "kubernetes/service.yaml": workloads.service,
    "kubernetes/hpa.yaml": workloads.autoscaler,
    "kubernetes/pdb.yaml": workloads.disruption_budget,
    "kubernetes/networkpolicy.yaml": workloads.network_policy,
    "kserve/servingruntime.yaml": kserve.serving_runtime,
    "kserve/inferenceservice.yaml": kserve.inference_service,
    "crd/modelservice-crd.yaml": lambda _: crd.model_service_crd(),
    "crd/modelservice.yaml": crd.example_model_service,
}


SERVICE_ACCOUNT = "kserve/serviceaccount.yaml"


class Rendered(BaseModel):
    """What was written: the resolved target, the folder, each manifest's relative path."""

    model_config = ConfigDict(frozen=True)

    target: Target
    out: Path
    manifests: list[str]
    wheel: str
    uploaded: list[str] = []
    """With --storage-uri: the keys of the Triton repository uploaded for KServe's storage initializer."""
    decrypted: bool = False
    """The version is encrypted at rest here; the export (so the image) holds it in plaintext."""


def render(registry: ModelRegistry, options: KubernetesOptions) -> Rendered:
    record, target = resolve_target(registry, options)
    out = options.out
    if out.exists() and not out.is_dir():
        raise InvalidArgumentError(f"--out: {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    wheel = provide_wheel(options.wheel, out / WHEELS_DIR)
    baked = target.stores_secret is None
    if baked:
        export_version(registry, record, out)
    (out / "Dockerfile").write_text(render_dockerfile(target, options.base_image, wheel), encoding="utf-8")
    (out / ".dockerignore").write_text(dockerignore(with_export=baked), encoding="utf-8")
    uploaded = []
    manifests = dict(MANIFESTS)
    if target.storage_uri is not None:
        uploaded = upload_repository(registry, record.name, S3Location.parse(target.storage_uri))
        manifests[SERVICE_ACCOUNT] = service_account
    header = f"# {target.model}:{target.version}, rendered by `mcp deploy kubernetes`\n"
    if target.security.insecure:
        header += f"# {INSECURE_NOTE}\n"
    for relative, build in manifests.items():
        write_manifest(out / relative, build(target), header)
    decrypted = baked and registry.store.is_encrypted(record.digest)
    return Rendered(
        target=target, out=out, manifests=list(manifests), wheel=wheel, decrypted=decrypted, uploaded=uploaded
    )


def write_manifest(path: Path, manifest: Manifest, header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + yaml.safe_dump(manifest, sort_keys=False, width=120), encoding="utf-8")


def load_manifest(path: Path) -> Manifest:
    """A rendered manifest read back (tests and ``--apply`` use it)."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise InvalidArgumentError(f"{path}: not a Kubernetes object")
    return document
