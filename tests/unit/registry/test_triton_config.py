"""A config.pbtxt as the registry keeps it: dims checked (alone and against the model), a contract."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2 as mc

from mcp2026ai.contract import SLAClass
from mcp2026ai.ir.signature import Signature, TensorSpec
from mcp2026ai.registry.triton_config import (
    check_config,
    check_signature,
    contract_from_config,
    preprocessing_from_config,
    unapplied_notes,
)
from mcp2026ai.registry.triton_repository import TritonConfigError
from tests.support.triton_repository import DENSENET_CONFIG, add_sub_config, sequence_config

SOURCE = Path("repo/simple/config.pbtxt")
SIMPLE = Signature(
    inputs=[TensorSpec(name=n, datatype="INT32", shape=[-1, 16]) for n in ("INPUT0", "INPUT1")],
    outputs=[TensorSpec(name=n, datatype="INT32", shape=[-1, 16]) for n in ("OUTPUT0", "OUTPUT1")],
)


def parse(text: str) -> mc.ModelConfig:
    return text_format.Parse(text, mc.ModelConfig())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (add_sub_config("simple").replace("[ 16 ]", "[ -3 ]", 1), "input 'INPUT0': dims: -3 is impossible"),
        (add_sub_config("simple").replace("max_batch_size: 8", "max_batch_size: -1"), "max_batch_size: -1 must be"),
        (add_sub_config("simple").replace('"INPUT1"', '"INPUT0"'), "input 'INPUT0': name must be given and unique"),
        (
            DENSENET_CONFIG.replace("[ 1, 3, 224, 224 ]", "[ 1, 3, 224, 225 ]"),
            "input 'data_0': reshape.shape: [1, 3, 224, 225] holds 151200 elements, dims [3, 224, 224] hold 150528",
        ),
    ],
)
def test_impossible_configs(text: str, message: str) -> None:
    with pytest.raises(TritonConfigError, match=r"repo/simple/config\.pbtxt: ") as info:
        check_config(parse(text), SOURCE)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("[ 16 ]", "[ 17 ]", "input 'INPUT0': dims: [17] do not match the model's [16]"),
        ("TYPE_INT32", "TYPE_FP32", "input 'INPUT0': data_type: TYPE_FP32 does not match the model's INT32"),
        ('"OUTPUT1"', '"OUTPUT9"', "output 'OUTPUT9': the model has no such output"),
        (
            '  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }\n',
            "",
            "the model's input 'INPUT1' is not configured",
        ),
    ],
)
def test_config_against_the_model(old: str, new: str, message: str) -> None:
    text = add_sub_config("simple").replace(old, new, 1)
    if not new:
        text = text.replace(",\n]", "\n]", 1)
    with pytest.raises(TritonConfigError) as info:
        check_signature(parse(text), SIMPLE, SOURCE)
    assert message in str(info.value) and str(SOURCE) in str(info.value)


def test_batching_needs_a_dynamic_first_dimension() -> None:
    fixed = Signature(
        inputs=[TensorSpec(name=n, datatype="INT32", shape=[1, 16]) for n in ("INPUT0", "INPUT1")],
        outputs=SIMPLE.outputs,
    )
    with pytest.raises(TritonConfigError, match=r"max_batch_size: 8 needs the model's first dimension to be dynamic"):
        check_signature(parse(add_sub_config("simple")), fixed, SOURCE)
    unbatched = add_sub_config("simple").replace("max_batch_size: 8", "max_batch_size: 0")
    check_signature(parse(unbatched.replace("[ 16 ]", "[ -1, 16 ]")), SIMPLE, SOURCE)  # the batch dim spelled out
    with pytest.raises(TritonConfigError, match=r"dims: \[16\] do not match the model's \[-1, 16\]"):
        check_signature(parse(unbatched), SIMPLE, SOURCE)


def test_contract_from_batching_and_priorities() -> None:
    text = add_sub_config("simple") + (
        "dynamic_batching { preferred_batch_size: [2, 4] max_queue_delay_microseconds: 1500 "
        "priority_levels: 3 default_priority_level: 2 }"
    )
    contract = contract_from_config(parse(text), SOURCE)
    assert contract.batching.max_batch_size == 8 and contract.batching.preferred_batch_sizes == [2, 4]
    assert contract.batching.max_queue_delay_ms == 1.5
    assert contract.sla_class == SLAClass.THROUGHPUT_GUARANTEED
    assert contract.sequence is None
    plain = contract_from_config(parse(add_sub_config("simple")), SOURCE)
    assert plain.batching.max_queue_delay_ms == 0 and plain.sla_class == SLAClass.BEST_EFFORT
    with pytest.raises(Exception, match=r"preferred_batch_sizes \[16\] must lie in 1..max_batch_size \(8\)"):
        contract_from_config(parse(add_sub_config("simple") + "dynamic_batching { preferred_batch_size: 16 }"), SOURCE)


def test_contract_from_sequence_batching() -> None:
    sequence = contract_from_config(parse(sequence_config("acc", dynamic=True, string_corrid=True)), SOURCE).sequence
    assert sequence is not None
    assert sequence.controls.model_dump() == {"start": "START", "end": "END", "ready": None, "corrid": "CORRID"}
    assert [(s.input, s.output) for s in sequence.state] == [("ACC_IN", "ACC_OUT")]
    assert sequence.idle_timeout_s == 10 and sequence.strategy == "oldest"
    plain = contract_from_config(parse(sequence_config("simple_sequence")), SOURCE).sequence
    assert plain is not None and plain.idle_timeout_s == 1 and plain.strategy == "direct"  # Triton's defaults


def test_preprocessing_from_format_and_labels(tmp_path: Path) -> None:
    (tmp_path / "densenet_labels.txt").write_text("tench\ngoldfish\n")
    prep = preprocessing_from_config(parse(DENSENET_CONFIG), tmp_path)
    assert prep is not None and (prep.layout, prep.height, prep.width) == ("NCHW", 224, 224)
    assert prep.labels == ["tench", "goldfish"]
    (tmp_path / "densenet_labels.txt").unlink()
    with pytest.raises(
        TritonConfigError, match=r"output 'fc6_1': label_filename: 'densenet_labels\.txt' cannot be read"
    ):
        preprocessing_from_config(parse(DENSENET_CONFIG), tmp_path)
    assert preprocessing_from_config(parse(add_sub_config("simple")), tmp_path) is None


def test_fields_that_change_nothing_are_named() -> None:
    text = sequence_config("dyna", dynamic=True) + "model_warmup [{ name: 'w' batch_size: 1 }]\n"
    notes = unapplied_notes(parse(text))
    assert notes == [
        "parameters execute_delay_ms: kept with the version (and exported); nothing here reads them",
        "model_warmup: not applied here (kept in the stored config)",
    ]
    assert unapplied_notes(parse(add_sub_config("simple"))) == []
