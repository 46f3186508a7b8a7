"""A batch input file (JSONL, one request a line) checked whole before a batch is created: each error
is an OpenAI-shaped 400 naming the line (``line 3: ...``, ``param: line 3``)."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp2026ai.errors import InvalidFieldError

ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings")
MAX_LINES = 50_000
"""Requests one batch may hold (OpenAI's limit)."""


class BatchLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    custom_id: str = Field(min_length=1, max_length=512)
    method: Literal["POST"]
    url: str
    body: dict[str, Any]


def line_error(number: int, message: str) -> InvalidFieldError:
    return InvalidFieldError(f"line {number}: {message}", f"line {number}")


def parse_lines(data: bytes, endpoint: str, max_lines: int | None = None) -> list[BatchLine]:
    """Every request of ``data``; each must call ``endpoint`` (the batch's), none may stream, and no
    ``custom_id`` may repeat. Blank lines are skipped."""
    limit = MAX_LINES if max_lines is None else max_lines
    lines: list[BatchLine] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        line = _parsed(number, raw)
        _check(number, line, endpoint, seen)
        lines.append(line)
        if len(lines) > limit:
            raise line_error(number, f"the batch holds more than {limit} requests")
    if not lines:
        raise InvalidFieldError("input_file_id: the file holds no request", "input_file_id")
    return lines


def _parsed(number: int, raw: bytes) -> BatchLine:
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise line_error(number, f"not valid JSON ({exc})") from None
    try:
        return BatchLine.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "line"
        raise line_error(number, f"{where}: {first['msg']}") from None


def _check(number: int, line: BatchLine, endpoint: str, seen: dict[str, int]) -> None:
    if line.url not in ENDPOINTS:
        raise line_error(number, f"url {line.url[:100]!r} is not one of {', '.join(ENDPOINTS)}")
    if line.url != endpoint:
        raise line_error(number, f"url {line.url!r} differs from the batch's endpoint {endpoint!r}")
    if line.body.get("stream"):
        raise line_error(number, "body.stream: a batch line cannot stream")
    if not isinstance(line.body.get("model"), str):
        raise line_error(number, "body.model: required (a string)")
    if line.custom_id in seen:
        raise line_error(number, f"custom_id {line.custom_id[:100]!r} repeats line {seen[line.custom_id]}")
    seen[line.custom_id] = number
