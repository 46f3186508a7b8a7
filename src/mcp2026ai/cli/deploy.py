"""``mcp deploy kubernetes``: render (and optionally apply) a registered model's Kubernetes assets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcp2026ai.cli import context
from mcp2026ai.cli.output import console
from mcp2026ai.deploy.kubernetes import KubernetesOptions, render
from mcp2026ai.deploy.kubernetes.apply import Flavour, apply
from mcp2026ai.deploy.kubernetes.validate import validate_rendered
from mcp2026ai.deploy.kubernetes.workloads import security_summary
from mcp2026ai.errors import InvalidArgumentError

app = typer.Typer(help="Deploy registered models beyond one machine.", no_args_is_help=True)


@app.command()
def kubernetes(
    name: Annotated[str, typer.Option(help="Registered model to deploy.")],
    out: Annotated[Path, typer.Option(help="Folder to write the Dockerfile, registry export and manifests to.")],
    version: Annotated[str | None, typer.Option(help="Version; default: the registry's default version.")] = None,
    replicas: Annotated[
        int | None, typer.Option(min=1, max=1024, help="Fixed replica count; default: the contract's range.")
    ] = None,
    namespace: Annotated[str, typer.Option(help="Namespace of the namespaced objects.")] = "default",
    image: Annotated[str | None, typer.Option(help="Image reference; default: mcp2026ai/<model>:<version>.")] = None,
    base_image: Annotated[str, typer.Option(help="Base image of both Dockerfile stages.")] = "python:3.11-slim",
    wheel: Annotated[Path | None, typer.Option(help="mcp2026ai wheel for the image; default: built now.")] = None,
    stores_secret: Annotated[
        str | None,
        typer.Option(
            help="Pods read the shared stores (MCP_CATALOG_URL, MCP_ARTIFACT_URL) whose settings this Secret holds, "
            "instead of a registry baked into the image."
        ),
    ] = None,
    storage_uri: Annotated[
        str | None,
        typer.Option(
            help="With --stores-secret: upload the model as a Triton repository under this s3:// prefix and give it "
            "to the KServe InferenceService as its storageUri (KServe downloads it into /mnt/models)."
        ),
    ] = None,
    auth_secret: Annotated[
        str | None,
        typer.Option(
            help="Secret whose tokens.json (from `mcp token create`) the pods read: the server runs --auth. "
            "Needed unless --insecure."
        ),
    ] = None,
    trusted_keys: Annotated[
        str | None,
        typer.Option(
            help="configmap/NAME or secret/NAME holding the trusted *.pub keys: the server runs --require-signed."
        ),
    ] = None,
    tls_secret: Annotated[
        str | None, typer.Option(help="kubernetes.io/tls Secret (tls.crt, tls.key): serve HTTPS and gRPC over TLS.")
    ] = None,
    insecure: Annotated[
        bool,
        typer.Option(help="Render without --auth-secret: anyone who reaches the pods may call every route."),
    ] = False,
    client_namespace: Annotated[
        list[str] | None,
        typer.Option(help="Namespace whose pods the NetworkPolicy admits; repeatable (default: --namespace)."),
    ] = None,
    prometheus_namespace: Annotated[
        str, typer.Option(help="Namespace of the Prometheus scraper the NetworkPolicy admits to /metrics.")
    ] = "monitoring",
    validate: Annotated[
        bool, typer.Option(help="Check the manifests against the Kubernetes 1.37 schemas (extra \\[kubernetes]).")
    ] = False,
    do_apply: Annotated[
        bool, typer.Option("--apply", help="kubectl apply the CRD, the workload and the example.")
    ] = False,
    flavour: Annotated[Flavour, typer.Option(help="What --apply applies: plain Kubernetes or KServe.")] = Flavour.PLAIN,
    kube_context: Annotated[str | None, typer.Option("--context", help="kubectl context for --apply.")] = None,
) -> None:
    """Render a Dockerfile, Deployment/Service/HPA/PDB, KServe runtime + InferenceService and the
    ModelService CRD for a registered model; --apply runs kubectl when a cluster is reachable."""
    if kube_context is not None and not do_apply:
        raise InvalidArgumentError("--context: only used with --apply")
    options = KubernetesOptions(
        name=name, version=version, replicas=replicas, namespace=namespace, out=out, image=image,
        base_image=base_image, wheel=wheel, stores_secret=stores_secret, storage_uri=storage_uri,
        auth_secret=auth_secret, trusted_keys=trusted_keys, tls_secret=tls_secret, insecure=insecure,
        client_namespaces=client_namespace or [], prometheus_namespace=prometheus_namespace,
    )  # fmt: skip
    rendered = render(context.registry(), options)
    target = rendered.target
    console.print(f"rendered {target.model}:{target.version} into {out} (image {target.image})", highlight=False)
    console.print(
        f"  replicas {target.replicas.min}-{target.replicas.max} ({target.replicas.source}); "
        f"cpu {target.cpu} ({target.cpu_source}); memory {target.memory} ({target.memory_source})",
        highlight=False,
    )
    console.print(f"  security: {security_summary(target)}", highlight=False)
    if target.stores_secret is not None:
        console.print(f"  registry: the shared stores, settings from Secret {target.stores_secret}", highlight=False)
    if target.storage_uri is not None:
        console.print(
            f"  KServe storageUri {target.storage_uri}: {len(rendered.uploaded)} files uploaded "
            f"(the Triton repository of {target.model})",
            highlight=False,
        )
    baked = ["registry/"] if target.stores_secret is None else []
    for relative in ["Dockerfile", f"dist/{rendered.wheel}", *baked, *rendered.manifests]:
        console.print(f"  {relative}", highlight=False)
    if rendered.decrypted:
        console.print(
            f"  note: {target.model}:{target.version} is encrypted at rest here; registry/ (and the image) "
            "holds it in plaintext: keep the image in a private registry",
            highlight=False,
        )
    if validate:
        for line in validate_rendered(out, rendered.manifests):
            console.print(f"  {line}", highlight=False)
    if do_apply:
        for line in apply(out, flavour, kube_context):
            console.print(line, highlight=False)
