"""A Triton ensemble config translated into a pipeline spec and registered over the repository's models."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.ir.pipeline_spec import PIPELINE_FORMAT, ModelRef
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import read_pipeline
from mcp2026ai.registry.triton_ensemble import ensemble_spec
from mcp2026ai.registry.triton_import import import_repository
from mcp2026ai.registry.triton_repository import read_model
from support.pipelines import ENSEMBLE_CONFIG, write_ensemble_repository


def test_the_config_maps_to_a_spec(tmp_path: Path) -> None:
    repository = write_ensemble_repository(tmp_path / "repo")
    model = read_model(repository / "calc_ensemble")
    spec = ensemble_spec(model.config, model.config_path)
    assert [(t.name, t.datatype, t.shape) for t in spec.inputs] == [("IN", "FP32", [-1, 4])]
    assert [t.name for t in spec.outputs] == ["OUT", "MID"]
    assert [(s.name, s.model, s.inputs, s.outputs) for s in spec.steps] == [
        ("double", ModelRef(name="double"), {"x": "IN"}, {"y": "MID"}),
        ("shift", ModelRef(name="shift"), {"x": "MID"}, {"y": "OUT"}),
    ]
    assert spec.contract is not None and spec.contract["batching"]["max_batch_size"] == 8


def test_import_registers_the_ensemble_as_a_pipeline(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    imported = import_repository(registry, write_ensemble_repository(tmp_path / "repo"), tmp_path / "work")
    assert sorted(imported.records) == ["calc_ensemble", "double", "shift"]
    record = imported.records["calc_ensemble"][0]
    assert (record.format, record.number) == (PIPELINE_FORMAT, 1)
    assert [step.name for step in read_pipeline(registry, record).steps] == ["double", "shift"]
    again = import_repository(registry, tmp_path / "repo", tmp_path / "work")  # the same repository: reused
    assert again.records["calc_ensemble"][0].digest == record.digest
    assert len(registry.versions("calc_ensemble")) == 1


def test_a_step_naming_a_missing_model_refuses_the_import(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    repository = write_ensemble_repository(tmp_path / "repo", ENSEMBLE_CONFIG.replace('"shift"', '"nowhere"'))
    with pytest.raises(InvalidArgumentError, match=r"step 'nowhere': model_name 'nowhere' is not a model of this"):
        import_repository(registry, repository, tmp_path / "work")
    assert registry.model_names() == []


def test_a_cycle_in_the_ensemble_is_refused(tmp_path: Path) -> None:
    config = ENSEMBLE_CONFIG.replace('key: "x" value: "IN"', 'key: "x" value: "OUT"')
    registry = ModelRegistry(tmp_path / "home")
    with pytest.raises(InvalidArgumentError, match="form a cycle"):
        import_repository(registry, write_ensemble_repository(tmp_path / "repo", config), tmp_path / "work")
    assert registry.model_names() == []


def test_mismatched_names_leave_the_others_served(tmp_path: Path) -> None:
    config = ENSEMBLE_CONFIG.replace('key: "x" value: "MID"', 'key: "input" value: "MID"')
    registry = ModelRegistry(tmp_path / "home")
    repository = write_ensemble_repository(tmp_path / "repo", config)
    imported = import_repository(registry, repository, tmp_path / "work", all_or_nothing=False)
    assert sorted(imported.records) == ["double", "shift"]
    assert [failure.name for failure in imported.failures] == ["calc_ensemble"]
    assert "step 'shift': input 'input' is not one of the model's inputs ['x']" in imported.failures[0].reason
