"""The ModelRegistry facade: register -> resolve -> versions -> promote -> remove."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mcp2026ai.contract import InferenceContract
from mcp2026ai.errors import AlreadyExistsError, InvalidArgumentError, ModelImportError, NotFoundError
from mcp2026ai.registry import ModelRegistry, Preprocessing, Stage
from mcp2026ai.registry.model_registry import validate_model_name


def artifacts(registry: ModelRegistry) -> list[Path]:
    return sorted((registry.home / "artifacts" / "objects").rglob("*.onnx"))


def test_round_trip(registry: ModelRegistry, mlp_path: Path, other_mlp_path: Path) -> None:
    contract = InferenceContract.model_validate({"sla_class": "latency-critical", "latency": {"p99_ms": 10}})
    prep = Preprocessing(height=4, width=4)
    first = registry.register(
        "mlp", mlp_path, contract=contract, stage=Stage.STAGING, tags={"team": "ml"}, preprocessing=prep
    )
    assert (first.version, first.stage, first.format) == ("1.0.0", Stage.STAGING, "onnx")
    assert first.digest == hashlib.sha256(mlp_path.read_bytes()).hexdigest()
    assert registry.artifact_path(first).read_bytes() == mlp_path.read_bytes()
    assert registry.resolve("mlp") == first
    assert registry.resolve("mlp").contract == contract
    assert registry.resolve("mlp").preprocessing == prep

    second = registry.register("mlp", other_mlp_path, parent=first.ref)
    assert second.version == "1.1.0" and second.parent == "mlp:1.0.0"
    assert [r.version for r in registry.versions("mlp")] == ["1.0.0", "1.1.0"]
    assert registry.model_names() == ["mlp"]

    promoted = registry.promote("mlp", "1.0", Stage.PRODUCTION)
    assert promoted.stage is Stage.PRODUCTION
    assert registry.resolve("mlp") == promoted, "production wins over a higher dev version"
    assert registry.resolve("mlp", "1.1").version == "1.1.0"

    assert registry.remove("mlp", "1.0") == [promoted]
    assert [r.version for r in registry.versions("mlp")] == ["1.1.0"]
    assert not registry.store.path_for(first.digest).exists()
    remaining = registry.resolve("mlp")
    assert registry.remove("mlp") == [remaining]
    assert registry.model_names() == []
    assert artifacts(registry) == []


def test_remove_whole_model_returns_every_version(registry: ModelRegistry, mlp_path: Path) -> None:
    registry.register("mlp", mlp_path)
    registry.register("mlp", mlp_path)
    removed = registry.remove("mlp")
    assert [r.version for r in removed] == ["1.0.0", "1.1.0"]
    with pytest.raises(NotFoundError, match="unknown model 'mlp'"):
        registry.versions("mlp")


def test_identical_files_share_one_artifact(registry: ModelRegistry, mlp_path: Path) -> None:
    a = registry.register("a", mlp_path)
    b = registry.register("b", mlp_path)
    assert a.digest == b.digest
    assert len(artifacts(registry)) == 1
    registry.remove("a")
    assert registry.artifact_path(b).exists(), "still referenced by b"
    registry.remove("b")
    assert artifacts(registry) == []


def test_different_files_get_different_artifacts(registry: ModelRegistry, mlp_path: Path, other_mlp_path: Path) -> None:
    registry.register("m", mlp_path)
    registry.register("m", other_mlp_path)
    assert len(artifacts(registry)) == 2


def test_version_rules(registry: ModelRegistry, mlp_path: Path) -> None:
    assert registry.register("m", mlp_path).version == "1.0.0"
    assert registry.register("m", mlp_path).version == "1.1.0"
    assert registry.register("m", mlp_path, version="1.5").version == "1.5.0"
    assert registry.register("m", mlp_path, version="1.2.7").version == "1.2.7"
    assert registry.register("m", mlp_path).version == "1.6.0", "next minor of the highest"
    assert registry.register("m", mlp_path, version="3").version == "3.0.0"
    assert registry.register("other", mlp_path).version == "1.0.0", "versions are per model"


@pytest.mark.parametrize("version", ["v2", "1.2.3.4", "latest", "1.x"])
def test_invalid_version(registry: ModelRegistry, mlp_path: Path, version: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"version '{version}' is not a semantic version"):
        registry.register("m", mlp_path, version=version)
    assert registry.model_names() == []


@pytest.mark.parametrize("again", ["1.2.0", "1.2"])
def test_duplicate_version(registry: ModelRegistry, mlp_path: Path, other_mlp_path: Path, again: str) -> None:
    registry.register("m", mlp_path, version="1.2.0")
    with pytest.raises(AlreadyExistsError, match=r"model 'm' already has version 1\.2\.0"):
        registry.register("m", other_mlp_path, version=again)
    assert len(artifacts(registry)) == 1, "the rejected file leaves no orphan artifact"


def test_default_version_resolution(registry: ModelRegistry, mlp_path: Path) -> None:
    for version in ("1.0.0", "1.1.0", "2.0.0", "2.1.0"):
        registry.register("m", mlp_path, version=version)
    assert registry.resolve("m").version == "2.1.0", "no production: highest non-archived"
    registry.promote("m", "2.1.0", Stage.ARCHIVED)
    assert registry.resolve("m").version == "2.0.0", "archived versions are skipped"
    registry.promote("m", "1.0.0", Stage.PRODUCTION)
    registry.promote("m", "1.1.0", Stage.PRODUCTION)
    assert registry.resolve("m").version == "1.1.0", "highest production"
    registry.promote("m", "1.1.0", Stage.STAGING)
    assert registry.resolve("m").version == "1.0.0"
    assert registry.resolve("m", "2.1.0").stage is Stage.ARCHIVED, "an explicit version is always served"


def test_semver_order_not_registration_order(registry: ModelRegistry, mlp_path: Path) -> None:
    registry.register("m", mlp_path, version="1.10.0")
    registry.register("m", mlp_path, version="1.9.0")
    assert registry.resolve("m").version == "1.10.0"


def test_only_archived_versions(registry: ModelRegistry, mlp_path: Path) -> None:
    registry.register("m", mlp_path, stage=Stage.ARCHIVED)
    with pytest.raises(NotFoundError, match="model 'm' has only archived versions"):
        registry.resolve("m")


def test_unknown_model_and_version(registry: ModelRegistry, mlp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="unknown model 'ghost'"):
        registry.resolve("ghost")
    registry.register("m", mlp_path)
    with pytest.raises(NotFoundError, match=r"model 'm' has no version 9\.0\.0"):
        registry.resolve("m", "9")
    with pytest.raises(NotFoundError):
        registry.promote("m", "9.0.0", Stage.PRODUCTION)
    with pytest.raises(NotFoundError):
        registry.remove("m", "9.0.0")
    with pytest.raises(NotFoundError):
        registry.remove("ghost")
    with pytest.raises(InvalidArgumentError):
        registry.resolve("m", "not-a-version")
    with pytest.raises(
        InvalidArgumentError
    ):  # a digit to str.isdigit, not to int() (found by tests/integration/test_fuzz.py)
        registry.resolve("m", "\u00b2")


@pytest.mark.parametrize("name", ["", "-lead", ".hidden", "a b", "a/b", "../etc", "x" * 129, "é", "name:1.0"])
def test_invalid_model_names(registry: ModelRegistry, mlp_path: Path, name: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"model name .* is invalid"):
        registry.register(name, mlp_path)
    assert registry.model_names() == []


@pytest.mark.parametrize("name", ["a", "7", "ocr-cls", "A1_b.c-d", "x" * 128])
def test_valid_model_names(name: str) -> None:
    assert validate_model_name(name) == name


def test_failed_import_records_nothing(registry: ModelRegistry, tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"garbage")
    with pytest.raises(ModelImportError, match=rf"^{corrupt}: "):
        registry.register("m", corrupt)
    with pytest.raises(ModelImportError, match="no such file"):
        registry.register("m", tmp_path / "absent.onnx")
    assert registry.model_names() == []
    assert artifacts(registry) == []


def test_registry_reopens_from_disk(registry: ModelRegistry, mlp_path: Path) -> None:
    record = registry.register("m", mlp_path, tags={"k": "v"})
    reopened = ModelRegistry(registry.home)
    assert reopened.resolve("m") == record
    assert reopened.artifact_path(record).exists()
