"""A fresh MCP_HOME is the owner's alone (finding 14 of the security review): the home and its
stores are created 0700, artifacts 0400 and the SQLite catalog 0600, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_main


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The widest usual umask (022): what was set on the machine the finding was reproduced on."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_fresh_home_and_its_stores_are_private(
    open_umask: None,
    mcp_home: Path,
    mlp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not mcp_home.exists()
    done = run_main(["model", "register", "--name", "mlp", "--path", str(mlp_path)], capsys, monkeypatch)
    assert done.code == 0, done.err
    folders = [mcp_home, *(p for p in (mcp_home / "artifacts").rglob("*") if p.is_dir())]
    assert {str(p.relative_to(mcp_home.parent)): mode(p) for p in folders if mode(p) != 0o700} == {}
    objects = [p for p in (mcp_home / "artifacts" / "objects").rglob("*") if p.is_file()]
    assert objects and {mode(p) for p in objects} == {0o400}
    catalog = [p for p in mcp_home.glob("registry.db*")]
    assert catalog and all(mode(p) & 0o077 == 0 for p in catalog), {p.name: oct(mode(p)) for p in catalog}


def test_an_existing_home_keeps_its_mode_but_the_files_stay_private(
    open_umask: None,
    mcp_home: Path,
    mlp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mcp_home.mkdir(mode=0o755)
    done = run_main(["model", "register", "--name", "mlp", "--path", str(mlp_path)], capsys, monkeypatch)
    assert done.code == 0, done.err
    assert mode(mcp_home) == 0o755, "an operator's own folder is not changed"
    assert mode(mcp_home / "artifacts") == 0o700
    assert mode(mcp_home / "registry.db") & 0o077 == 0
