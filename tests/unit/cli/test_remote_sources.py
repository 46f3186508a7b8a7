"""``mcp model register --path URL``: downloaded from a real loopback web server or moto's S3 server,
hashed and stored; credentials in the URL never reach the output or the audit log."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcp2026ai.security import AuditLog
from tests.support.cli import Outcome, run_main
from tests.support.stores import Backend


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the server's own access log: not asserted
        pass


@pytest.fixture
def web_root(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def mcp(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> Outcome:
    monkeypatch.setenv("COLUMNS", "200")
    return run_main([str(arg) for arg in args], capsys, monkeypatch)


def test_register_from_a_web_server(
    web_root: tuple[Path, str],
    mlp_path: Path,
    mcp_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, host = web_root
    (root / "mlp.onnx").write_bytes(mlp_path.read_bytes())
    url = f"http://reader:hunter2@{host}/mlp.onnx?token=sig-secret"
    done = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", url, "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["digest"] == hashlib.sha256(mlp_path.read_bytes()).hexdigest()
    [entry] = [e for e in AuditLog(mcp_home / "audit.jsonl").entries() if e["action"] == "model.register"]
    assert entry["details"]["source"] == f"http://reader@{host}/mlp.onnx"
    everything = done.out + done.err + (mcp_home / "audit.jsonl").read_text()
    assert "hunter2" not in everything and "sig-secret" not in everything
    assert not list((mcp_home / "tmp").glob("download-*")), "the download is removed once stored"


def test_a_missing_url_changes_nothing(
    web_root: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, host = web_root
    missing = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", f"http://{host}/none.onnx")
    assert missing.code == 2 and missing.err.count("\n") == 1 and "not found (HTTP 404)" in missing.err
    remote = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", "http://example.com/m.onnx")
    assert remote.code == 2 and "use https://" in remote.err
    assert json.loads(mcp(capsys, monkeypatch, "model", "list", "--json").out) == []


def test_register_from_s3(
    shared_stores: Backend, mlp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shared_stores.s3 is not None
    shared_stores.s3.client().upload_file(str(mlp_path), shared_stores.bucket, "sources/mlp.onnx")
    url = f"s3://{shared_stores.bucket}/sources/mlp.onnx"
    done = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", url, "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["digest"] == hashlib.sha256(mlp_path.read_bytes()).hexdigest()
    absent = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", url.replace("mlp", "none"))
    assert (
        absent.code == 2
        and absent.err.count("\n") == 1
        and "source s3://" in absent.err
        and "no object sources/none.onnx" in absent.err
    )


class _RedirectHandler(_QuietHandler):
    """Every GET answers 302 to a plain-http host that is not loopback (a downgrade)."""

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "http://mirror.example.invalid/mlp.onnx")
        self.end_headers()


def test_a_redirect_to_plain_http_elsewhere_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loopback-only rule for http:// holds for every redirect, not only the URL given."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_RedirectHandler, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mlp.onnx"
        refused = mcp(capsys, monkeypatch, "model", "register", "--name", "mlp", "--path", url)
    finally:
        server.shutdown()
        server.server_close()
    assert refused.code == 2 and refused.err.count("\n") == 1, refused.err
    assert "http://mirror.example.invalid/mlp.onnx: use https://" in refused.err
    assert json.loads(mcp(capsys, monkeypatch, "model", "list", "--json").out) == []
