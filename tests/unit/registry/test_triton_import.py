"""Registering a Triton repository: all or nothing, versions with Triton's numbers, configs kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mcp2026ai.errors import AlreadyExistsError, ModelImportError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.triton_import import import_repository, stored_config
from mcp2026ai.registry.triton_repository import TritonConfigError
from mcp2026ai.runtime.triton_python import check_model_source
from tests.support.triton_python_repository import BATCHED_CONFIG, BATCHED_SOURCE, write_python_model
from tests.support.triton_repository import BROKEN_CONFIG, DENSENET_CONFIG, add_sub, add_sub_config, write_model


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    source = add_sub(tmp_path / "sources" / "simple.onnx")
    config = add_sub_config("simple") + "version_policy: { all: {} }\n"
    write_model(tmp_path / "repo", "simple", config, {1: source, 3: source})
    return tmp_path / "repo"


def test_versions_keep_tritons_numbers_and_the_config(registry: ModelRegistry, repository: Path) -> None:
    imported = import_repository(registry, repository, registry.home / "tmp")
    records = imported.records["simple"]
    assert [(r.version, r.number) for r in records] == [("1.0.0", 1), ("3.0.0", 3)]
    assert registry.resolve("simple", "3").version == "3.0.0"  # what Triton's clients ask for
    contract = records[0].contract
    assert contract is not None and contract.batching.max_batch_size == 8
    stored = stored_config(registry, records[1])
    assert stored is not None and stored.name == "simple" and stored.version_policy.HasField("all")


def test_importing_again_reuses_and_a_changed_model_is_refused(registry: ModelRegistry, repository: Path) -> None:
    first = import_repository(registry, repository, registry.home / "tmp").records["simple"]
    again = import_repository(registry, repository, registry.home / "tmp").records["simple"]
    assert [r.digest for r in again] == [r.digest for r in first] and len(registry.versions("simple")) == 2
    config = repository / "simple" / "config.pbtxt"
    config.write_text(config.read_text().replace("max_batch_size: 8", "max_batch_size: 4"))
    with pytest.raises(AlreadyExistsError, match=r"simple/1: model 'simple' already has version 1\.0\.0 with another"):
        import_repository(registry, repository, registry.home / "tmp")
    assert len(registry.versions("simple")) == 2


def test_a_taken_integer_alias_is_refused_first(registry: ModelRegistry, repository: Path, mlp_path: Path) -> None:
    registry.register("simple", mlp_path, version="0.5.0")  # integer alias 1
    with pytest.raises(
        AlreadyExistsError, match=r"simple/1: model 'simple' already has integer alias 1 \(version 0\.5\.0\)"
    ):
        import_repository(registry, repository, registry.home / "tmp")
    assert [r.version for r in registry.versions("simple")] == ["0.5.0"]


def test_one_refused_model_registers_nothing(registry: ModelRegistry, repository: Path) -> None:
    write_model(repository, "broken_dims", BROKEN_CONFIG, {1: repository / "simple" / "1" / "model.onnx"})
    with pytest.raises(TritonConfigError, match=r"broken_dims/config\.pbtxt: input 'INPUT0': dims: -2 is impossible"):
        import_repository(registry, repository, registry.home / "tmp")
    assert registry.model_names() == []
    lenient = import_repository(registry, repository, registry.home / "tmp", all_or_nothing=False)
    assert list(lenient.records) == ["simple"] and [f.name for f in lenient.failures] == ["broken_dims"]


def test_dims_that_do_not_match_the_onnx_are_refused(registry: ModelRegistry, repository: Path) -> None:
    config = repository / "simple" / "config.pbtxt"
    config.write_text(config.read_text().replace("dims: [ 16 ]", "dims: [ 8 ]"))
    with pytest.raises(TritonConfigError, match=r"input 'INPUT0': dims: \[8\] do not match the model's \[16\]"):
        import_repository(registry, repository, registry.home / "tmp")
    assert registry.model_names() == []


def test_reshape_is_wrapped_into_the_stored_onnx(registry: ModelRegistry, tmp_path: Path) -> None:
    """densenet_onnx: the model takes [1,3,224,224] and gives [1,1000,1,1]; clients use [3,224,224] -> [1000]."""
    from mcp2026ai.bundled import bundled_model_path

    model = write_model(
        tmp_path / "repo", "densenet_onnx", DENSENET_CONFIG, {1: bundled_model_path("onnx-densenet121")}
    )
    (model / "densenet_labels.txt").write_text("\n".join(f"class {i}" for i in range(1000)))
    record = import_repository(registry, tmp_path / "repo", registry.home / "tmp").records["densenet_onnx"][0]
    assert [(t.name, t.shape) for t in record.signature.inputs] == [("data_0", [3, 224, 224])]
    assert [(t.name, t.shape) for t in record.signature.outputs] == [("fc6_1", [1000])]
    assert record.preprocessing is not None and record.preprocessing.labels[999] == "class 999"
    session = ort.InferenceSession(str(registry.artifact_path(record)), providers=["CPUExecutionProvider"])
    image = np.random.default_rng(0).random((3, 224, 224), dtype=np.float32)
    wrapped = session.run(None, {"data_0": image})[0]
    original = ort.InferenceSession(str(bundled_model_path("onnx-densenet121")), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(wrapped, original.run(None, {"data_0": image[None]})[0].reshape(1000), rtol=1e-6)


def test_a_reshape_the_model_cannot_take_is_refused(registry: ModelRegistry, tmp_path: Path) -> None:
    from mcp2026ai.bundled import bundled_model_path

    config = DENSENET_CONFIG.replace("[ 1, 3, 224, 224 ]", "[ 1, 3, 112, 448 ]")
    model = write_model(tmp_path / "repo", "densenet_onnx", config, {1: bundled_model_path("onnx-densenet121")})
    (model / "densenet_labels.txt").write_text("tench\n")
    with pytest.raises(TritonConfigError, match=r"input 'data_0': reshape.shape: \[1, 3, 112, 448\] does not match"):
        import_repository(registry, tmp_path / "repo", registry.home / "tmp")


def test_python_models_register_their_source_and_config_signature(registry: ModelRegistry, tmp_path: Path) -> None:
    """A backend "python" model: its model.py stored as it is, its signature the config's tensors (batched:
    a leading -1), checked by the caller's source check before anything is registered."""
    root = tmp_path / "python"
    write_python_model(root, "doubler", BATCHED_CONFIG, BATCHED_SOURCE)

    def check(source: bytes, label: str) -> None:
        check_model_source(source, label=label)

    (record,) = import_repository(registry, root, registry.home / "tmp", python_check=check).records["doubler"]
    assert record.format == "triton_python" and registry.artifact_bytes(record) == BATCHED_SOURCE.encode()
    assert [(s.name, s.datatype, s.shape) for s in record.signature.inputs] == [("INPUT0", "FP32", [-1, 4])]
    assert record.contract is not None and record.contract.batching.max_batch_size == 8
    write_python_model(root, "broken", BATCHED_CONFIG.replace("doubler", "broken"), "import nowhere_to_be_found\n")
    with pytest.raises(ModelImportError, match=r"broken/1/model\.py: imports modules not installed here"):
        import_repository(registry, root, registry.home / "tmp", python_check=check)
    assert "broken" not in registry.model_names()


def test_a_python_model_must_declare_its_tensors(registry: ModelRegistry, tmp_path: Path) -> None:
    write_python_model(
        tmp_path / "python", "bare", 'name: "bare"\nbackend: "python"\n', "class TritonPythonModel: ...\n"
    )
    with pytest.raises(TritonConfigError, match=r"bare/config\.pbtxt: a python model's config must declare its input"):
        import_repository(registry, tmp_path / "python", registry.home / "tmp")
