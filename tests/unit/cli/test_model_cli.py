"""``mcp model``: register, list, show, promote, rm, with and without --json (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp2026ai.errors import AlreadyExistsError, ContractError, InvalidArgumentError, ModelImportError, NotFoundError
from mcp2026ai.registry import ModelRegistry
from tests.support.cli import CONTRACT, PREPROCESSING, Invoke, ok


def test_register_prints_ref_stage_and_digest(cli: Invoke, mlp_path: Path, registry: ModelRegistry) -> None:
    out = ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    digest = registry.resolve("mlp").digest
    assert out.strip() == f"registered mlp:1.0.0 (dev, sha256 {digest[:12]})"


def test_register_json_with_every_option(cli: Invoke, mlp_path: Path) -> None:
    out = ok(
        cli(
            "model", "register", "--name", "mlp", "--path", mlp_path, "--version", "2.1",
            "--contract", CONTRACT, "--preprocessing", PREPROCESSING, "--stage", "staging",
            "--tag", "team=vision", "--tag", "source=test", "--json",
        )
    )  # fmt: skip
    record = json.loads(out)
    assert record["name"] == "mlp" and record["version"] == "2.1.0" and record["stage"] == "staging"
    assert len(record["digest"]) == 64
    assert record["tags"] == {"team": "vision", "source": "test"}
    assert record["contract"]["latency"]["p99_ms"] == 100
    assert record["preprocessing"]["labels"] == ["0", "180"]
    assert record["signature"]["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]


def test_list_table_and_json(cli: Invoke, mlp_path: Path, int64_path: Path) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(cli("model", "register", "--name", "ids", "--path", int64_path, "--tag", "k=v"))
    table = ok(cli("model", "list"))
    for text in ("mlp", "ids", "1.0.0", "1.1.0", "k=v", "dev", "onnx"):
        assert text in table
    listed = json.loads(ok(cli("model", "list", "--json")))
    assert sorted((r["name"], r["version"]) for r in listed) == [("ids", "1.0.0"), ("mlp", "1.0.0"), ("mlp", "1.1.0")]
    only = json.loads(ok(cli("model", "list", "--name", "ids", "--json")))
    assert [r["name"] for r in only] == ["ids"]


def test_list_empty_registry(cli: Invoke) -> None:
    assert json.loads(ok(cli("model", "list", "--json"))) == []
    assert "models" in ok(cli("model", "list"))


def test_show_text_and_json(cli: Invoke, mlp_path: Path) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path, "--contract", CONTRACT, "--tag", "a=b"))
    text = ok(cli("model", "show", "--name", "mlp"))
    assert "mlp:1.0.0" in text and "stage=dev" in text and "tags a=b" in text
    assert "signature" in text and "input" in text and "[-1, 4]" in text
    assert "contract:" in text and "sla_class: latency-critical" in text
    shown = json.loads(ok(cli("model", "show", "--name", "mlp", "--version", "1.0", "--json")))
    assert shown["version"] == "1.0.0" and shown["contract"]["sla_class"] == "latency-critical"


def test_promote_changes_the_default_version(cli: Invoke, mlp_path: Path, other_mlp_path: Path) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(cli("model", "register", "--name", "mlp", "--path", other_mlp_path))
    assert json.loads(ok(cli("model", "show", "--name", "mlp", "--json")))["version"] == "1.1.0"
    out = ok(cli("model", "promote", "--name", "mlp", "--version", "1.0.0", "--stage", "production"))
    assert out.strip() == "mlp:1.0.0 is now production"
    assert json.loads(ok(cli("model", "show", "--name", "mlp", "--json")))["version"] == "1.0.0"


def test_rm_one_version_then_the_model(
    cli: Invoke, mlp_path: Path, other_mlp_path: Path, registry: ModelRegistry
) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    ok(cli("model", "register", "--name", "mlp", "--path", other_mlp_path))
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path))
    assert ok(cli("model", "rm", "--name", "mlp", "--version", "1.1")).strip() == "removed mlp:1.1.0"
    assert ok(cli("model", "rm", "--name", "mlp")).strip() == "removed mlp:1.0.0, mlp:1.2.0"
    assert registry.model_names() == []
    assert not list((registry.home / "artifacts" / "objects").rglob("*.onnx"))


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        (["--path", "{tmp}/absent.onnx"], ModelImportError, "absent.onnx: no such file"),
        (["--path", "{mlp}", "--tag", "novalue"], InvalidArgumentError, "--tag 'novalue': expected key=value"),
        (["--path", "{mlp}", "--tag", "=v"], InvalidArgumentError, "expected key=value"),
        (["--path", "{mlp}", "--version", "one"], InvalidArgumentError, "version 'one' is not a semantic version"),
        (["--path", "{mlp}", "--contract", "{tmp}/bad.yaml"], ContractError, "bad.yaml: latency.p99_ms"),
        (
            ["--path", "{mlp}", "--preprocessing", "{tmp}/none.yaml"],
            InvalidArgumentError,
            "preprocessing file not found",
        ),
        (["--path", "{mlp}", "--preprocessing", "{tmp}/bad.yaml"], InvalidArgumentError, "invalid preprocessing"),
    ],
)
def test_register_errors_record_nothing(
    cli: Invoke, tmp_path: Path, mlp_path: Path, registry: ModelRegistry, args: list[str], error: type, text: str
) -> None:
    (tmp_path / "bad.yaml").write_text("latency: {p99_ms: -1}\n", encoding="utf-8")
    filled = [arg.format(tmp=tmp_path, mlp=mlp_path) for arg in args]
    result = cli("model", "register", "--name", "mlp", *filled)
    assert isinstance(result.exception, error), result.output
    assert text in str(result.exception)
    assert registry.model_names() == []


def test_register_duplicate_version(cli: Invoke, mlp_path: Path) -> None:
    ok(cli("model", "register", "--name", "mlp", "--path", mlp_path, "--version", "1.0.0"))
    result = cli("model", "register", "--name", "mlp", "--path", mlp_path, "--version", "1")
    assert isinstance(result.exception, AlreadyExistsError)


def test_unknown_model(cli: Invoke) -> None:
    for args in (["show", "--name", "ghost"], ["list", "--name", "ghost"], ["rm", "--name", "ghost"]):
        result = cli("model", *args)
        assert isinstance(result.exception, NotFoundError), args


def test_bad_stage_is_a_usage_error(cli: Invoke, mlp_path: Path) -> None:
    result = cli("model", "register", "--name", "mlp", "--path", mlp_path, "--stage", "prod")
    assert result.exit_code == 2
    assert "prod" in result.output
