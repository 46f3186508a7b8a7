"""Append-only JSONL audit log of management actions, chained by sha256.

Each line is one JSON object: ``seq`` (1, 2, ...), ``time``, ``action``, ``actor``, ``target``,
``details``, ``prev_hash`` (the previous line's ``hash``; 64 zeros for the first) and ``hash``, the
sha256 of the canonical JSON of every other field. Editing, deleting, inserting or reordering a
line breaks the chain at that line. Cutting lines off the end cannot be seen from the file alone:
compare the head hash that ``verify`` reports with one kept elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mcp2026ai.security.files import locked

GENESIS_HASH = "0" * 64
_FIELDS = ("seq", "time", "action", "actor", "target", "details", "prev_hash", "hash")
_TAIL_BYTES = 1 << 16

Appender = Callable[[str, str, str, dict[str, Any] | None], dict[str, Any]]
"""``append(action, actor, target, details)``: one entry, written while :meth:`AuditLog.holding` holds the locks."""


def canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the entry without its own ``hash``."""
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


@dataclass(frozen=True)
class AuditReport:
    """The outcome of :meth:`AuditLog.verify`: ``bad_line`` is 1-based, None when the chain holds."""

    entries: int
    head_hash: str
    bad_line: int | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.bad_line is None


class AuditChain(Protocol):
    """An append-only, hash-chained audit log: this JSONL file, or a table in a shared catalog
    (:class:`mcp2026ai.registry.catalogs.postgres_audit.PostgresAuditLog`)."""

    location: str
    """Where the entries live, for messages."""

    def record(self, action: str, actor: str, target: str, details: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def holding(self) -> AbstractContextManager[Appender]: ...

    def entries(self) -> list[dict[str, Any]]: ...

    def verify(self) -> AuditReport: ...


def chained_entry(
    seq: int, prev_hash: str, action: str, actor: str, target: str, details: dict[str, Any] | None
) -> dict[str, Any]:
    """The next entry of a hash chain (number ``seq``, after the entry whose hash is ``prev_hash``),
    stamped now and carrying its own hash: the same for every place the chain is kept."""
    entry: dict[str, Any] = {
        "seq": seq,
        "time": datetime.now(UTC).isoformat(timespec="microseconds"),
        "action": action,
        "actor": actor,
        "target": target,
        "details": details or {},
        "prev_hash": prev_hash,
    }
    entry["hash"] = entry_hash(entry)
    return entry


class AuditLog:
    """Thread- and process-safe appends (thread lock + flock), flushed and fsynced per entry."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        self._lock = threading.Lock()

    def record(self, action: str, actor: str, target: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
        """Append one entry and return it."""
        with self.holding() as append:
            return append(action, actor, target, details)

    @contextmanager
    def holding(self) -> Iterator[Appender]:
        """Hold the log's locks (thread and file) for a while and yield an append function that works
        under them: what another writer does in between (a registration's catalog insert, say) can
        then never interleave with this writer's check-then-append."""
        with self._lock, locked(self.path):
            yield self._append_locked

    def _append_locked(
        self, action: str, actor: str, target: str, details: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        seq, prev_hash, newline_needed = self._tail()
        entry = chained_entry(seq + 1, prev_hash, action, actor, target, details)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "ab") as handle:
            handle.write((b"\n" if newline_needed else b"") + canonical(entry) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        return entry

    def entries(self) -> list[dict[str, Any]]:
        """Every readable entry in file order (damaged lines are skipped: ``verify`` names them)."""
        if not self.path.exists():
            return []
        found = []
        for line in self.path.read_bytes().splitlines():
            try:
                entry = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(entry, dict):
                found.append(entry)
        return found

    def verify(self) -> AuditReport:
        """Walk the chain; report the first line that is malformed, out of sequence or altered."""
        if not self.path.exists():
            return AuditReport(0, GENESIS_HASH)
        prev_hash, count = GENESIS_HASH, 0
        with self.path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                problem = check_line(raw, number, prev_hash)
                if problem:
                    return AuditReport(count, prev_hash, number, problem)
                prev_hash, count = json.loads(raw)["hash"], count + 1
        return AuditReport(count, prev_hash)

    def _tail(self) -> tuple[int, str, bool]:
        """``(seq, hash)`` of the last entry, and whether the file lacks its final newline."""
        if not self.path.exists():
            return 0, GENESIS_HASH, False
        with self.path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read()
        lines = [line for line in tail.splitlines() if line.strip()]
        newline_needed = bool(tail) and not tail.endswith(b"\n")
        if not lines:
            return 0, GENESIS_HASH, newline_needed
        try:
            last = json.loads(lines[-1])
            return int(last["seq"]), str(last["hash"]), newline_needed
        except (ValueError, KeyError, TypeError):
            # A damaged tail (torn write): keep recording; verify reports the damaged line.
            return 0, hashlib.sha256(lines[-1]).hexdigest(), newline_needed


def check_line(raw: bytes, number: int, prev_hash: str) -> str:
    """Empty when the line continues the chain, else why not."""
    try:
        entry = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return f"line {number}: not valid JSON (damaged or truncated)"
    if not isinstance(entry, dict) or set(entry) != set(_FIELDS):
        return f"line {number}: fields differ from {', '.join(_FIELDS)}"
    if entry["seq"] != number:
        return f"line {number}: sequence number {entry['seq']!r}, expected {number} (a line was deleted or inserted)"
    if entry["prev_hash"] != prev_hash:
        return f"line {number}: prev_hash does not match the previous line's hash (a line was removed or reordered)"
    if entry["hash"] != entry_hash(entry):
        return f"line {number}: hash does not match the content (the entry was modified)"
    return ""
