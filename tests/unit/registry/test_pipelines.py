"""Registering a pipeline: its steps with it, or nothing at all with one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from onnx import TensorProto

from mcp2026ai.errors import IntegrityError, InvalidArgumentError, ModelImportError
from mcp2026ai.ir.pipeline_spec import PIPELINE_FORMAT, ModelRef
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import pipeline_examples, python_step_source, read_pipeline, register_pipeline
from mcp2026ai.runtime.python_code import check_python_source
from support.pipelines import SPEC, STEPS, scalar_model, write_pipeline


def register(registry: ModelRegistry, spec: Path) -> None:
    register_pipeline(registry, spec, check_python_source)


def test_the_pipeline_and_its_steps_are_registered(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    record = register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    assert (record.ref, record.format) == ("calc:1.0.0", PIPELINE_FORMAT)
    assert registry.model_names() == ["calc", "calc.double", "calc.shift"]
    stored = read_pipeline(registry, record)
    assert stored.step("double").model == ModelRef(name="calc.double", version="1.0.0")
    digest = stored.step("parse").python
    assert digest is not None and python_step_source(registry, digest) == STEPS.encode()
    assert [tensor.name for tensor in record.signature.outputs] == ["total", "doubled"]
    again = register_pipeline(registry, tmp_path / "p" / "calc.yaml", check_python_source, name="calc")
    assert again.version == "1.1.0" and registry.versions("calc.double")[0].version == "1.0.0"  # steps reused


def refused(tmp_path: Path, spec: str = SPEC, steps: str = STEPS, match: str = "") -> None:
    registry = ModelRegistry(tmp_path / "home")
    path = write_pipeline(tmp_path / "p", spec, steps)
    with pytest.raises(InvalidArgumentError, match=match):
        register(registry, path)
    assert registry.model_names() == []


def test_a_cycle_registers_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("inputs: {x: x}\n    outputs: {y: doubled}", "inputs: {x: total}\n    outputs: {y: doubled}")
    refused(tmp_path, spec, match="form a cycle")


def test_a_step_naming_a_missing_model_registers_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("model: models/double.onnx", "model: {name: nowhere, version: '2'}")
    refused(tmp_path, spec, match=r"step 'double': model 'nowhere version 2' is not registered")


def test_a_missing_model_file_registers_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("models/double.onnx", "models/gone.onnx")
    refused(tmp_path, spec, match=r"step 'double': model: 'models/gone.onnx': no such file beside the spec")


def test_a_model_file_outside_the_folder_is_refused(tmp_path: Path) -> None:
    spec = SPEC.replace("models/double.onnx", "../../etc/passwd")
    refused(tmp_path, spec, match=r"step 'double': model")


def test_mismatched_tensor_names_register_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("inputs: {x: x}\n    outputs: {y: doubled}", "inputs: {input: x}\n    outputs: {y: doubled}")
    refused(tmp_path, spec, match=r"step 'double': input 'input' is not one of the model's inputs \['x'\]")


def test_mismatched_dtypes_register_nothing(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    path = write_pipeline(tmp_path / "p")
    scalar_model(tmp_path / "p" / "models" / "shift.onnx", "Add", 1.0, TensorProto.DOUBLE)
    spec = SPEC.replace(
        "outputs: {y: shifted}",
        "outputs: {y: shifted}\n  - name: again\n    model: models/double.onnx\n"
        "    inputs: {x: shifted}\n    outputs: {y: other}",
    )
    spec = spec.replace(
        "{name: doubled, datatype: FP32, shape: [-1, 4]}]",
        "{name: doubled, datatype: FP32, shape: [-1, 4]}, {name: other, datatype: FP32, shape: [-1, 4]}]",
    )
    path.write_text(spec)
    with pytest.raises(
        InvalidArgumentError,
        match=r"step 'again': input 'x' \(tensor 'shifted'\) takes FP32, but step 'shift' output 'y' gives FP64",
    ):
        register(registry, path)
    assert registry.model_names() == []


def test_a_python_step_with_a_syntax_error_registers_nothing(tmp_path: Path) -> None:
    refused(tmp_path, steps=STEPS.replace("class Join:", "class Join(:"), match=r"calc_steps.py:\d+: syntax error")


def test_a_python_step_with_a_missing_import_registers_nothing(tmp_path: Path) -> None:
    steps = "import not_installed_here_xyz\n" + STEPS
    refused(tmp_path, steps=steps, match=r"not_installed_here_xyz \(line 1\)")


def test_a_declared_requirement_missing_registers_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("requires: [numpy]", "requires: [numpy, not_installed_here_xyz]")
    refused(tmp_path, spec, match=r"step 'parse': requires modules not installed here: not_installed_here_xyz")


def test_a_bad_contract_registers_nothing(tmp_path: Path) -> None:
    spec = SPEC.replace("sla_class: throughput-guaranteed", "sla_class: urgent")
    refused(tmp_path, spec, match=r"calc.yaml: contract")


def test_a_missing_class_registers_nothing(tmp_path: Path) -> None:
    refused(tmp_path, SPEC.replace("class: Join", "class: Joiner"), match="defines no class 'Joiner'")


def test_code_errors_are_import_errors() -> None:
    with pytest.raises(ModelImportError):
        check_python_source(b"def f(:\n", "x.py")


def test_a_signed_pipeline_loads_under_require_signed_and_covers_its_steps(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from mcp2026ai.errors import SignatureError
    from mcp2026ai.registry.signing import sign_version
    from mcp2026ai.security.keys import SigningKey
    from mcp2026ai.security.trust import TrustedKeys
    from mcp2026ai.serving.pipelines import pipeline_backend

    registry = ModelRegistry(tmp_path / "home")
    record = register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    key = SigningKey("ops", Ed25519PrivateKey.generate())
    with pytest.raises(SignatureError):
        pipeline_backend(registry, record, TrustedKeys([key.public]))  # not signed yet
    sign_version(registry, record, key)
    backend = pipeline_backend(registry, record, TrustedKeys([key.public]))
    assert backend.stored.step("parse").python == read_pipeline(registry, record).step("parse").python
    digest = backend.stored.step("parse").python
    assert digest is not None
    registry.store.path_for(digest, ".py").write_bytes(b"class Parse: pass\n")  # a step's code swapped on disk
    with pytest.raises(IntegrityError):
        pipeline_backend(registry, record, TrustedKeys([key.public]))


def test_removing_a_pipeline_leaves_its_steps(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    record = register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    registry.remove("calc")
    assert registry.model_names() == ["calc.double", "calc.shift"]
    assert not registry.store.exists(record.digest, ".pipeline.json")


def test_a_pipeline_is_not_exported_as_a_model_file(tmp_path: Path) -> None:
    from mcp2026ai.protocol.triton_export import export_repository

    registry = ModelRegistry(tmp_path / "home")
    register_pipeline(registry, write_pipeline(tmp_path / "p"), check_python_source)
    with pytest.raises(InvalidArgumentError, match="calc: a pipeline is not exported as a Triton ensemble yet"):
        export_repository(registry, ["calc"], tmp_path / "out")
    assert not (tmp_path / "out" / "calc").exists()
    with pytest.raises(InvalidArgumentError, match="is a pipeline: it has no model file"):
        registry.artifact_path(registry.resolve("calc"))


def test_the_specs_examples_are_stored_by_digest(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    path = write_pipeline(tmp_path / "p", SPEC + "examples: {text: example.txt}\n")
    (path.parent / "example.txt").write_bytes(b"1,2,3,4")
    record = register_pipeline(registry, path, check_python_source)
    stored = read_pipeline(registry, record)
    assert stored.examples is not None and stored.examples["text"] != "example.txt"  # a digest now
    assert pipeline_examples(registry, record) == {"text": b"1,2,3,4"}


@pytest.mark.parametrize(
    ("examples", "match"),
    [
        ("{picture: example.txt}", r"examples: picture: not one of the pipeline's inputs \['text'\]"),
        ("{text: gone.txt}", r"examples: text: 'gone.txt': no such file beside the spec"),
        ("{text: ../../etc/passwd}", r"examples: text"),
    ],
    ids=["unknown-input", "missing-file", "outside-the-folder"],
)
def test_a_bad_example_registers_nothing(tmp_path: Path, examples: str, match: str) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "example.txt").write_bytes(b"1,2,3,4")
    refused(tmp_path, SPEC + f"examples: {examples}\n", match=match)
