"""Inference contracts: parsing, constraint errors that name file/field/value, schema export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mcp2026ai.contract import (
    InferenceContract,
    Precision,
    SLAClass,
    contract_json_schema,
    contract_to_json,
    load_contract,
    parse_contract,
)
from mcp2026ai.errors import ContractError, InvalidArgumentError
from tests.support import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "contracts" / "ocr-cls.yaml"


def write(tmp_path: Path, text: str, name: str = "contract.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_example_contract_loads_every_section() -> None:
    contract = load_contract(EXAMPLE)
    assert contract.sla_class is SLAClass.LATENCY_CRITICAL
    assert contract.objective == "latency"
    assert contract.latency.p99_ms == 100
    assert contract.throughput.min_rps == 50
    assert contract.accuracy.max_drift == 0.02
    assert contract.precision.allowed == [Precision.FP32, Precision.FP16, Precision.INT8]
    assert contract.resources.memory_mb == 1024
    assert contract.batching.max_batch_size == 16
    assert contract.batching.preferred_batch_sizes == [8, 16]


@pytest.mark.parametrize("text", ["", "# only a comment\n", "{}\n"])
def test_empty_document_gives_defaults(tmp_path: Path, text: str) -> None:
    contract = load_contract(write(tmp_path, text))
    assert contract == InferenceContract()
    assert contract.sla_class is SLAClass.BEST_EFFORT
    assert contract.precision.allowed == [Precision.FP32]


def test_json_round_trip() -> None:
    contract = load_contract(EXAMPLE)
    assert parse_contract(json.loads(contract_to_json(contract))) == contract


# (yaml document, field path, value as shown in the message)
BAD_FIELDS = [
    ("latency: {p99_ms: -5}", "latency.p99_ms", "-5"),
    ("latency: {p99_ms: 0}", "latency.p99_ms", "0"),
    ("latency: {p95_ms: -1}", "latency.p95_ms", "-1"),
    ("latency: {p50_ms: 3}", "latency.p50_ms", "3"),
    ("throughput: {min_rps: -1}", "throughput.min_rps", "-1"),
    ("accuracy: {max_drift: 1.5}", "accuracy.max_drift", "1.5"),
    ("accuracy: {max_drift: -0.1}", "accuracy.max_drift", "-0.1"),
    ("precision: {allowed: [fp64]}", "precision.allowed.0", "'fp64'"),
    ("resources: {memory_mb: 0}", "resources.memory_mb", "0"),
    ("resources: {power_w: -3}", "resources.power_w", "-3"),
    ("batching: {max_batch_size: 0}", "batching.max_batch_size", "0"),
    ("batching: {max_batch_size: 5000}", "batching.max_batch_size", "5000"),
    ("batching: {max_queue_delay_ms: -1}", "batching.max_queue_delay_ms", "-1"),
    ("sla_class: urgent", "sla_class", "'urgent'"),
    ("objective: cost", "objective", "'cost'"),
    ("colour: blue", "colour", "'blue'"),
    ("latency: {p99_ms: fast}", "latency.p99_ms", "'fast'"),
]


@pytest.mark.parametrize(("text", "field", "value"), BAD_FIELDS, ids=[case[1] for case in BAD_FIELDS])
def test_bad_field_names_file_field_and_value(tmp_path: Path, text: str, field: str, value: str) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {field}: ")
    assert f"(got {value})" in message
    assert "\n" not in message


def test_contract_error_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        load_contract(write(tmp_path, "latency: {p99_ms: -5}\n"))


def test_empty_precision_list_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "precision: {allowed: []}\n")
    with pytest.raises(ContractError, match=r"precision\.allowed: .*at least 1"):
        load_contract(path)


def test_preferred_batch_size_above_max(tmp_path: Path) -> None:
    path = write(tmp_path, "batching: {max_batch_size: 8, preferred_batch_sizes: [4, 32]}\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    message = str(info.value)
    assert message.startswith(f"{path}: batching: ")
    assert "preferred_batch_sizes [32]" in message
    assert "max_batch_size (8)" in message


def test_several_problems_are_all_reported_on_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "latency: {p99_ms: -1}\nsla_class: urgent\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    message = str(info.value)
    assert "latency.p99_ms" in message and "sla_class" in message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "list"), ("just a string\n", "str"), ("42\n", "int")])
def test_non_mapping_document(tmp_path: Path, text: str, kind: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ContractError, match=rf"^{path}: expected a mapping at the top level, got {kind}$"):
        load_contract(path)


def test_invalid_yaml_reports_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "sla_class: best-effort\nlatency: p99_ms: 5\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    assert str(info.value) == f"{path}: not valid YAML (line 2, column 16: mapping values are not allowed here)"


def test_unterminated_flow_mapping_reports_where_it_broke(tmp_path: Path) -> None:
    path = write(tmp_path, "sla_class: best-effort\nlatency: {p99_ms: 5\nbatching: [\n")
    with pytest.raises(ContractError) as info:
        load_contract(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not valid YAML (line 3, column 9: ")
    assert "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ContractError, match=rf"^{path}: contract file not found$"):
        load_contract(path)


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=rf"^{tmp_path}: cannot read contract file"):
        load_contract(tmp_path)


def test_parse_contract_names_its_source() -> None:
    with pytest.raises(ContractError, match=r"^request body: latency\.p99_ms: "):
        parse_contract({"latency": {"p99_ms": -1}}, source="request body")


def test_json_schema_describes_every_field() -> None:
    schema = contract_json_schema()
    assert set(schema["properties"]) == {
        "sla_class",
        "objective",
        "latency",
        "throughput",
        "accuracy",
        "precision",
        "resources",
        "batching",
        "sequence",
        "generation",
    }
    defs = schema["$defs"]
    assert defs["LatencySpec"]["properties"]["p99_ms"]["exclusiveMinimum"] == 0
    assert defs["BatchingSpec"]["properties"]["max_batch_size"]["maximum"] == 4096
    assert set(defs["SequenceSpec"]["properties"]["strategy"]["enum"]) == {"direct", "oldest"}
    assert set(defs["SLAClass"]["enum"]) == {"latency-critical", "throughput-guaranteed", "best-effort"}
    assert set(defs["Precision"]["enum"]) == {"fp32", "fp16", "bf16", "int8", "int4"}
    for name in ("LatencySpec", "ThroughputSpec", "AccuracySpec", "ResourceSpec", "BatchingSpec", "GenerationSpec"):
        for field, spec in defs[name]["properties"].items():
            assert spec.get("description"), f"{name}.{field} has no description"
    assert defs["LatencySpec"]["additionalProperties"] is False
    json.dumps(schema)  # serialisable as is


def test_example_contract_matches_its_yaml() -> None:
    document = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    dumped = load_contract(EXAMPLE).model_dump(mode="json")
    for section, values in document.items():
        if isinstance(values, dict):
            for key, value in values.items():
                assert dumped[section][key] == value
        else:
            assert dumped[section] == values
