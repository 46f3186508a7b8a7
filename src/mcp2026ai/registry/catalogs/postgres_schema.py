"""The PostgreSQL catalog's schema, as numbered migrations applied once each, in order.

``schema_migrations`` records what has been applied; :func:`migrate` runs under a transaction-level
advisory lock, so processes starting together apply each migration exactly once. Append new
migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

from typing import Any

LOCK_SCHEMA = 0x6D637001
"""Advisory lock namespaces (first key of ``pg_advisory_*lock(int, int)``)."""
LOCK_NAMES = 0x6D637002
LOCK_AUDIT = 0x6D637003

MIGRATIONS: tuple[str, ...] = (
    # 1: versions, annotations, the audit outbox
    """
    CREATE TABLE model_versions (
        name          TEXT NOT NULL,
        version       TEXT NOT NULL,
        number        INTEGER NOT NULL,
        stage         TEXT NOT NULL,
        format        TEXT NOT NULL,
        digest        TEXT NOT NULL,
        signature     TEXT NOT NULL,
        contract      TEXT,
        tags          TEXT NOT NULL,
        preprocessing TEXT,
        parent        TEXT,
        created_at    TEXT NOT NULL,
        PRIMARY KEY (name, version),
        UNIQUE (name, number)
    );
    CREATE INDEX model_versions_by_digest ON model_versions (digest);
    CREATE TABLE annotations (
        id         BIGSERIAL PRIMARY KEY,
        name       TEXT NOT NULL,
        version    TEXT NOT NULL,
        kind       TEXT NOT NULL,
        created_at TEXT NOT NULL,
        payload    TEXT NOT NULL
    );
    CREATE INDEX annotations_by_version ON annotations (name, version, kind);
    CREATE TABLE pending_audit (
        id         TEXT PRIMARY KEY,
        action     TEXT NOT NULL,
        actor      TEXT NOT NULL,
        target     TEXT NOT NULL,
        details    TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
    # 2: the audit chain (one canonical JSON line per entry, as in the JSONL file)
    """
    CREATE TABLE audit_log (
        seq  BIGINT PRIMARY KEY,
        line TEXT NOT NULL
    );
    """,
)


def migrate(db: Any) -> int:
    """Apply the migrations ``db`` lacks (in one transaction); returns the schema version."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_SCHEMA,))
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        row = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        current = int(row[0])
        for number, statements in enumerate(MIGRATIONS[current:], start=current + 1):
            db.execute(statements)
            db.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))
    return len(MIGRATIONS)
