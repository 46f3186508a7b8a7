"""Writes the two KServe schema files next to it: written for this project from KServe's API reference
(the fields of serving.kserve.io/v1beta1 InferenceService and v1alpha1 ClusterServingRuntime that
`mcp deploy kubernetes` renders, with their types, enums and bounds), not copied from KServe's CRDs.

    python tests/data/kserve/make_schemas.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
STRINGS = {"type": "array", "items": {"type": "string"}}
QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
RESOURCES = {
    "type": "object",
    "properties": {
        "limits": {"type": "object", "additionalProperties": QUANTITY},
        "requests": {"type": "object", "additionalProperties": QUANTITY},
        "claims": {"type": "array", "items": PRESERVE},
    },
}
ENV = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "value": {"type": "string"}, "valueFrom": PRESERVE},
    },
}
PORTS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["containerPort"],
        "properties": {
            "containerPort": {"type": "integer", "format": "int32"},
            "name": {"type": "string"},
            "protocol": {"type": "string"},
            "hostPort": {"type": "integer", "format": "int32"},
        },
    },
}
SECURITY_CONTEXT = {
    "type": "object",
    "properties": {
        "allowPrivilegeEscalation": {"type": "boolean"},
        "privileged": {"type": "boolean"},
        "readOnlyRootFilesystem": {"type": "boolean"},
        "runAsNonRoot": {"type": "boolean"},
        "runAsUser": {"type": "integer", "format": "int64"},
        "runAsGroup": {"type": "integer", "format": "int64"},
        "capabilities": {"type": "object", "properties": {"add": STRINGS, "drop": STRINGS}},
        "seccompProfile": {
            "type": "object",
            "required": ["type"],
            "properties": {"type": {"type": "string"}, "localhostProfile": {"type": "string"}},
        },
    },
}
CONTAINER = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "image": {"type": "string"},
        "command": STRINGS,
        "args": STRINGS,
        "env": ENV,
        "ports": PORTS,
        "resources": RESOURCES,
        "securityContext": SECURITY_CONTEXT,
        "readinessProbe": PRESERVE,
        "livenessProbe": PRESERVE,
        "startupProbe": PRESERVE,
        "volumeMounts": {"type": "array", "items": PRESERVE},
        "workingDir": {"type": "string"},
    },
}
METADATA = {"type": "object"}


def _resource(spec: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": METADATA,
            "spec": {**spec, "required": required} if required else spec,
            "status": PRESERVE,
        },
    }


SERVING_RUNTIME = _resource(
    {
        "type": "object",
        "properties": {
            "annotations": STRING_MAP,
            "labels": STRING_MAP,
            "nodeSelector": STRING_MAP,
            "tolerations": {"type": "array", "items": PRESERVE},
            "affinity": PRESERVE,
            "multiModel": {"type": "boolean"},
            "disabled": {"type": "boolean"},
            "protocolVersions": {
                "type": "array",
                "items": {"type": "string", "enum": ["v1", "v2", "grpc-v1", "grpc-v2"]},
            },
            "supportedModelFormats": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "version": {"type": "string"},
                        "autoSelect": {"type": "boolean"},
                        "priority": {"type": "integer", "format": "int32", "minimum": 1},
                    },
                },
            },
            "containers": {"type": "array", "items": CONTAINER},
            "volumes": {"type": "array", "items": PRESERVE},
        },
    },
    ["containers"],
)

MODEL = {
    "type": "object",
    "required": ["modelFormat"],
    "properties": {
        "modelFormat": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "version": {"type": "string"}},
        },
        "runtime": {"type": "string"},
        "protocolVersion": {"type": "string", "enum": ["v1", "v2", "grpc-v1", "grpc-v2"]},
        "storageUri": {"type": "string"},
        "image": {"type": "string"},
        "args": STRINGS,
        "command": STRINGS,
        "env": ENV,
        "ports": PORTS,
        "resources": RESOURCES,
    },
}

INFERENCE_SERVICE = _resource(
    {
        "type": "object",
        "properties": {
            "predictor": {
                "type": "object",
                "properties": {
                    "model": MODEL,
                    "minReplicas": {"type": "integer", "minimum": 0},
                    "maxReplicas": {"type": "integer", "minimum": 0},
                    "canaryTrafficPercent": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 100},
                    "scaleMetric": {"type": "string", "enum": ["cpu", "memory", "concurrency", "rps"]},
                    "scaleTarget": {"type": "integer"},
                    "containerConcurrency": {"type": "integer", "format": "int64"},
                    "timeout": {"type": "integer", "format": "int64"},
                    "serviceAccountName": {"type": "string"},
                    "nodeSelector": STRING_MAP,
                    "tolerations": {"type": "array", "items": PRESERVE},
                    "annotations": STRING_MAP,
                    "labels": STRING_MAP,
                },
            },
            "transformer": PRESERVE,
            "explainer": PRESERVE,
        },
    },
    ["predictor"],
)


def main() -> None:
    files = {
        "inferenceservices": ("serving.kserve.io/v1beta1", INFERENCE_SERVICE),
        "clusterservingruntimes": ("serving.kserve.io/v1alpha1", SERVING_RUNTIME),
    }
    for name, (api_version, schema) in files.items():
        document = {"apiVersion": api_version, "openAPIV3Schema": schema}
        (HERE / f"{name}.schema.json").write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
