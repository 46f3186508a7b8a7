"""Offline checks of rendered manifests: the Kubernetes 1.37 schemas (kubernetes-validate, strict),
KServe's CRD schemas (the subsets in tests/data/kserve) and a CRD's own openAPIV3Schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from tests.support import REPO_ROOT

KSERVE_SCHEMAS = REPO_ROOT / "tests" / "data" / "kserve"
PRESERVE = "x-kubernetes-preserve-unknown-fields"


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, dict), path
    return document


def validate_builtin(manifest: dict[str, Any]) -> None:
    """Raises kubernetes_validate.ValidationError; strict: an unknown field is an error."""
    kubernetes_validate.validate(manifest, "1.37", strict=True)


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Unknown fields fail wherever a schema lists its properties (kubectl --validate=strict)."""
    schema = copy.deepcopy(schema)
    _close(schema)
    return schema


def _close(node: dict[str, Any]) -> None:
    if "properties" in node and not node.get(PRESERVE) and "additionalProperties" not in node:
        node["additionalProperties"] = False
    for sub in node.get("properties", {}).values():
        _close(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _close(node[key])


def openapi_validator(schema: dict[str, Any]) -> jsonschema.Draft4Validator:
    """OpenAPI 3.0 (a CRD's dialect) bounds are draft 4's: boolean exclusiveMinimum."""
    return jsonschema.Draft4Validator(strict(schema))


def kserve_validator(manifest: dict[str, Any]) -> jsonschema.Draft4Validator:
    """The validator of KServe's CRD for the manifest's kind, checking its apiVersion first."""
    files = {"InferenceService": "inferenceservices", "ClusterServingRuntime": "clusterservingruntimes"}
    subset = json.loads((KSERVE_SCHEMAS / f"{files[manifest['kind']]}.schema.json").read_text())
    assert manifest["apiVersion"] == subset["apiVersion"]
    return openapi_validator(subset["openAPIV3Schema"])


def errors(validator: jsonschema.Draft4Validator, document: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def crd_schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema
