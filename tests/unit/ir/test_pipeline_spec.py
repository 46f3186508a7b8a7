"""A pipeline spec's shape and graph: each refusal names the step, the tensor and the values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp2026ai.ir.pipeline_spec import PipelineSpecError, is_pipeline_spec, parse_spec, step_order

IO = {
    "inputs": [{"name": "a", "datatype": "FP32", "shape": [-1]}],
    "outputs": [{"name": "d", "datatype": "FP32", "shape": [-1]}],
}


def spec(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"kind": "pipeline", **IO, "steps": list(steps), **extra}


def python(name: str, inputs: dict[str, str], outputs: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "python": "s.py", "class": "S", "inputs": inputs, "outputs": outputs}


def test_branch_and_join_run_in_waves() -> None:
    parsed = parse_spec(
        spec(
            python("split", {"x": "a"}, {"y": "b", "z": "c"}),
            python("left", {"x": "b"}, {"y": "b2"}),
            python("right", {"x": "c"}, {"y": "c2"}),
            python("join", {"x": "b2", "w": "c2"}, {"y": "d"}),
        ),
        "p.yaml",
    )
    waves = [[step.name for step in wave] for wave in step_order(parsed, "p.yaml")]
    assert waves == [["split"], ["left", "right"], ["join"]]


def test_a_cycle_is_refused_naming_its_steps() -> None:
    with pytest.raises(PipelineSpecError, match=r"p.yaml: steps 'one', 'two' form a cycle"):
        parse_spec(
            spec(
                python("one", {"x": "a", "w": "c"}, {"y": "b"}),
                python("two", {"x": "b"}, {"y": "c", "z": "d"}),
            ),
            "p.yaml",
        )


def test_a_tensor_read_but_never_produced_is_refused() -> None:
    with pytest.raises(PipelineSpecError, match=r"step 'one': input 'x' reads tensor 'nope', which no step produces"):
        parse_spec(spec(python("one", {"x": "nope"}, {"y": "d"})), "p.yaml")


def test_a_tensor_produced_twice_is_refused() -> None:
    with pytest.raises(PipelineSpecError, match=r"step 'two': tensor 'd' is produced twice \(also by step 'one'\)"):
        parse_spec(spec(python("one", {"x": "a"}, {"y": "d"}), python("two", {"x": "a"}, {"y": "d"})), "p.yaml")


def test_an_output_nobody_produces_is_refused() -> None:
    with pytest.raises(PipelineSpecError, match=r"outputs: tensor 'd' is produced by no step"):
        parse_spec(spec(python("one", {"x": "a"}, {"y": "e"})), "p.yaml")


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"name": "s", "inputs": {}, "outputs": {"y": "d"}}, "give exactly one of `model` and `python`"),
        ({"name": "s", "python": "s.py", "inputs": {}, "outputs": {"y": "d"}}, "needs `class`"),
        ({"name": "s", "model": "m.onnx", "class": "C", "inputs": {}, "outputs": {"y": "d"}}, "Python steps only"),
        ({"name": "s", "model": "m.onnx", "inputs": {}, "outputs": {"y": "d"}, "extra": 1}, "extra"),
    ],
)
def test_a_malformed_step_is_refused(step: dict[str, Any], message: str) -> None:
    with pytest.raises(PipelineSpecError, match=message):
        parse_spec(spec(step), "p.yaml")


def test_an_unknown_datatype_is_refused() -> None:
    document = spec(python("one", {"x": "a"}, {"y": "d"}))
    document["inputs"] = [{"name": "a", "datatype": "FLOAT", "shape": [1]}]
    with pytest.raises(PipelineSpecError, match="'FLOAT' is not a KServe v2 datatype"):
        parse_spec(document, "p.yaml")


def test_a_spec_file_is_recognised_by_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(spec(python("one", {"x": "a"}, {"y": "d"}))))
    other = tmp_path / "contract.yaml"
    other.write_text("sla_class: best-effort\n")
    assert is_pipeline_spec(path)
    assert not is_pipeline_spec(other)
    assert not is_pipeline_spec(tmp_path / "model.onnx")
