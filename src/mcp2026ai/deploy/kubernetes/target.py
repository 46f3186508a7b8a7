"""Resolve a deploy request against the registry: the version, its contract, replicas, CPU, memory
and the canary share, each with where it came from."""

from __future__ import annotations

import math
import os
from typing import Any

from mcp2026ai.contract import InferenceContract
from mcp2026ai.deploy.kubernetes.hardening import DeploySecurity, TrustSource, check_security
from mcp2026ai.deploy.kubernetes.options import (
    RFC1123_LABEL,
    SERVER_BASELINE_MB,
    KubernetesOptions,
    ReplicaPlan,
    Target,
    object_name,
)
from mcp2026ai.deploy.kubernetes.storage_uri import check_storage_uri, storage_annotations
from mcp2026ai.deploy.kubernetes.stores import DNS_SUBDOMAIN, check_serves_default, check_shared_stores
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.policy.trace import DecisionLog
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.routing.store import RolloutStore

DEFAULT_MODEL_MB = 512


def resolve_target(registry: ModelRegistry, options: KubernetesOptions) -> tuple[ModelVersion, Target]:
    if options.storage_uri is not None:
        check_storage_uri(options.storage_uri, options.stores_secret)
    if options.stores_secret is not None:
        check_shared_stores(options.stores_secret)
    record = registry.resolve(options.name, options.version)
    if is_llm_format(record.format):
        raise InvalidArgumentError(
            f"{record.ref} is a language model: mcp deploy kubernetes renders tensor (ONNX) models only"
        )
    if not RFC1123_LABEL.match(options.namespace):
        raise InvalidArgumentError(f"--namespace: {options.namespace!r} is not a valid namespace name (RFC 1123)")
    if options.stores_secret is not None:
        check_serves_default(registry, record, asked_version=options.version is not None)
    security = deploy_security(options)
    contract = record.contract or InferenceContract()
    cpu, cpu_source = cpu_for(registry, record)
    memory, memory_source = memory_for(contract)
    app = object_name(record.name)
    target = Target(
        model=record.name,
        version=record.version,
        app=app,
        namespace=options.namespace,
        image=options.image or f"mcp2026ai/{app}:{record.version}",
        contract=contract,
        replicas=replica_plan(contract, options.replicas),
        cpu=cpu,
        cpu_source=cpu_source,
        memory=memory,
        memory_source=memory_source,
        stores_secret=options.stores_secret,
        security=security,
        **storage(options),
        **({} if options.stores_secret else canary(registry, record)),
    )
    return record, target


def deploy_security(options: KubernetesOptions) -> DeploySecurity:
    """The security flags, checked: tokens or an explicit --insecure, valid object names."""
    for flag, name in (("--auth-secret", options.auth_secret), ("--tls-secret", options.tls_secret)):
        if name is not None and (len(name) > 253 or not DNS_SUBDOMAIN.match(name)):
            raise InvalidArgumentError(f"{flag}: {name!r} is not a valid Secret name (RFC 1123 subdomain)")
    trust = TrustSource.parse(options.trusted_keys) if options.trusted_keys is not None else None
    if trust is not None and not DNS_SUBDOMAIN.match(trust.name):
        raise InvalidArgumentError(f"--trusted-keys: {trust.name!r} is not a valid {trust.kind} name (RFC 1123)")
    if trust is not None and options.storage_uri is not None:
        raise InvalidArgumentError(
            "--trusted-keys: a --storage-uri runtime serves a Triton repository, which carries no signatures; "
            "drop --storage-uri to serve signed versions from the stores"
        )
    named = [("--client-namespace", name) for name in options.client_namespaces]
    for flag, namespace in [*named, ("--prometheus-namespace", options.prometheus_namespace)]:
        if not RFC1123_LABEL.match(namespace):
            raise InvalidArgumentError(f"{flag}: {namespace!r} is not a valid namespace name (RFC 1123)")
    security = DeploySecurity(
        auth_secret=options.auth_secret,
        trusted_keys=trust,
        tls_secret=options.tls_secret,
        insecure=options.insecure,
        client_namespaces=options.client_namespaces,
        prometheus_namespace=options.prometheus_namespace,
    )
    check_security(security)
    return security


def storage(options: KubernetesOptions) -> dict[str, Any]:
    """KServe's storageUri (normalised) and S3 annotations, when asked for."""
    if options.storage_uri is None:
        return {}
    location = check_storage_uri(options.storage_uri, options.stores_secret)
    return {"storage_uri": location.url, "storage_annotations": storage_annotations(os.environ)}


def replica_plan(contract: InferenceContract, fixed: int | None) -> ReplicaPlan:
    """``--replicas`` fixes the count; else the contract's range (an HPA needs at least one replica)."""
    if fixed is not None:
        return ReplicaPlan(min=fixed, max=fixed, source="--replicas")
    stated = contract.resources.replica_range()
    autoscale = contract.resources.autoscale
    if stated is None:
        return ReplicaPlan(min=1, max=1, autoscale=autoscale, source="default: the contract states no replicas")
    source = "contract resources.replicas" if contract.resources.replicas else "contract resources.min_replicas"
    if stated.min == 0:
        source += "; min 0 raised to 1, a HorizontalPodAutoscaler keeps at least one"
    return ReplicaPlan(min=max(1, stated.min), max=stated.max, autoscale=autoscale, source=source)


def cpu_for(registry: ModelRegistry, record: ModelVersion) -> tuple[str, str]:
    """CPUs from the threads of the plan the policy stored for this version (one when there is none)."""
    stored = DecisionLog(registry.catalog).current_plan(record.name, record.version)
    if stored is None:
        return "1", "default: no stored plan; `mcp policy plan` measures one"
    threads = stored.plan.intra_op_threads
    if threads == 0:
        return "1", "stored plan intra_op_threads=auto"
    return str(threads), f"stored plan intra_op_threads={threads}"


def memory_for(contract: InferenceContract) -> tuple[str, str]:
    """The server's own footprint plus the contract's model memory budget, in MiB."""
    budget = contract.resources.memory_mb
    if budget is None:
        return f"{SERVER_BASELINE_MB + DEFAULT_MODEL_MB}Mi", (
            f"server {SERVER_BASELINE_MB} MiB + default {DEFAULT_MODEL_MB} MiB: no resources.memory_mb"
        )
    return f"{SERVER_BASELINE_MB + math.ceil(budget)}Mi", (
        f"server {SERVER_BASELINE_MB} MiB + contract resources.memory_mb {budget:g}"
    )


def canary(registry: ModelRegistry, record: ModelVersion) -> dict[str, Any]:
    """The rollout's canary weight and stable version when the deployed version is that rollout's canary."""
    rollout = RolloutStore(registry).get(record.name)
    if rollout is None or rollout.canary != record.version or rollout.weight == 0:
        return {}
    stable = rollout.stable or registry.resolve(record.name).version
    return {"canary_percent": rollout.weight, "stable_version": stable}
