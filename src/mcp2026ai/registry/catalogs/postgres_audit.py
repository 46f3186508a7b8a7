"""The audit chain in the PostgreSQL catalog (table ``audit_log``), for registries shared by machines.

Entries and their hash chain are exactly those of the JSONL file (:mod:`mcp2026ai.security.audit`):
one canonical JSON line per row, ``seq`` as the key. The file's flock becomes a session-level
advisory lock, which every machine sees, so the registration outbox
(:mod:`mcp2026ai.registry.audit_trail`) keeps its guarantee across nodes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp2026ai.registry.catalogs.postgres_connection import connected
from mcp2026ai.registry.catalogs.postgres_schema import LOCK_AUDIT, migrate
from mcp2026ai.registry.redaction import redacted_url
from mcp2026ai.security.audit import GENESIS_HASH, Appender, AuditReport, canonical, chained_entry, check_line


class PostgresAuditLog:
    """:class:`~mcp2026ai.security.audit.AuditChain` in PostgreSQL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = f"{redacted_url(url)} (audit_log table)"
        self._lock = threading.Lock()
        with connected(url, autocommit=True) as db:
            migrate(db)

    def record(self, action: str, actor: str, target: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.holding() as append:
            return append(action, actor, target, details)

    @contextmanager
    def holding(self) -> Iterator[Appender]:
        """Hold the chain's advisory lock (every process on every machine) and yield an append function."""
        with self._lock, connected(self.url, autocommit=True) as db:
            db.execute("SELECT pg_advisory_lock(%s, 0)", (LOCK_AUDIT,))

            def append(action: str, actor: str, target: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
                return _append(db, action, actor, target, details)

            try:
                yield append
            finally:
                db.execute("SELECT pg_advisory_unlock(%s, 0)", (LOCK_AUDIT,))

    def adopt(self, entries: list[dict[str, Any]]) -> bool:
        """Take over another chain's entries as they are (same lines, same hashes) when this chain is
        empty; False (nothing written) when it is not."""
        with self.holding(), connected(self.url) as db:
            if db.execute("SELECT 1 FROM audit_log LIMIT 1").fetchone() is not None:
                return False
            for entry in entries:
                db.execute(
                    "INSERT INTO audit_log (seq, line) VALUES (%s, %s)",
                    (entry["seq"], canonical(entry).decode("utf-8")),
                )
        return True

    def entries(self) -> list[dict[str, Any]]:
        found = []
        for _, line in self._lines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                found.append(entry)
        return found

    def verify(self) -> AuditReport:
        prev_hash, count = GENESIS_HASH, 0
        for number, (_, line) in enumerate(self._lines(), start=1):
            problem = check_line(line.encode("utf-8"), number, prev_hash)
            if problem:
                return AuditReport(count, prev_hash, number, problem)
            prev_hash, count = json.loads(line)["hash"], count + 1
        return AuditReport(count, prev_hash)

    def _lines(self) -> list[tuple[int, str]]:
        with connected(self.url) as db:
            return [(int(row[0]), str(row[1])) for row in db.execute("SELECT seq, line FROM audit_log ORDER BY seq")]


def _append(db: Any, action: str, actor: str, target: str, details: dict[str, Any] | None) -> dict[str, Any]:
    last = db.execute("SELECT seq, line FROM audit_log ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev_hash = (int(last[0]), _hash_of(str(last[1]))) if last else (0, GENESIS_HASH)
    entry = chained_entry(seq + 1, prev_hash, action, actor, target, details)
    db.execute("INSERT INTO audit_log (seq, line) VALUES (%s, %s)", (seq + 1, canonical(entry).decode("utf-8")))
    return entry


def _hash_of(line: str) -> str:
    try:
        return str(json.loads(line)["hash"])
    except (ValueError, KeyError, TypeError):  # a damaged row: keep recording; verify names it
        import hashlib

        return hashlib.sha256(line.encode("utf-8")).hexdigest()
