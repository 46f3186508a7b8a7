"""The hash-chained audit log: appends, verification, tamper detection, concurrent writers."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp2026ai.security import AuditLog
from mcp2026ai.security.audit import GENESIS_HASH, entry_hash


def _filled(path: Path, count: int = 5) -> AuditLog:
    log = AuditLog(path)
    for index in range(count):
        log.record("model.register", "cli:test", f"m:{index}.0.0", {"digest": f"{index:064x}", "note": "ünïcode ✓"})
    return log


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_entries_form_a_chain_from_genesis(tmp_path: Path) -> None:
    log = _filled(tmp_path / "audit.jsonl")
    entries = log.entries()
    assert [e["seq"] for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0]["prev_hash"] == GENESIS_HASH
    assert all(b["prev_hash"] == a["hash"] for a, b in itertools.pairwise(entries))
    assert all(e["hash"] == entry_hash(e) for e in entries)
    report = log.verify()
    assert report.ok and report.entries == 5 and report.head_hash == entries[-1]["hash"]
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600


def test_an_empty_or_missing_log_verifies(tmp_path: Path) -> None:
    report = AuditLog(tmp_path / "none.jsonl").verify()
    assert report.ok and report.entries == 0 and report.head_hash == GENESIS_HASH


def test_a_modified_entry_is_reported_at_its_line(tmp_path: Path) -> None:
    log = _filled(tmp_path / "audit.jsonl")
    lines = _lines(log.path)
    entry = json.loads(lines[2])
    entry["actor"] = "someone-else"
    lines[2] = json.dumps(entry).encode() + b"\n"
    log.path.write_bytes(b"".join(lines))
    report = log.verify()
    assert (report.bad_line, report.entries) == (3, 2)
    assert "line 3: hash does not match" in report.reason


def test_a_modified_entry_with_a_recomputed_hash_breaks_the_next_line(tmp_path: Path) -> None:
    log = _filled(tmp_path / "audit.jsonl")
    lines = _lines(log.path)
    entry = json.loads(lines[1])
    entry["target"] = "other:1.0.0"
    entry["hash"] = entry_hash(entry)
    lines[1] = json.dumps(entry).encode() + b"\n"
    log.path.write_bytes(b"".join(lines))
    report = log.verify()
    assert report.bad_line == 3 and "prev_hash does not match" in report.reason


@pytest.mark.parametrize(("deleted", "expected_line"), [(0, 1), (1, 2), (3, 4)])
def test_a_deleted_line_is_reported(tmp_path: Path, deleted: int, expected_line: int) -> None:
    log = _filled(tmp_path / "audit.jsonl")
    lines = _lines(log.path)
    del lines[deleted]
    log.path.write_bytes(b"".join(lines))
    report = log.verify()
    assert report.bad_line == expected_line and "deleted or inserted" in report.reason


def test_reordered_lines_are_reported(tmp_path: Path) -> None:
    log = _filled(tmp_path / "audit.jsonl")
    lines = _lines(log.path)
    lines[1], lines[2] = lines[2], lines[1]
    log.path.write_bytes(b"".join(lines))
    assert log.verify().bad_line == 2


def test_a_torn_last_line_is_reported_and_later_appends_still_record(tmp_path: Path) -> None:
    log = _filled(tmp_path / "audit.jsonl", 3)
    log.path.write_bytes(log.path.read_bytes()[:-20])  # a crash mid-write
    log.record("token.create", "cli:test", "ci")
    report = log.verify()
    assert report.bad_line == 3 and "not valid JSON" in report.reason
    assert log.entries()[-1]["action"] == "token.create"


def test_concurrent_appends_from_threads_keep_the_chain_valid(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    barrier = threading.Barrier(8)

    def writer(worker: int) -> None:
        other = AuditLog(log.path) if worker % 2 else log  # shared and separate instances
        barrier.wait()
        for index in range(25):
            other.record("model.promote", f"worker-{worker}", f"m:{index}")

    threads = [threading.Thread(target=writer, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    report = log.verify()
    assert report.ok, report.reason
    assert report.entries == 200
    assert [e["seq"] for e in log.entries()] == list(range(1, 201))


def _append_from_process(path: str, worker: int) -> None:
    log = AuditLog(Path(path))
    for index in range(15):
        log.record("model.rm", f"proc-{worker}", f"m:{index}")


def test_concurrent_appends_from_processes_keep_the_chain_valid(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("fork")
    processes = [ctx.Process(target=_append_from_process, args=(str(path), worker)) for worker in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    report = AuditLog(path).verify()
    assert report.ok, report.reason
    assert report.entries == 45


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_single_byte_change_is_reported_at_its_line(tmp_path: Path, data: st.DataObject) -> None:
    path = tmp_path / "fuzz.jsonl"
    if not path.exists():
        _filled(path, 6)
    original = path.read_bytes()
    lines = original.splitlines(keepends=True)
    line = data.draw(st.integers(0, len(lines) - 1), label="line")
    offset = data.draw(st.integers(0, len(lines[line]) - 2), label="offset")  # not the newline itself
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != lines[line][offset]), label="byte")
    changed = bytearray(lines[line])
    changed[offset] = byte
    path.write_bytes(b"".join([*lines[:line], bytes(changed), *lines[line + 1 :]]))
    try:
        assert AuditLog(path).verify().bad_line == line + 1
    finally:
        path.write_bytes(original)
