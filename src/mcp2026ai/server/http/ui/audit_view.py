"""The Audit page: the audit log's newest entries, filtered by actor and action, and whether its
hash chain holds (``mcp audit verify``'s walk). Reads the whole file: call it off the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp2026ai.security.audit import AuditLog, AuditReport

SHOWN = 200


@dataclass(frozen=True)
class AuditView:
    path: str
    report: AuditReport
    entries: list[dict[str, Any]]
    matching: int
    actors: list[str]
    actions: list[str]


def audit_view(log: AuditLog, actor: str = "", action: str = "") -> AuditView:
    """Newest first, at most :data:`SHOWN`; ``actor`` and ``action`` match as substrings."""
    entries = log.entries()
    matching = [entry for entry in entries if _matches(entry, actor.strip(), action.strip())]
    return AuditView(
        path=str(log.path),
        report=log.verify(),
        entries=[_row(entry) for entry in reversed(matching[-SHOWN:])],
        matching=len(matching),
        actors=sorted({str(entry.get("actor", "")) for entry in entries}),
        actions=sorted({str(entry.get("action", "")) for entry in entries}),
    )


def _matches(entry: dict[str, Any], actor: str, action: str) -> bool:
    return actor in str(entry.get("actor", "")) and action in str(entry.get("action", ""))


def _row(entry: dict[str, Any]) -> dict[str, Any]:
    details = entry.get("details") or {}
    return {
        "seq": entry.get("seq"),
        "time": str(entry.get("time", ""))[:19].replace("T", " "),
        "actor": entry.get("actor", ""),
        "action": entry.get("action", ""),
        "target": entry.get("target", ""),
        "details": ", ".join(f"{key}={value}" for key, value in details.items()) if isinstance(details, dict) else "",
        "hash": str(entry.get("hash", ""))[:12],
    }
