"""One-line, person-readable messages for validation failures in YAML/JSON documents."""

from __future__ import annotations

import yaml
from pydantic import ValidationError


def describe_validation_error(exc: ValidationError, source: str) -> str:
    """``source: field.path: message (got value); ...`` for every problem pydantic found."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "(document)"
        value = error.get("input")
        shown = "" if error["type"] == "missing" or isinstance(value, dict) else f" (got {value!r})"
        message = str(error["msg"]).removeprefix("Value error, ")
        problems.append(f"{field}: {message}{shown}")
    return f"{source}: " + "; ".join(problems)


def yaml_location(exc: yaml.YAMLError) -> str:
    """``line L, column C: problem`` where PyYAML knows the position."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
