"""One confinement helper for every name read from untrusted input (findings 8 and 9 of the security
review): Triton repository fields and S3 object keys cannot reach outside their folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp2026ai.registry import remote_sources
from mcp2026ai.security.paths import PathEscapeError, confined_path
from tests.support.cli import Outcome, run_main
from tests.support.stores import Backend
from tests.support.triton_repository import add_sub, add_sub_config, write_model


def mcp(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> Outcome:
    monkeypatch.setenv("COLUMNS", "300")
    return run_main([str(arg) for arg in args], capsys, monkeypatch)


def one_line_refusal(outcome: Outcome, *fragments: str) -> None:
    assert outcome.code == 2, outcome.out + outcome.err
    assert outcome.err.count("\n") == 1 and "Traceback" not in outcome.err, outcome.err
    for fragment in fragments:
        assert fragment in outcome.err, outcome.err


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", "a/../b", "", "a\x00b", "..\\x"])
def test_names_that_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(PathEscapeError, match="where: "):
        confined_path(tmp_path, name, "where")


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "inside" / "labels.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PathEscapeError, match="a symlink"):
        confined_path(tmp_path / "inside", "labels.txt", "where")
    assert confined_path(tmp_path, "inside/labels.txt", "w") == tmp_path / "inside" / "labels.txt"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """What finding 8 read through a repository: a model and a secrets file outside it."""
    elsewhere = tmp_path / "elsewhere"
    add_sub(elsewhere / "secret-model.onnx")
    (elsewhere / "app-secrets.env").write_text("db_password=hunter2\napi_key=sk-live-123\n")
    return elsewhere


def _repository(tmp_path: Path, extra: str, output_extra: str = "") -> Path:
    source = add_sub(tmp_path / "sources" / "simple.onnx")
    head, tail = add_sub_config("ocr").rsplit("dims: [ 16 ] }", 1)
    config = f"{head}dims: [ 16 ] {output_extra}}}{tail}{extra}"
    write_model(tmp_path / "repo", "ocr", config, {1: source})
    return tmp_path / "repo"


@pytest.mark.parametrize(
    ("extra", "output_extra", "field", "value"),
    [
        ('default_model_filename: "{outside}/secret-model.onnx"\n', "", "default_model_filename", "{outside}"),
        ('default_model_filename: "../../elsewhere/secret-model.onnx"\n', "", "default_model_filename", "../"),
        ('default_model_filename: "model.pt"\n', "", "default_model_filename", "model.pt"),
        ("", 'label_filename: "../../elsewhere/app-secrets.env" ', "label_filename", "app-secrets.env"),
        ("", 'label_filename: "{outside}/app-secrets.env" ', "label_filename", "app-secrets.env"),
    ],
)
def test_import_triton_refuses_fields_that_escape_the_model_folder(
    tmp_path: Path,
    outside: Path,
    mcp_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: str,
    output_extra: str,
    field: str,
    value: str,
) -> None:
    repo = _repository(tmp_path, extra.format(outside=outside), output_extra.format(outside=outside))
    refused = mcp(capsys, monkeypatch, "model", "import-triton", repo)
    one_line_refusal(refused, "config.pbtxt", field, value.format(outside=outside))
    assert "hunter2" not in refused.out + refused.err
    assert json.loads(mcp(capsys, monkeypatch, "model", "list", "--json").out) == []


def test_serving_a_repository_reads_the_same_confined_fields(tmp_path: Path, outside: Path) -> None:
    from mcp2026ai.registry.triton_repository import scan_repository

    repo = _repository(tmp_path, f'default_model_filename: "{outside}/secret-model.onnx"\n')
    models, failures = scan_repository(repo)
    assert models == [] and "absolute path" in failures[0].reason


def test_s3_folder_keys_cannot_leave_the_download_folder(
    shared_stores: Backend,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert shared_stores.s3 is not None
    client, bucket = shared_stores.s3.client(), shared_stores.bucket
    client.put_object(Bucket=bucket, Key="models/tiny/config.json", Body=b"{}")
    client.put_object(Bucket=bucket, Key="models/tiny/../../../escaped-dotdot.txt", Body=b"x")
    client.put_object(Bucket=bucket, Key=f"models/tiny//{tmp_path}/escaped-absolute.txt", Body=b"x")
    with pytest.raises(PathEscapeError, match="object key"):
        remote_sources.download(f"s3://{bucket}/models/tiny/", tmp_path / "dl" / "a" / "b")
    refused = mcp(capsys, monkeypatch, "model", "register", "--name", "tiny", "--path", f"s3://{bucket}/models/tiny/")
    one_line_refusal(refused, "object key", "escaped-dotdot.txt")
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("escaped-*"))
    assert written == [], written
