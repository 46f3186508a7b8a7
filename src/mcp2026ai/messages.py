"""One-line, person-readable messages for validation failures in YAML/JSON documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mcp2026ai.errors import ContractError, InvalidFieldError

Model = TypeVar("Model", bound=BaseModel)


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


def validated(model: type[Model], document: Any) -> Model:
    """``document`` as ``model``; InvalidFieldError naming the first bad field (a request's 400)."""
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "body"
        raise InvalidFieldError(f"{where}: {error['msg']}", where) from None


def yaml_location(exc: yaml.YAMLError) -> str:
    """``line L, column C: problem`` where PyYAML knows the position."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def read_yaml_file(path: Path, what: str) -> Any:
    """The parsed YAML (or JSON) document in ``path``; ContractError naming the file and ``what`` it
    should be when it is missing, unreadable or not YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ContractError(f"{path}: {what} file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{path}: cannot read {what} file ({exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not valid YAML ({yaml_location(exc)})") from None
