"""A real PostgreSQL server for the tests: a private cluster (Debian's ``postgresql`` package) in a
temporary folder on a loopback port, password authentication on. Started once per session; each test
gets its own database. As root, the server runs as the ``postgres`` user (initdb refuses root)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.services import free_port, missing_service, wait_listening

USER = "mcp"


@dataclass(frozen=True)
class PostgresServer:
    port: int
    password: str

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        return f"postgresql://{USER}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        name = f"mcp_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    if bin_dir is None:
        missing_service("PostgreSQL", "apt-get install -y postgresql")
        return
    root = Path(tempfile.mkdtemp(prefix="mcp-pg-", dir="/tmp" if os.geteuid() == 0 else None))  # postgres must reach it
    as_user = _run_as(root)
    password = uuid.uuid4().hex
    (root / "pw").write_text(password, encoding="utf-8")
    port = free_port()
    data, log = root / "data", root / "server.log"
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--pwfile", str(root / "pw"),
         "--auth-host=scram-sha-256", "--auth-local=trust", "--no-sync", "-E", "UTF8"],
        check=True, capture_output=True,
    )  # fmt: skip
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"
    subprocess.run(
        [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        wait_listening(port)
        yield PostgresServer(port, password)
    finally:
        subprocess.run(
            [*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False, capture_output=True,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


def _run_as(root: Path) -> list[str]:
    """initdb refuses root: as root, hand the folder to ``postgres`` and run the tools as that user."""
    if os.geteuid() != 0:
        return []
    account = pwd.getpwnam("postgres")
    os.chown(root, account.pw_uid, account.pw_gid)
    return ["runuser", "-u", "postgres", "--"]
