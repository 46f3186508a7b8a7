"""``mcp model export --format triton``: config.pbtxt files Triton's own parser accepts, version
directories numbered by the documented rule, and an exported repository imports back unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.contract import parse_contract
from mcp2026ai.errors import AlreadyExistsError
from mcp2026ai.protocol.triton_export import export_repository
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.registry.triton_import import import_repository
from mcp2026ai.registry.triton_repository import read_config, read_model
from tests.support.triton_python_repository import BATCHED_CONFIG, BATCHED_SOURCE, write_python_model
from tests.support.triton_repository import DENSENET_CONFIG, sequence_config, sequence_model, write_model

CONTRACT = {"batching": {"max_batch_size": 16, "max_queue_delay_ms": 3, "preferred_batch_sizes": [4, 8]}}


def test_registered_model_exports_a_parsable_repository(
    registry: ModelRegistry, mlp_path: Path, tmp_path: Path
) -> None:
    registry.register("mlp", mlp_path, contract=parse_contract(CONTRACT), version="1.0.0")
    registry.register("mlp", mlp_path, contract=parse_contract(CONTRACT), version="2.1.0")
    [directory] = export_repository(registry, ["mlp"], tmp_path / "out")
    assert sorted(p.name for p in directory.iterdir()) == ["10000099", "20010099", "config.pbtxt"]
    config = read_config(directory / "config.pbtxt")  # Triton's model_config.proto, text format
    assert config.name == "mlp" and config.platform == "onnxruntime_onnx" and config.max_batch_size == 16
    assert [(t.name, list(t.dims)) for t in config.input] == [("x", [4])]
    assert config.dynamic_batching.max_queue_delay_microseconds == 3000
    assert list(config.dynamic_batching.preferred_batch_size) == [4, 8]
    assert config.version_policy.latest.num_versions == 1
    assert (directory / "20010099" / "model.onnx").read_bytes() == mlp_path.read_bytes()
    assert list(read_model(directory).versions) == [20010099]  # Triton would serve 2.1.0, as the registry does


def test_default_below_the_highest_is_pinned(registry: ModelRegistry, mlp_path: Path, tmp_path: Path) -> None:
    registry.register("mlp", mlp_path, version="1.0.0", stage=Stage.PRODUCTION)
    registry.register("mlp", mlp_path, version="1.1.0")
    registry.register("mlp", mlp_path, version="0.9.0", stage=Stage.ARCHIVED)
    [directory] = export_repository(registry, ["mlp"], tmp_path / "out")
    config = read_config(directory / "config.pbtxt")
    assert list(config.version_policy.specific.versions) == [10000099]
    assert sorted(p.name for p in directory.iterdir() if p.is_dir()) == ["10000099", "10010099"]


def test_imported_models_round_trip(registry: ModelRegistry, tmp_path: Path) -> None:
    """Sequence batching and densenet's reshape + labels: exported, parsed, imported into a new registry."""
    from mcp2026ai.bundled import bundled_model_path

    repo = tmp_path / "repo"
    sequence = sequence_model(tmp_path / "sources" / "sequence.onnx")
    write_model(repo, "simple_sequence", sequence_config("simple_sequence"), {1: sequence, 2: sequence})
    densenet = write_model(repo, "densenet_onnx", DENSENET_CONFIG, {1: bundled_model_path("onnx-densenet121")})
    (densenet / "densenet_labels.txt").write_text("\n".join(f"class {i}" for i in range(1000)))
    import_repository(registry, repo, registry.home / "tmp")
    export_repository(registry, ["densenet_onnx", "simple_sequence"], tmp_path / "out")
    exported = read_config(tmp_path / "out" / "densenet_onnx" / "config.pbtxt")
    assert not exported.input[0].HasField("reshape") and list(exported.input[0].dims) == [3, 224, 224]
    assert exported.output[0].label_filename == "densenet_labels.txt"
    labels = (tmp_path / "out" / "densenet_onnx" / "densenet_labels.txt").read_text().splitlines()
    assert labels[:2] == ["class 0", "class 1"] and len(labels) == 1000
    sequence_config_out = read_config(tmp_path / "out" / "simple_sequence" / "config.pbtxt")
    assert [c.name for c in sequence_config_out.sequence_batching.control_input] == ["START", "READY"]
    again = ModelRegistry(tmp_path / "again")
    records = import_repository(again, tmp_path / "out", again.home / "tmp").records
    assert [r.version for r in records["simple_sequence"]] == ["2.0.0"]  # latest 1, Triton's number 20000099
    assert records["densenet_onnx"][0].signature == registry.resolve("densenet_onnx").signature


def test_nothing_is_written_over_an_existing_model(registry: ModelRegistry, mlp_path: Path, tmp_path: Path) -> None:
    registry.register("mlp", mlp_path)
    registry.register("other", mlp_path)
    (tmp_path / "out" / "other").mkdir(parents=True)
    with pytest.raises(AlreadyExistsError, match=r"out/other: already exists"):
        export_repository(registry, ["mlp", "other"], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["other"]


def test_a_python_model_exports_as_a_python_model(registry: ModelRegistry, tmp_path: Path) -> None:
    """Its model.py as it was imported, its config keeping backend "python"; the export imports back."""
    root = write_python_model(tmp_path / "repo", "doubler", BATCHED_CONFIG, BATCHED_SOURCE).parent
    import_repository(registry, root, registry.home / "tmp")
    [directory] = export_repository(registry, ["doubler"], tmp_path / "out")
    assert (directory / "10000099" / "model.py").read_text() == BATCHED_SOURCE
    config = read_config(directory / "config.pbtxt")
    assert config.backend == "python" and not config.platform and config.max_batch_size == 8
    assert list(read_model(directory).versions) == [10000099]
