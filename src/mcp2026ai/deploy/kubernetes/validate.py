"""``--validate``: built-in kinds against the Kubernetes 1.37 schemas (kubernetes-validate, strict:
unknown fields fail), the example ModelService against the rendered CRD's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp2026ai.deploy.kubernetes.crd import KIND
from mcp2026ai.deploy.kubernetes.render import load_manifest
from mcp2026ai.deploy.kubernetes.workloads import Manifest
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.extras import require

KUBERNETES_VERSION = "1.37"
CRD_FILE = "crd/modelservice-crd.yaml"
EXTERNAL_GROUPS = ("serving.kserve.io/",)
"""Kinds whose schema ships with their operator (KServe), not with Kubernetes: not checked here."""


def validate_rendered(out: Path, manifests: list[str]) -> list[str]:
    """One line per manifest; InvalidArgumentError naming the file, field and problem of an invalid one."""
    lines = []
    crd_schema = load_manifest(out / CRD_FILE)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for relative in manifests:
        manifest = load_manifest(out / relative)
        if manifest["apiVersion"].startswith(EXTERNAL_GROUPS):
            lines.append(f"not checked {relative}: {manifest['kind']} is KServe's (its CRD schema is not bundled)")
        elif manifest["kind"] == KIND:
            check_custom(relative, manifest, crd_schema)
            lines.append(f"valid {relative}: the rendered {KIND} CRD schema")
        else:
            check_builtin(relative, manifest)
            lines.append(f"valid {relative}: Kubernetes {KUBERNETES_VERSION} schema, strict")
    return lines


def check_builtin(relative: str, manifest: Manifest) -> None:
    kubernetes_validate = require("kubernetes_validate", "mcp deploy kubernetes --validate")
    try:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        raise InvalidArgumentError(f"{relative}: {_where(exc.absolute_path)}: {exc.message}") from None


def check_custom(relative: str, manifest: Manifest, schema: dict[str, Any]) -> None:
    jsonschema = require("jsonschema", "mcp deploy kubernetes --validate")
    # OpenAPI 3.0 (a CRD's dialect) bounds are JSON Schema draft 4's: boolean exclusiveMinimum
    error = jsonschema.exceptions.best_match(jsonschema.Draft4Validator(schema).iter_errors(manifest))
    if error is not None:
        raise InvalidArgumentError(f"{relative}: {_where(error.absolute_path)}: {error.message}")


def _where(path: Any) -> str:
    return ".".join(str(part) for part in path) or "(top level)"
