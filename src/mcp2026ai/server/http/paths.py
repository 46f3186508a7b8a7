"""The v2 inference path, recognised without Starlette's router (the early refusal and the direct route)."""

from __future__ import annotations

import re

_INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer")


def infer_target(path: str) -> tuple[str, str | None] | None:
    """(model, version or None) of ``/v2/models/{model}[/versions/{version}]/infer``; None for any other path."""
    if not path.endswith("/infer"):
        return None
    match = _INFER_PATH.fullmatch(path)
    return None if match is None else (match.group(1), match.group(2))
