"""Pydantic JSON Schema -> a Kubernetes structural schema (an apiextensions.k8s.io/v1 openAPIV3Schema).

Kubernetes accepts a CustomResourceDefinition's schema only if it is structural: no ``$ref`` or
``definitions``, a ``type`` on every node (or ``x-kubernetes-int-or-string`` /
``x-kubernetes-preserve-unknown-fields``), ``properties`` and ``additionalProperties`` never
together, no ``uniqueItems: true``, and OpenAPI 3.0's boolean ``exclusiveMinimum``. The conversion
resolves references, folds ``X | None`` into ``nullable``, and keeps open mappings with
``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
COPIED = ("description", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
          "minProperties", "maxProperties", "multipleOf", "required")  # fmt: skip
FORMATS = {"int32", "int64", "float", "double", "byte", "binary", "date", "date-time", "duration", "uri", "email",
           "hostname", "ipv4", "ipv6", "uuid", "password"}  # fmt: skip
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"


def structural_schema(schema: Schema) -> Schema:
    """The structural equivalent of a pydantic ``model_json_schema()``."""
    return _convert(schema, schema.get("$defs", {}))


def _convert(node: Schema, defs: dict[str, Schema]) -> Schema:
    if "$ref" in node:
        resolved = _convert(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**resolved, **_convert_plain(siblings, defs, typed=False)}
    if "allOf" in node and len(node["allOf"]) == 1:
        return _convert({**node["allOf"][0], **{k: v for k, v in node.items() if k != "allOf"}}, defs)
    if "anyOf" in node or isinstance(node.get("type"), list):
        return _union(node, defs)
    return _convert_plain(node, defs)


def _convert_plain(node: Schema, defs: dict[str, Schema], typed: bool = True) -> Schema:
    out: Schema = {key: node[key] for key in COPIED if key in node}
    if "type" in node:
        out["type"] = node["type"]
    if "const" in node:
        out["enum"] = [node["const"]]
    if node.get("format") in FORMATS:
        out["format"] = node["format"]
    if node.get("default") is not None:
        out["default"] = node["default"]
    for bound, inclusive in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), int | float) and not isinstance(node[bound], bool):
            out[inclusive], out[bound] = node[bound], True  # JSON Schema 2020 number -> OpenAPI 3.0 boolean
    if "properties" in node:
        out["properties"] = {name: _convert(sub, defs) for name, sub in node["properties"].items()}
    if "items" in node:
        out["items"] = _convert(node["items"], defs)
    _open_mapping(node, out, defs)
    return _typed(out) if typed else out


def _open_mapping(node: Schema, out: Schema, defs: dict[str, Schema]) -> None:
    """``dict[str, X]`` keeps ``additionalProperties: X``; ``dict[str, Any]`` keeps unknown fields."""
    extra = node.get("additionalProperties")
    if "properties" in node or extra is False:
        return
    if isinstance(extra, dict) and extra:
        out["additionalProperties"] = _convert(extra, defs)
    elif node.get("type") == "object":
        out[PRESERVE] = True


def _union(node: Schema, defs: dict[str, Schema]) -> Schema:
    options = node.get("anyOf") or [{"type": kind} for kind in node["type"]]
    present = [option for option in options if option.get("type") != "null"]
    rest = {k: v for k, v in node.items() if k not in ("anyOf", "type")}
    if len(present) == 1:
        out = {**_convert(present[0], defs), **_convert_plain(rest, defs, typed=False)}
    else:
        kinds = {option.get("type") for option in present}
        if kinds <= {"integer", "string"}:
            out = {INT_OR_STRING: True, **_convert_plain(rest, defs, typed=False)}
        elif kinds <= {"integer", "number"}:
            out = {"type": "number", **_convert_plain(rest, defs, typed=False)}
        else:
            out = {PRESERVE: True, **_convert_plain(rest, defs, typed=False)}
    if len(present) < len(options):
        out["nullable"] = True
    return out


def _typed(out: Schema) -> Schema:
    if "type" in out or out.get(INT_OR_STRING) or out.get(PRESERVE):
        return out
    if "properties" in out:
        return {"type": "object", **out}
    return {**out, PRESERVE: True}


def structural_problems(schema: Schema, path: str = "") -> list[str]:
    """Why ``schema`` is not structural (empty: it is), each problem with its JSON path."""
    here = path or "."
    problems = [
        f"{here}: {key} is not allowed" for key in ("$ref", "$defs", "definitions", "anyOf", "oneOf") if key in schema
    ]
    if "type" not in schema and not schema.get(INT_OR_STRING) and not schema.get(PRESERVE):
        problems.append(f"{here}: no type")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{here}: properties and additionalProperties together")
    if schema.get("uniqueItems") is True:
        problems.append(f"{here}: uniqueItems must not be true")
    if schema.get("type") == "array" and "items" not in schema:
        problems.append(f"{here}: an array without items")
    for name, sub in schema.get("properties", {}).items():
        problems += structural_problems(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            problems += structural_problems(schema[key], f"{path}[{key}]")
    return problems
