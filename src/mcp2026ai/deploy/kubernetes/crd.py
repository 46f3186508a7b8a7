"""The seed's ``ModelService`` custom resource: its CustomResourceDefinition, whose ``spec.contract``
schema is the inference contract's JSON Schema made structural, and an example resource."""

from __future__ import annotations

from typing import Any

from mcp2026ai.contract import contract_json_schema
from mcp2026ai.deploy.kubernetes.options import Target
from mcp2026ai.deploy.kubernetes.structural import PRESERVE, Schema, structural_problems, structural_schema
from mcp2026ai.deploy.kubernetes.workloads import Manifest, labels

GROUP = "mcp2026ai.dev"
VERSION = "v1alpha1"
KIND = "ModelService"
PLURAL = "modelservices"
CRD_NAME = f"{PLURAL}.{GROUP}"
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


class NotStructuralError(ValueError):
    """The contract's schema did not convert into a structural one (a bug here, not the user's)."""


def spec_schema() -> Schema:
    contract = structural_schema(contract_json_schema())
    contract["description"] = "The model's inference contract (mcp contract schema)."
    return {
        "type": "object",
        "description": "A model served by mcp2026ai under its inference contract.",
        "required": ["model", "version", "image", "contract"],
        "properties": {
            "model": {"type": "string", "pattern": MODEL_NAME_PATTERN, "description": "Registered model name."},
            "version": {"type": "string", "minLength": 1, "description": "Model version (semver)."},
            "image": {"type": "string", "minLength": 1, "description": "Image serving the version."},
            "contract": contract,
            "canary": {
                "type": "object",
                "description": "A canary version, its image and the percent of traffic it receives.",
                "required": ["version", "image", "weight"],
                "properties": {
                    "version": {"type": "string", "minLength": 1},
                    "image": {"type": "string", "minLength": 1},
                    "weight": {"type": "integer", "minimum": 0, "maximum": 100},
                },
            },
        },
    }


def resource_schema() -> Schema:
    schema: Schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema(),
            "status": {"type": "object", PRESERVE: True, "description": "Written by a controller, if any."},
        },
    }
    problems = structural_problems(schema)
    if problems:
        raise NotStructuralError("ModelService schema is not structural: " + "; ".join(problems))
    return schema


def printer_columns() -> list[dict[str, Any]]:
    return [
        {"name": "Model", "type": "string", "jsonPath": ".spec.model"},
        {"name": "Version", "type": "string", "jsonPath": ".spec.version"},
        {"name": "SLA", "type": "string", "jsonPath": ".spec.contract.sla_class"},
        {"name": "P99-ms", "type": "number", "jsonPath": ".spec.contract.latency.p99_ms"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def model_service_crd() -> Manifest:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/managed-by": "mcp2026ai"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "modelservice",
                "shortNames": ["msvc"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": resource_schema()},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": printer_columns(),
                }
            ],
        },
    }


def example_model_service(target: Target) -> Manifest:
    """The deployed version; a rollout's canary is shown as ``canary`` beside its stable version."""
    spec: dict[str, Any] = {
        "model": target.model,
        "version": target.version,
        "image": target.image,
        "contract": target.contract.model_dump(mode="json", exclude_none=True),
    }
    if target.canary_percent is not None and target.stable_version is not None:
        stable_image = retagged(target.image, target.version, target.stable_version)
        spec.update(version=target.stable_version, image=stable_image)
        spec["canary"] = {"version": target.version, "image": target.image, "weight": target.canary_percent}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": target.app, "namespace": target.namespace, "labels": labels(target)},
        "spec": spec,
    }


def retagged(image: str, version: str, other: str) -> str:
    """``repo:1.1.0`` -> ``repo:1.0.0`` when the image is tagged with the version; else unchanged."""
    repository, _, tag = image.rpartition(":")
    return f"{repository}:{other}" if repository and tag == version else image
