"""Reading a Triton repository's layout: config.pbtxt with Triton's own message, version_policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.registry.triton_repository import TritonConfigError, read_config, read_model, scan_repository
from tests.support.triton_repository import add_sub, add_sub_config, write_model


@pytest.fixture
def onnx_file(tmp_path: Path) -> Path:
    return add_sub(tmp_path / "sources" / "simple.onnx")


def model(root: Path, onnx_file: Path, extra: str = "", versions: tuple[int, ...] = (1,), name: str = "simple") -> Path:
    return write_model(root, name, add_sub_config(name) + extra, dict.fromkeys(versions, onnx_file))


def test_reads_config_and_latest_version(tmp_path: Path, onnx_file: Path) -> None:
    read = read_model(model(tmp_path / "repo", onnx_file, versions=(1, 2, 10)))
    assert read.name == "simple" and read.config.max_batch_size == 8
    assert list(read.versions) == [10]  # Triton's default policy: the latest one, numerically
    assert read.versions[10] == tmp_path / "repo" / "simple" / "10" / "model.onnx"


@pytest.mark.parametrize(
    ("policy", "selected"),
    [
        ("version_policy: { latest: { num_versions: 2 } }", [2, 3]),
        ("version_policy: { all: {} }", [1, 2, 3]),
        ("version_policy: { specific: { versions: [1, 3] } }", [1, 3]),
    ],
)
def test_version_policy(tmp_path: Path, onnx_file: Path, policy: str, selected: list[int]) -> None:
    assert list(read_model(model(tmp_path, onnx_file, policy, (1, 2, 3))).versions) == selected


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("version_policy: { specific: { versions: [4] } }", "version_policy.specific.versions: 4 has no version"),
        ("version_policy: { latest: { } }", "version_policy.latest.num_versions: 0 must be at least 1"),
        (
            "max_batch_sizes: 4",
            'config.pbtxt:12:1 : Message type "inference.ModelConfig" has no field named "max_batch_sizes"',
        ),
        ("input [{ name: 'X' data_type: TYPE_FLOAT32 }]", "has no value named TYPE_FLOAT32"),
        ('backend: "tensorrt"', "backend: 'tensorrt' is not served here"),
        ('backend: "python"', "platform: 'onnxruntime_onnx' with backend \"python\" (leave platform out)"),
    ],
)
def test_bad_configs_name_file_field_and_value(tmp_path: Path, onnx_file: Path, extra: str, message: str) -> None:
    with pytest.raises(TritonConfigError, match=r"simple/config\.pbtxt") as info:
        read_model(model(tmp_path, onnx_file, extra))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_name_must_match_directory(tmp_path: Path, onnx_file: Path) -> None:
    directory = model(tmp_path, onnx_file)
    directory.rename(tmp_path / "other")
    with pytest.raises(TritonConfigError, match=r"name: 'simple' differs from the directory name 'other'"):
        read_model(tmp_path / "other")


def test_missing_pieces(tmp_path: Path, onnx_file: Path) -> None:
    directory = model(tmp_path, onnx_file, versions=())
    with pytest.raises(TritonConfigError, match="no numeric version directories"):
        read_model(directory)
    (directory / "2").mkdir()
    with pytest.raises(TritonConfigError, match=r"simple/2/model.onnx: missing \(version 2\)"):
        read_model(directory)
    (directory / "config.pbtxt").unlink()
    with pytest.raises(TritonConfigError, match=r"config\.pbtxt: missing"):
        read_model(directory)


def test_scan_keeps_going_past_a_refused_model(tmp_path: Path, onnx_file: Path) -> None:
    root = tmp_path / "repo"
    model(root, onnx_file)
    model(root, onnx_file, "bogus: 1", name="bad")
    (root / ".hidden").mkdir()
    models, failures = scan_repository(root)
    assert [m.name for m in models] == ["simple"]
    assert [f.name for f in failures] == ["bad"] and 'no field named "bogus"' in failures[0].reason
    with pytest.raises(InvalidArgumentError, match="not a directory"):
        scan_repository(tmp_path / "nope")


def test_read_config_of_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(TritonConfigError, match="cannot read"):
        read_config(tmp_path / "config.pbtxt")
