"""``mcp contract schema`` and ``mcp contract validate``."""

from __future__ import annotations

import json
from pathlib import Path

from mcp2026ai.errors import ContractError
from tests.support.cli import CONTRACT, Invoke, ok


def test_schema_is_json_with_every_section(cli: Invoke) -> None:
    schema = json.loads(ok(cli("contract", "schema")))
    assert schema["title"] == "InferenceContract"
    assert {"sla_class", "latency", "throughput", "accuracy", "precision", "resources", "batching"} <= set(
        schema["properties"]
    )


def test_validate_good_file(cli: Invoke) -> None:
    assert ok(cli("contract", "validate", CONTRACT)).strip() == f"{CONTRACT}: valid (latency-critical, p99 <= 100 ms)"


def test_validate_bad_file(cli: Invoke, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("sla_class: urgent\n", encoding="utf-8")
    result = cli("contract", "validate", bad)
    assert isinstance(result.exception, ContractError)
    assert str(result.exception).startswith(f"{bad}: sla_class: ")
    assert "(got 'urgent')" in str(result.exception)
