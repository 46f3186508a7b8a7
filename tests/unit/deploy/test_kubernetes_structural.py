"""Pydantic JSON Schema -> Kubernetes structural schema (the ModelService CRD's spec.contract)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from mcp2026ai.contract import InferenceContract, contract_json_schema
from mcp2026ai.deploy.kubernetes.structural import structural_problems, structural_schema
from tests.unit.deploy.k8s_checks import errors, openapi_validator


class Inner(BaseModel):
    size: int = Field(3, gt=0, le=10)


class Sample(BaseModel):
    kind: Literal["a"] = "a"
    inner: Inner | None = None
    anything: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    port: int | str = 80
    ratio: int | float = 1
    blob: int | list[int] = 0
    choices: list[Inner] = Field(default_factory=list)


def test_the_contract_schema_converts_to_a_structural_one() -> None:
    schema = structural_schema(contract_json_schema())
    assert structural_problems(schema) == []
    assert "$ref" not in str(schema) and "$defs" not in str(schema) and "anyOf" not in str(schema)
    p99 = schema["properties"]["latency"]["properties"]["p99_ms"]
    assert (p99["type"], p99["minimum"], p99["exclusiveMinimum"], p99["default"]) == ("number", 0, True, 100.0)
    assert schema["properties"]["resources"]["properties"]["memory_mb"]["nullable"] is True
    assert schema["properties"]["sla_class"]["enum"] == ["latency-critical", "throughput-guaranteed", "best-effort"]


def test_unions_open_mappings_and_constants() -> None:
    properties = structural_schema(Sample.model_json_schema())["properties"]
    assert properties["kind"]["enum"] == ["a"]
    assert properties["inner"]["type"] == "object" and properties["inner"]["nullable"] is True
    assert properties["inner"]["properties"]["size"]["exclusiveMinimum"] is True
    assert properties["anything"]["x-kubernetes-preserve-unknown-fields"] is True
    assert properties["labels"]["additionalProperties"] == {"type": "string"}
    assert properties["port"]["x-kubernetes-int-or-string"] is True
    assert properties["ratio"]["type"] == "number"
    assert properties["blob"]["x-kubernetes-preserve-unknown-fields"] is True
    assert properties["choices"]["items"]["properties"]["size"]["type"] == "integer"
    assert structural_problems(structural_schema(Sample.model_json_schema())) == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, ".a: $ref is not allowed"),
        ({"type": "object", "properties": {"a": {"description": "untyped"}}}, ".a: no type"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
         ".: properties and additionalProperties together"),
        ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, ".: uniqueItems must not be true"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, ".a: an array without items"),
        ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}, ".a: anyOf is not allowed"),
    ],
)  # fmt: skip
def test_non_structural_schemas_are_named(schema: dict[str, Any], problem: str) -> None:
    assert problem in structural_problems(schema)


GOOD = {"sla_class": "latency-critical", "latency": {"p99_ms": 50}, "resources": {"replicas": {"min": 1, "max": 3}}}
BAD = [
    {"latency": {"p99_ms": 0}},  # gt=0
    {"latency": {"p99_ms": -5}},
    {"sla_class": "fast"},
    {"accuracy": {"max_drift": 2}},
    {"precision": {"allowed": []}},
    {"batching": {"max_batch_size": 5000}},
    {"latency": {"p99": 50}},  # an unknown field (pydantic: extra=forbid; kubectl: strict validation)
    {"sequence": {"strategy": "newest", "state": []}},
]


def test_the_structural_schema_agrees_with_pydantic() -> None:
    validator = openapi_validator(structural_schema(contract_json_schema()))
    InferenceContract.model_validate(GOOD)
    assert errors(validator, GOOD) == []
    for document in BAD:
        with pytest.raises(ValidationError):
            InferenceContract.model_validate(document)
        assert errors(validator, document), document
