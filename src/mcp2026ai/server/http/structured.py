"""Structured-output request fields -> one :class:`Constraint` (the OpenAI routes and Triton's generate).

- OpenAI's ``response_format``: ``text``; ``json_object`` (any JSON object; with a ``schema`` key, as
  Together and Anyscale take it, that schema); ``json_schema`` with ``json_schema.schema``. The
  schema is enforced whether ``strict`` is true or not: constrained decoding is all or nothing here.
- vLLM's fields: ``guided_json``, ``guided_choice``, ``guided_regex``, ``guided_grammar`` at the top
  level (``extra_body``), and ``structured_outputs`` with ``json``, ``json_object``, ``regex``,
  ``choice`` or ``grammar``.

At most one constraint per request; anything malformed or unknown is an InvalidArgumentError naming
the field, never ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.types import Constraint, ConstraintKind

FIELDS = ("response_format", "guided_json", "guided_choice", "guided_regex", "guided_grammar", "structured_outputs")
"""The request fields that ask for a constraint."""

_STRUCTURED_KEYS = {
    "json": "guided_json",
    "choice": "guided_choice",
    "regex": "guided_regex",
    "grammar": "guided_grammar",
}


def constraint_of(fields: Mapping[str, Any], prefix: str = "") -> Constraint | None:
    """The one constraint that ``fields`` (a request's own, keys from :data:`FIELDS`) ask for, or None."""
    found = [
        constraint
        for name in FIELDS
        if fields.get(name) is not None
        for constraint in [_parse(name, fields[name], prefix + name)]
        if constraint is not None
    ]
    if len(found) > 1:
        raise InvalidArgumentError(f"ask for one structured output at a time (got {', '.join(c.param for c in found)})")
    return found[0] if found else None


def _parse(name: str, value: Any, param: str) -> Constraint | None:
    if name == "response_format":
        return _response_format(value, param)
    if name == "structured_outputs":
        return _structured_outputs(value, param)
    return _guided(name, value, param)


def _response_format(value: Any, param: str) -> Constraint | None:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{param} must be an object with a 'type'")
    kind = value.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        if value.get("schema") is not None:
            return json_schema(value["schema"], f"{param}.schema")
        return Constraint(ConstraintKind.JSON_OBJECT, "", param)
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, Mapping) or spec.get("schema") is None:
            raise InvalidArgumentError(f"{param}.json_schema.schema is required for type json_schema")
        if not isinstance(spec.get("strict", False), bool | None):
            raise InvalidArgumentError(f"{param}.json_schema.strict must be a boolean")
        return json_schema(spec["schema"], f"{param}.json_schema.schema")
    raise InvalidArgumentError(f"{param}.type must be text, json_object or json_schema (got {kind!r})")


def _structured_outputs(value: Any, param: str) -> Constraint | None:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{param} must be an object")
    unknown = sorted(set(value) - {*_STRUCTURED_KEYS, "json_object"})
    if unknown:
        raise InvalidArgumentError(
            f"{param}.{unknown[0]} is not supported (use json, json_object, regex, choice or grammar)"
        )
    found = [
        _guided(_STRUCTURED_KEYS[key], item, f"{param}.{key}")
        for key, item in value.items()
        if key in _STRUCTURED_KEYS and item is not None
    ]
    if value.get("json_object"):
        found.append(Constraint(ConstraintKind.JSON_OBJECT, "", f"{param}.json_object"))
    if len(found) > 1:
        raise InvalidArgumentError(f"{param} takes one of json, json_object, regex, choice or grammar")
    return found[0] if found else None


def _guided(name: str, value: Any, param: str) -> Constraint:
    if name == "guided_json":
        return json_schema(value, param)
    if name == "guided_choice":
        if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
            raise InvalidArgumentError(f"{param} must be a non-empty list of non-empty strings")
        return Constraint(ConstraintKind.CHOICE, json.dumps(value, ensure_ascii=False), param)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{param} must be a non-empty string")
    kind = ConstraintKind.REGEX if name == "guided_regex" else ConstraintKind.GRAMMAR
    return Constraint(kind, value, param)


def json_schema(schema: Any, param: str) -> Constraint:
    """A JSON-schema constraint: an object, or JSON text of one (as vLLM's ``guided_json`` takes it)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"{param} is not valid JSON ({exc})") from None
    if not isinstance(schema, Mapping):
        raise InvalidArgumentError(f"{param} must be a JSON schema object")
    return Constraint(ConstraintKind.JSON_SCHEMA, json.dumps(schema, separators=(",", ":")), param)
