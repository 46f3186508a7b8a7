"""``mcp serve --limit NAME=VALUE``: the per-request limits of text generation (serving/limits.py)."""

from __future__ import annotations

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.messages import validated
from mcp2026ai.serving.limits import GenerationLimits


def parse_limits(items: list[str]) -> GenerationLimits:
    """``["max_messages=256", "max_tokens=none"]`` as limits; InvalidArgumentError naming the bad item."""
    values: dict[str, str | None] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in GenerationLimits.model_fields:
            known = ", ".join(GenerationLimits.model_fields)
            raise InvalidArgumentError(f"--limit {item!r}: expected NAME=VALUE with NAME one of {known}")
        values[name] = None if value.strip().lower() == "none" else value.strip()
    try:
        return validated(GenerationLimits, values)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"--limit {exc}") from None
